import Foundation
import HTTPTypes
import Hummingbird

/// Behind trusted proxies: the client is the address the outermost trusted proxy appended to
/// `X-Forwarded-For` — the `hops`-th entry from the right — never the leftmost, which the client writes itself.
/// A header with fewer entries than `hops`, or an entry that is not an IP address, leaves the peer address.
/// Only turn this on (`rateLimit.trustForwardedFor`) when every request comes through those proxies.
struct ForwardedForMiddleware: RouterMiddleware {
    typealias Context = LatchRequestContext
    let hops: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        if let client = Self.client(request.headers[values: .xForwardedFor], hops: hops) { context.clientAddress = client }
        return try await next(request, context)
    }

    /// The client address in the `X-Forwarded-For` field lines `values` (combined in order, RFC 9110 §5.3).
    static func client(_ values: [String], hops: Int) -> String? {
        guard hops > 0, values.reduce(0, { $0 + $1.utf8.count }) <= 8 * 1024 else { return nil }
        let entries = values.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
        guard entries.count >= hops else { return nil }
        let entry = entries[entries.count - hops].trimmingCharacters(in: .whitespaces)
        return isIPAddress(entry) ? entry : nil
    }

    /// An IPv4 or IPv6 literal (what a proxy writes), not a name or junk.
    static func isIPAddress(_ text: String) -> Bool {
        guard (2...45).contains(text.utf8.count) else { return false }
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
