import Foundation
import HTTPTypes
import Hummingbird
import LatchCore
import LatchModel

extension Request {
    /// The token of an `Authorization: Bearer …` header (RFC 6750 §2.1), if present.
    var bearerToken: String? {
        guard let value = headers[.authorization] else { return nil }
        let parts = value.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
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

/// Checks the admin bearer token of admin routes.
struct AdminAuthenticatorMiddleware: RouterMiddleware {
    typealias Context = LatchRequestContext
    let admins: AdminAuthenticator

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let token = request.bearerToken, try await admins.isAdmin(token) else {
            throw LatchError(.unauthorized, "a valid admin token is required")
        }
        var context = context
        context.isAdmin = true
        return try await next(request, context)
    }
}
