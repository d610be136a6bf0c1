import Hummingbird
import LatchCore
import Logging

/// Sets where the request came from — client address, `User-Agent`, request id — for the audit records its
/// engines write (``AuditOrigin/current``). Runs after `X-Forwarded-For` is read, so the address is the client's.
struct AuditOriginMiddleware: RouterMiddleware {
    typealias Context = LatchRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The address and request id are formatted, and the user agent cleaned, only when an audit record reads them.
        let origin = AuditOrigin(
            address: context.client, userAgent: request.headers[.userAgent], requestID: context.logger[metadataKey: "hb.request.id"])
        return try await AuditOrigin.$current.withValue(origin) { try await next(request, context) }
    }
}
