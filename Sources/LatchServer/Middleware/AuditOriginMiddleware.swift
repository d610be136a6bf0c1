import Hummingbird
import LatchCore
import Logging

/// Sets where the request came from — client address, `User-Agent`, request id — for the audit records its
/// engines write (``AuditOrigin/current``). Runs after `X-Forwarded-For` is read, so the address is the client's.
struct AuditOriginMiddleware: RouterMiddleware {
    typealias Context = LatchRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let origin = AuditOrigin(
            address: context.clientAddress, userAgent: request.headers[.userAgent].map(Self.printable),
            requestID: context.logger[metadataKey: "hb.request.id"]?.description)
        return try await AuditOrigin.$current.withValue(origin) { try await next(request, context) }
    }

    /// Control characters replaced: a user agent is shown back in the console and exports.
    static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(512).map { $0.properties.generalCategory == .control ? "?" : $0 }))
    }
}
