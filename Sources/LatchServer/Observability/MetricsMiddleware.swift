import HTTPTypes
import Hummingbird

/// Counts and times every request by route template (never the raw path: `/admin/v1/users/{id}` is one series),
/// method and status. Runs outside the error middleware, so refused requests count with their real status.
struct MetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let metrics: LatchMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = ContinuousClock.now
        let response = try await next(request, context)
        let elapsed = ContinuousClock.now - start
        let nanoseconds = elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000
        // Hummingbird names a request no route matched `NotFound` (route templates start with `/`).
        let route = context.endpointPath.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "unmatched"
        metrics.request(route: route, method: Self.method(request.method), status: Int(response.status.code), nanoseconds: nanoseconds)
        return response
    }

    /// The standard methods by name; anything else is `other` (a client cannot mint series).
    static func method(_ method: HTTPRequest.Method) -> String {
        switch method {
        case .get, .head, .post, .put, .patch, .delete, .options: method.rawValue
        default: "other"
        }
    }
}
