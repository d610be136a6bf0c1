import HTTPTypes
import Hummingbird
import LatchModel

/// The methods each route path answers, read from the router once its routes are added.
final class RouteMethods: Sendable {
    private let table = Locked<[(path: RouterPath, methods: Set<HTTPRequest.Method>)]>([])

    /// Records every route of `router` (call after the last route is added).
    func record(_ routes: [Router<some RequestContext>.RouteDescription]) {
        var grouped: [String: (RouterPath, Set<HTTPRequest.Method>)] = [:]
        for route in routes { grouped[route.path.description, default: (route.path, [])].1.insert(route.method) }
        table.withLock { $0 = grouped.values.map { (path: $0.0, methods: $0.1) } }
    }

    /// The methods `path` answers, nil for a path no route has.
    func methods(of path: String) -> Set<HTTPRequest.Method>? {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        return table.withLock { table in
            let matching = table.filter { route in
                route.path.count == segments.count && zip(route.path, segments).allSatisfy { element, segment in element ~= segment }
            }
            return matching.isEmpty ? nil : matching.reduce(into: Set()) { $0.formUnion($1.methods) }
        }
    }
}
