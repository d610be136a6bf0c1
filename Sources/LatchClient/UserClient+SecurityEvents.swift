import Foundation
import LatchModel

extension UserClient {
    /// The signed-in user's recent security events (`GET /v1/me/security-events`): sign-ins and refused sign-ins,
    /// registrations, sign-outs, authenticator changes, newest first — for a "recent activity" screen. Pass the
    /// previous page's `nextCursor` for older events; `limit` is 1–100 (default 50).
    public func securityEvents(limit: Int? = nil, cursor: String? = nil) async throws(UserClientError) -> MySecurityEvents {
        var query: [URLQueryItem] = []
        if let limit { query.append(URLQueryItem(name: "limit", value: String(limit))) }
        if let cursor { query.append(URLQueryItem(name: "cursor", value: cursor)) }
        return try Self.decode(MySecurityEvents.self, try await authorizedGET("v1/me/security-events", query: query))
    }
}
