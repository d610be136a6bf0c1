import HTTPTypes
import Hummingbird
import LatchCore
import LatchModel

/// The OAuth 2.0 endpoints: token (RFC 6749 §3.2), revocation (RFC 7009) and OIDC UserInfo.
struct OAuthController {
    let tokens: TokenEndpoint
    let revocation: TokenRevocation
    let sessions: SessionService
    let clients: ClientRegistry
    /// Counts token answers by grant type and outcome, when metrics are on.
    var metrics: LatchMetrics?

    /// Token and revocation: form-encoded, errors in RFC 6749 form, never cached.
    var endpoints: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.post("token") { request, _ -> Response in
            let form = try await request.formParameters(repeatable: TokenEndpoint.repeatableParameters)
            // A grant type this server serves, else `other`: clients cannot mint series.
            let grantType = form.single["grant_type"].flatMap { tokens.grantTypes.contains($0) ? $0 : nil } ?? "other"
            let response: TokenResponse
            // With metrics on, the JWT-bearer grant tells which of its two sign-in methods took the assertion; other
            // grants are one method each, and refreshes (the hottest path) pay nothing.
            let report = metrics != nil && grantType == GrantType.jwtBearer ? SignInReport() : nil
            do {
                response = try await SignInReport.$current.withValue(report) {
                    try await tokens.exchange(form.single, repeated: form.repeated, bearer: request.accessToken?.1, dpopHeaders: request.dpopProofs)
                }
            } catch {
                let refusal = error as? LatchError
                let outcome = refusal?.detail == LatchError.reuseDetectedDetail ? "reuse_detected" : refusal?.code.rawValue ?? "unavailable"
                metrics?.tokenRequest(grantType: grantType, outcome: outcome)
                if let method = Self.signInMethod(grantType, report) { metrics?.signIn(method: method, outcome: outcome) }
                throw error
            }
            metrics?.tokenRequest(grantType: grantType, outcome: "ok")
            if let method = Self.signInMethod(grantType, report) { metrics?.signIn(method: method, outcome: "ok") }
            var answer = JSONResponse.make(bytes: Self.serialize(response))
            // RFC 9449 §8.2: a fresh nonce with each answer, so the client's next proof needs no extra round trip.
            if let dpop = tokens.dpop, dpop.settings.requireNonce { answer.headers[.dpopNonce] = dpop.nonces.current() }
            return answer
        }
        routes.post("revoke") { request, _ -> Response in
            let parameters = try await request.formParameters()
            guard let token = parameters["token"], !token.isEmpty else {
                throw LatchError.invalidRequest("token is required")
            }
            if let hint = parameters["token_type_hint"], hint != "refresh_token", hint != "access_token" {
                throw LatchError(.unsupportedTokenType, "token_type_hint must be refresh_token or access_token")
            }
            let client = try await clients.resolve(parameters["client_id"])
            try await revocation.revoke(token: token, clientID: client.id)
            // RFC 7009 §2.2: 200 whether or not the token was known.
            return JSONResponse.make(bytes: Array("{}".utf8))
        }
        return routes
    }

    /// The sign-in method of a token request, for `latch_signins_total`: the one the grant reported, else the grant's
    /// own; nil for what is not a sign-in (a refresh, an unknown grant type).
    static func signInMethod(_ grantType: String, _ report: SignInReport?) -> String? {
        switch grantType {
        case GrantType.jwtBearer: report?.method ?? "jwt_bearer"
        case GrantType.webauthn: "webauthn"
        case GrantType.appAttest: "app_attest"
        case GrantType.issuerLogin: "issuer_login"
        case "authorization_code": "authorization_code"
        default: nil
        }
    }

    /// UserInfo (OIDC Core §5.3), on the signed-in group.
    func userInfoEndpoints(_ group: RouterGroup<SignedInContext>) {
        let handler: @Sendable (Request, SignedInContext) async throws -> Response = { _, context in
            JSONResponse.make(bytes: JSONValue.object(sessions.userInfo(context.caller)).serialized())
        }
        group.get("userinfo", use: handler)
        group.post("userinfo", use: handler)
    }

    /// The token response as JSON, written directly (the hot path of every sign-in and refresh).
    static func serialize(_ response: TokenResponse) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 1536)
        writer.beginObject()
        writer.member("access_token", response.accessToken)
        writer.member("token_type", response.tokenType)
        writer.member("expires_in", Int64(response.expiresIn))
        writer.member("refresh_token", response.refreshToken)
        writer.member("refresh_expires_in", Int64(response.refreshExpiresIn))
        writer.member("id_token", response.idToken)
        if let scope = response.scope { writer.member("scope", scope) }
        writer.endObject()
        return writer.bytes
    }
}
