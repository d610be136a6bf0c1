import Foundation
import HTTPTypes
import Hummingbird
import LatchCore
import LatchModel

/// Issuer logins: the admin's login issuers and resource servers, the session's login status, logout and
/// logout-all, and token introspection (RFC 7662) for resource servers.
struct IssuerLoginController {
    let service: IssuerLoginService
    let sessions: SessionService

    func addAdmin(to group: RouterGroup<AdminContext>) {
        group.post("login-issuers") { request, _ -> Response in
            try JSONResponse.make(try await service.addIssuer(try await request.decodeJSON(AdminLoginIssuerRequest.self)), status: .created)
        }
        group.get("login-issuers") { _, _ -> Response in try JSONResponse.make(try await service.issuers()) }
        group.delete("login-issuers/:issuerId") { _, context -> Response in
            try await service.deleteIssuer(try context.parameters.require("issuerId"))
            return AdminController.noContent
        }
        group.post("login-issuers/:issuerId/consumers/:consumerId/logout-all") { _, context -> Response in
            let revoked = try await service.logoutConsumer(
                issuer: try context.parameters.require("issuerId"), consumer: try context.parameters.require("consumerId"))
            return try JSONResponse.make(SessionsRevoked(revoked: revoked))
        }
        group.post("resource-servers") { request, _ -> Response in
            try JSONResponse.make(
                try await service.createResourceServer(try await request.decodeJSON(AdminResourceServerRequest.self)), status: .created)
        }
        group.get("resource-servers") { _, _ -> Response in try JSONResponse.make(try await service.resourceServers()) }
        group.delete("resource-servers/:clientId") { _, context -> Response in
            try await service.deleteResourceServer(id: try context.parameters.require("clientId"))
            return AdminController.noContent
        }
    }

    func addSession(to group: RouterGroup<SignedInContext>) {
        group.get("login-status") { request, context -> Response in
            let sensitive = request.uri.queryParameters.get("sensitive")
            guard sensitive == nil || sensitive == "true" || sensitive == "false" else {
                throw LatchError.invalidInput("sensitive must be true or false")
            }
            return try JSONResponse.make(
                try await service.loginStatus(
                    context.caller, sensitiveMaxAge: sessions.sensitiveMaxAge(of: context.caller.session), requireSensitive: sensitive == "true"))
        }
        group.post("logout") { _, context -> Response in
            try JSONResponse.make(SessionsRevoked(revoked: try await service.logout(context.caller)))
        }
        group.post("logout-all") { _, context -> Response in
            try JSONResponse.make(SessionsRevoked(revoked: try await service.logoutAll(context.caller)))
        }
    }

    /// `POST /oauth2/introspect` (RFC 7662), for resource servers with HTTP Basic credentials (RFC 6749 §2.3.1).
    var introspection: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.post("oauth2/introspect") { request, _ -> Response in
            guard let (id, secret) = Self.basicCredentials(request.headers[.authorization]) else {
                return Self.invalidClient("HTTP Basic credentials of a resource server are required")
            }
            do {
                _ = try await service.authenticateResourceServer(id: id, secret: secret)
            } catch let error as LatchError where error.code == .invalidClient {
                return Self.invalidClient(error.message)
            }
            let parameters = try await request.formParameters()
            guard let token = parameters["token"], !token.isEmpty else { throw LatchError.invalidRequest("token is required") }
            var maxAge: Int64?
            if let text = parameters["max_age"] {
                guard let value = Int64(text), value >= 0, value <= 31_536_000 else {
                    throw LatchError.invalidRequest("max_age must be a number of seconds")
                }
                maxAge = value
            }
            let answer = try await service.introspect(token: token, maxAge: maxAge)
            return JSONResponse.make(bytes: JSONValue.object(answer).serialized())
        }
        return routes
    }

    /// RFC 6749 §5.2: a client that authenticated with Basic gets 401 and a `Basic` challenge.
    static func invalidClient(_ message: String) -> Response {
        var response = ErrorStatus.response(code: .invalidClient, message: message)
        response.headers[.wwwAuthenticate] = "Basic realm=\"latch\", charset=\"UTF-8\""
        return response
    }

    /// The (client id, secret) of `Authorization: Basic …`: base64 of the form-urlencoded id and secret joined by `:`.
    static func basicCredentials(_ header: String?) -> (String, String)? {
        guard let header, header.utf8.count <= 1024 else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic", let data = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
            let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { return nil }
        guard let id = String(text[..<colon]).removingPercentEncoding, let secret = String(text[text.index(after: colon)...]).removingPercentEncoding,
            !id.isEmpty, !secret.isEmpty
        else { return nil }
        return (id, secret)
    }
}
