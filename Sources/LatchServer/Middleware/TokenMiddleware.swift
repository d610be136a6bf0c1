import Foundation
import HTTPTypes
import Hummingbird
import LatchCore
import LatchJOSE
import LatchModel

/// The scheme an access token is presented with.
enum TokenScheme: Sendable {
    /// RFC 6750.
    case bearer
    /// RFC 9449 §7.1: a DPoP-bound token, with a `DPoP` proof header.
    case dpop
}

extension Request {
    /// The token of an `Authorization: Bearer …` header (RFC 6750 §2.1), if present. Read over UTF-8: this runs
    /// on every signed-in request.
    var bearerToken: String? {
        guard let (scheme, token) = accessToken, scheme == .bearer else { return nil }
        return token
    }

    /// Every `DPoP` header value (a proof; more than one is refused).
    var dpopProofs: [String] { headers[values: HTTPField.Name.dpop] }

    /// The token of an `Authorization: Bearer …` or `Authorization: DPoP …` header, with its scheme.
    var accessToken: (TokenScheme, String)? {
        guard let value = headers[.authorization] else { return nil }
        let utf8 = value.utf8
        guard let space = utf8.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        let scheme: TokenScheme
        switch value[..<space].lowercased() {
        case "bearer": scheme = .bearer
        case "dpop": scheme = .dpop
        default: return nil
        }
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var start = utf8.index(after: space)
        var end = utf8.endIndex
        while start < end, isBlank(utf8[start]) { start = utf8.index(after: start) }
        while end > start, isBlank(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
        return start < end ? (scheme, String(value[start..<end])) : nil
    }
}

extension HTTPField.Name {
    /// RFC 9449 §4.1.
    static let dpop = HTTPField.Name("DPoP")!
    /// RFC 9449 §8.
    static let dpopNonce = HTTPField.Name("DPoP-Nonce")!
}

/// Checks the bearer access token of signed-in routes and records the caller in the context.
///
/// A DPoP-bound token (`cnf.jkt`, RFC 9449 §7.1) must come with the `DPoP` scheme and a proof of its key for this
/// request (`htm`, `htu`, `ath`; its `jti` spent); a bound token sent as `Bearer`, or an unbound one as `DPoP`, is
/// refused.
struct AccessTokenMiddleware: RouterMiddleware {
    typealias Context = LatchRequestContext
    let accessTokens: AccessTokenGate
    var dpop: DPoPGate?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let (scheme, token) = request.accessToken else {
            throw LatchError.invalidToken("a bearer access token is required")
        }
        var context = context
        let caller = try await accessTokens.authenticate(accessToken: token)
        switch (caller.claims.confirmationKey, scheme) {
        case (nil, .bearer):
            break
        case (nil, .dpop):
            throw LatchError.invalidToken("this access token is not DPoP-bound: present it with the Bearer scheme")
        case (.some, .bearer):
            throw LatchError.invalidToken("this access token is DPoP-bound: present it with the DPoP scheme and a proof")
        case (.some(let bound), .dpop):
            guard let dpop else { throw LatchError.invalidToken("DPoP-bound tokens are not served here") }
            let proof = try await dpop.resource(
                headers: request.dpopProofs, method: request.method.rawValue, path: request.uri.path, accessToken: token)
            guard proof.thumbprint == bound else {
                throw LatchError(.invalidDPoPProof, "the proof's key is not the one the access token is bound to", atResource: true)
            }
        }
        context.caller = caller
        return try await next(request, context)
    }
}

/// Checks the admin bearer token of admin routes. Failures are counted per client address
/// (`rateLimit.adminFailuresPerMinute`): past the limit, the address gets 429 `rate_limited` — before its token is
/// even looked at — until its budget refills, so tokens cannot be guessed at speed.
struct AdminTokenMiddleware: RouterMiddleware {
    typealias Context = LatchRequestContext
    let admins: AdminTokenGate
    let failures: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        if let retryAfter = failures.exhausted(context.clientAddress) {
            return ErrorStatus.response(
                code: .rateLimited, message: "too many failed admin authentications from this address; retry after \(retryAfter) s",
                extraHeaders: [.retryAfter: String(retryAfter)])
        }
        guard let token = request.bearerToken, let caller = try await admins.caller(of: token) else {
            _ = failures.acquire(context.clientAddress)
            throw LatchError(.unauthorized, "a valid admin token is required (unknown, revoked or expired)")
        }
        var context = context
        context.admin = caller
        // The admin acting (account and token), for the audit records this request writes.
        return try await AuditOrigin.with({ $0.admin = "\(caller.accountID)/\(caller.tokenID)" }) { try await next(request, context) }
    }
}

/// Checks the caller's role against ``AdminPolicy`` for the route the router matched (its template, e.g.
/// `DELETE /admin/v1/users/{id}`), after authentication: a route the policy lacks is refused for every role.
/// A refusal, here or by the route's engine (an escalation), is recorded in the audit log (`admin.access.forbidden`),
/// on its own.
struct AdminPolicyMiddleware: RouterMiddleware {
    typealias Context = AdminContext
    var audit: AuditRecorder

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The router sets the template before the route's group middleware runs; without one, nothing is allowed.
        let template = context.endpointPath ?? ""
        do {
            try AdminPolicy.check(context.role, method: request.method.rawValue, template: template)
            return try await next(request, context)
        } catch let error as LatchError where error.code == .forbidden {
            // The route refused for the role, or an escalation the engine refused (a token or account above the
            // caller's role).
            await audit.recordAlone(
                .admin("access", "forbidden"), actor: "admin",
                detail: "role \(context.role.rawValue) refused \(request.method.rawValue) \(template): \(error.message)")
            throw error
        }
    }
}
