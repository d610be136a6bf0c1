import Foundation
import HTTPTypes
import Hummingbird
import LatchCore
import LatchModel

extension Request {
    /// The token of an `Authorization: Bearer …` header (RFC 6750 §2.1), if present. Read over UTF-8: this runs
    /// on every signed-in request.
    var bearerToken: String? {
        guard let value = headers[.authorization] else { return nil }
        let utf8 = value.utf8
        guard let space = utf8.firstIndex(of: UInt8(ascii: " ")), value[..<space].lowercased() == "bearer" else { return nil }
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var start = utf8.index(after: space)
        var end = utf8.endIndex
        while start < end, isBlank(utf8[start]) { start = utf8.index(after: start) }
        while end > start, isBlank(utf8[utf8.index(before: end)]) { end = utf8.index(before: end) }
        return start < end ? String(value[start..<end]) : nil
    }
}

/// Checks the bearer access token of signed-in routes and records the caller in the context.
struct BearerAuthenticator: RouterMiddleware {
    typealias Context = LatchRequestContext
    let accessTokens: AccessTokenAuthenticator

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let token = request.bearerToken else {
            throw LatchError.invalidToken("a bearer access token is required")
        }
        var context = context
        context.caller = try await accessTokens.authenticate(accessToken: token)
        return try await next(request, context)
    }
}

/// Checks the admin bearer token of admin routes. Failures are counted per client address
/// (`rateLimit.adminFailuresPerMinute`): past the limit, the address gets 429 `rate_limited` — before its token is
/// even looked at — until its budget refills, so tokens cannot be guessed at speed.
struct AdminAuthenticatorMiddleware: RouterMiddleware {
    typealias Context = LatchRequestContext
    let admins: AdminAuthenticator
    let failures: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        if let retryAfter = failures.exhausted(context.clientAddress) {
            return ErrorStatus.response(
                code: .rateLimited, message: "too many failed admin authentications from this address; retry after \(retryAfter) s",
                extraHeaders: [.retryAfter: String(retryAfter)])
        }
        guard let token = request.bearerToken, let id = try await admins.tokenID(of: token) else {
            _ = failures.acquire(context.clientAddress)
            throw LatchError(.unauthorized, "a valid admin token is required")
        }
        var context = context
        context.adminTokenID = id
        return try await next(request, context)
    }
}
