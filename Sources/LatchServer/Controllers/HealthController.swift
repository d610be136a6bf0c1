import Hummingbird
import LatchCore
import LatchModel

/// Liveness and readiness probes.
struct HealthController {
    let store: any ClientStore

    var endpoints: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.get("live") { _, _ in JSONResponse.make(bytes: Array(#"{"status":"ok"}"#.utf8)) }
        routes.get("ready") { _, _ -> Response in
            // A read through the store proves the database answers.
            _ = try await store.clients()
            return JSONResponse.make(bytes: Array(#"{"status":"ok"}"#.utf8))
        }
        return routes
    }
}
