import Foundation
import Hummingbird

/// Behind a trusted load balancer: the client is the first `X-Forwarded-For` address, not the balancer.
/// Only turn this on (`rateLimit.trustForwardedFor`) when every request comes through that balancer.
struct ForwardedForMiddleware: RouterMiddleware {
    typealias Context = LatchRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let header = request.headers[.init("X-Forwarded-For")!],
            let first = header.split(separator: ",").first?.trimmingCharacters(in: .whitespaces), !first.isEmpty, first.utf8.count <= 64
        {
            context.clientAddress = first
        }
        return try await next(request, context)
    }
}
