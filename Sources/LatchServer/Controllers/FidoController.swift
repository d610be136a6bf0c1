import Hummingbird
import LatchCore
import LatchModel

/// FIDO authenticators (WebAuthn): the signed-in user's registration ceremony and authenticator list, and the
/// sign-in ceremony's options (the sign-in itself is the token endpoint's `webauthn` grant).
struct FidoController {
    let fido: FidoService
    let sessions: SessionService

    /// `POST /v1/fido/authentication/options`, `POST /v1/fido/sign-up/options`, `GET /v1/fido/policy`,
    /// `POST /v1/fido/authenticators/status` (unauthenticated, rate-limited).
    var publicEndpoints: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.post("authentication/options") { request, _ -> Response in
            let body = try await request.decodeJSON(FidoAuthenticationOptionsRequest.self, whenEmpty: FidoAuthenticationOptionsRequest())
            return JSONResponse.make(bytes: try await fido.authenticationOptions(username: body.username).serialized())
        }
        routes.post("sign-up/options") { request, _ -> Response in
            let body = try await request.decodeJSON(FidoSignUpOptionsRequest.self, whenEmpty: FidoSignUpOptionsRequest())
            return JSONResponse.make(bytes: try await fido.signUpOptions(username: body.username).serialized())
        }
        routes.get("policy") { _, _ -> Response in try JSONResponse.make(fido.policy) }
        routes.post("authenticators/status") { request, _ -> Response in
            let body = try await request.decodeJSON(FidoStatusRequest.self)
            return try JSONResponse.make(try await fido.pinStatus(credentialID: body.credentialId))
        }
        return routes
    }

    /// `GET /.well-known/apple-app-site-association` and `GET /.well-known/assetlinks.json`: the registered apps may use
    /// this domain's passkeys and links (cached by clients for 5 minutes).
    var associationFiles: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.get(".well-known/apple-app-site-association") { _, _ -> Response in
            JSONResponse.make(bytes: try await fido.appleAppSiteAssociation().serialized(), noStore: false, maxAge: 300)
        }
        routes.get(".well-known/assetlinks.json") { _, _ -> Response in
            JSONResponse.make(bytes: try await fido.assetLinks().serialized(), noStore: false, maxAge: 300)
        }
        return routes
    }

    /// `POST /v1/fido/registration/options`, `POST /v1/fido/registration` (signed in).
    func addRegistration(to group: RouterGroup<SignedInContext>) {
        group.post("registration/options") { _, context -> Response in
            JSONResponse.make(bytes: try await fido.registrationOptions(for: context.caller.user).serialized())
        }
        group.post("registration") { request, context -> Response in
            let body = try await request.jsonObject()
            guard case .string(let ceremonyID)? = body["ceremonyId"], let credential = body["credential"], credential.objectValue != nil else {
                throw LatchError(.invalidJSON, "ceremonyId (a string) and credential (a RegistrationResponseJSON object) are required")
            }
            var name: String?
            if let given = body["name"] {
                guard case .string(let text) = given else { throw LatchError(.invalidJSON, "name must be a string") }
                name = text
            }
            let info = try await fido.register(for: context.caller.user, ceremonyID: ceremonyID, credential: credential, name: name)
            return try JSONResponse.make(info, status: .created)
        }
        group.post("pin-change/options") { request, context -> Response in
            let body = try await request.decodeJSON(FidoPinChangeOptionsRequest.self)
            return JSONResponse.make(
                bytes: try await fido.pinChangeOptions(for: context.caller.user, authenticatorID: body.authenticatorId).serialized())
        }
        group.post("pin-change") { request, context -> Response in
            let body = try await request.jsonObject()
            guard case .string(let ceremonyID)? = body["ceremonyId"], case .string(let authenticatorID)? = body["authenticatorId"],
                let assertion = body["assertion"], assertion.objectValue != nil, let credential = body["credential"], credential.objectValue != nil
            else {
                throw LatchError(
                    .invalidJSON,
                    "ceremonyId and authenticatorId (strings), assertion (an AuthenticationResponseJSON) and credential (a RegistrationResponseJSON) are required")
            }
            return try JSONResponse.make(
                try await fido.changePin(
                    for: context.caller.user, ceremonyID: ceremonyID, authenticatorID: authenticatorID, assertion: assertion, credential: credential))
        }
    }

    /// `GET`/`DELETE /v1/me/authenticators`, `PATCH`/`DELETE /v1/me/authenticators/{id}` (deletion needs a recent
    /// sign-in).
    func addAuthenticators(to group: RouterGroup<SignedInContext>) {
        group.get("authenticators") { _, context -> Response in try JSONResponse.make(try await fido.list(for: context.caller.user)) }
        group.delete("authenticators") { _, context -> Response in
            try sessions.requireRecentAuthentication(context.caller)
            try await fido.deleteAll(for: context.caller.user)
            return Response(status: .noContent, headers: [.cacheControl: "no-store"])
        }
        group.patch("authenticators/:id") { request, context -> Response in
            let body = try await request.decodeJSON(FidoAuthenticatorPatch.self)
            try await fido.rename(try context.parameters.require("id"), for: context.caller.user, to: body.name)
            return Response(status: .noContent, headers: [.cacheControl: "no-store"])
        }
        group.delete("authenticators/:id") { _, context -> Response in
            try sessions.requireRecentAuthentication(context.caller)
            try await fido.delete(try context.parameters.require("id"), for: context.caller.user)
            return Response(status: .noContent, headers: [.cacheControl: "no-store"])
        }
    }

    /// `GET`/`DELETE /admin/v1/users/{id}/authenticators`, `DELETE /admin/v1/users/{id}/authenticators/{authenticatorId}`,
    /// `POST /admin/v1/users/{id}/authenticators/{authenticatorId}/unlock`.
    func addAdmin(to group: RouterGroup<AdminContext>) {
        group.get("users/:id/authenticators") { _, context -> Response in
            try JSONResponse.make(try await fido.adminList(userID: try context.parameters.require("id")))
        }
        group.delete("users/:id/authenticators") { _, context -> Response in
            try await fido.adminDelete(userID: try context.parameters.require("id"), authenticatorID: nil)
            return Response(status: .noContent, headers: [.cacheControl: "no-store"])
        }
        group.delete("users/:id/authenticators/:authenticator") { _, context -> Response in
            try await fido.adminDelete(userID: try context.parameters.require("id"), authenticatorID: try context.parameters.require("authenticator"))
            return Response(status: .noContent, headers: [.cacheControl: "no-store"])
        }
        group.post("users/:id/authenticators/:authenticator/unlock") { _, context -> Response in
            try JSONResponse.make(
                try await fido.unlock(userID: try context.parameters.require("id"), authenticatorID: try context.parameters.require("authenticator")))
        }
    }
}
