import Foundation
import HTTPTypes
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

@Suite("Answers match the OpenAPI document")
struct DocumentedAnswersTests {
    /// Calls every documented operation — successes and the usual refusals, 429 included — and checks each answer
    /// against docs/openapi.json: its status must be documented, its body must match the documented schema.
    @Test("A tour of the whole API: every answer's status is documented and its body matches the schema")
    func tour() async throws {
        let recorder = AnswerRecorder()
        try await Deployment.make({ $0.trustForwardedFor = true }).run(recording: recorder) { client in
            let admin: HTTPFields = [.authorization: "Bearer \(Deployment.adminToken)"]
            // Discovery and health.
            for path in ["/.well-known/openid-configuration", "/.well-known/jwks.json", "/health/live", "/health/ready"] {
                #expect(try await client.get(path).status == .ok)
            }
            // Admin: create, list, refuse.
            try await client.addIssuer()
            #expect(try await client.admin(.post, "/admin/v1/issuers", AdminSignOnIssuerRequest(name: "acme", keyId: "k1", publicKey: TestKeys.rsa.publicKey.pemRepresentation)).status == .conflict)
            #expect(try await client.admin(.post, "/admin/v1/issuers", AdminSignOnIssuerRequest(name: "", keyId: "k", publicKey: "x")).status == .badRequest)
            _ = try await client.admin(.get, "/admin/v1/issuers")
            let testKey = try await client.admin(.post, "/admin/v1/test-keys", AdminTestKeyRequest(keyId: "tour-key", algorithm: "ES256"))
            #expect(testKey.status == .created)
            _ = try await client.admin(.get, "/admin/v1/test-keys")
            #expect(try await client.admin(.post, "/admin/v1/clients", AdminClientRequest(clientId: "ios", name: "iOS")).status == .created)
            _ = try await client.admin(.get, "/admin/v1/clients")
            _ = try await client.admin(.get, "/admin/v1/client-config?clientId=ios")
            #expect(try await client.admin(.get, "/admin/v1/client-config?clientId=ghost").status == .notFound)
            let token = try await client.admin(.post, "/admin/v1/tokens", AdminTokenRequest(name: "tour")).decode(AdminTokenCreated.self)
            _ = try await client.admin(.get, "/admin/v1/tokens")
            #expect(try await client.admin(.post, "/admin/v1/keys/rotate").status == .created)
            #expect(try await client.send(.get, "/admin/v1/users").status == .unauthorized)
            #expect(try await client.admin(.get, "/admin/v1/users?limit=abc").status == .badRequest)
            // Registration, sign-in, tokens.
            let alice = try await client.registerFederated()
            #expect(try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: try client.federatedAssertion())).status == .conflict)
            #expect(try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: "")).status == .badRequest)
            #expect(try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .test, answer: "x")).status == .badRequest)
            _ = try await client.registerWithTestKey(username: "bob", deviceKey: TestKeys.p256)
            #expect(try await client.signInWithKey(username: "bob", deviceKey: TestKeys.p256).status == .ok)
            #expect(try await client.postJSON("/v1/sign-in/challenge", ["user": "x"]).status == .badRequest)
            let tokens = try await client.signInFederated()
            #expect(try await client.token(assertion: "x.y.z").status == .badRequest)
            #expect(try await client.token(assertion: "x.y.z", clientID: "ghost").status == .unauthorized)
            let refreshed = try await client.refresh(tokens.refreshToken).decode(TokenResponse.self)
            // The signed-in user.
            #expect(try await client.get("/oauth2/userinfo", bearer: refreshed.accessToken).status == .ok)
            #expect(try await client.send(.post, "/oauth2/userinfo", headers: [.authorization: "Bearer \(refreshed.accessToken)"]).status == .ok)
            #expect(try await client.get("/oauth2/userinfo").status == .unauthorized)
            #expect(try await client.get("/v1/me", bearer: refreshed.accessToken).status == .ok)
            #expect(try await client.get("/v1/me", bearer: "nope").status == .unauthorized)
            let second = try await client.signInFederated()
            #expect(try await client.send(.delete, "/v1/me", headers: [.authorization: "Bearer \(second.accessToken)"]).status == .noContent)
            #expect(try await client.send(.delete, "/v1/me", headers: [.authorization: "Bearer \(second.accessToken)"]).status == .unauthorized)
            #expect(try await client.send(.post, "/v1/me/global-sign-out", headers: [.authorization: "Bearer nope"]).status == .unauthorized)
            let bobTokens = try await client.signInWithKey(username: "bob", deviceKey: TestKeys.p256).decode(TokenResponse.self)
            #expect(try await client.send(.post, "/v1/me/global-sign-out", headers: [.authorization: "Bearer \(bobTokens.accessToken)"]).status == .ok)
            #expect(try await client.postForm("/oauth2/revoke", [("token", refreshed.refreshToken)]).status == .ok)
            #expect(try await client.postForm("/oauth2/revoke", [("token", "x"), ("token_type_hint", "id_token")]).status == .badRequest)
            #expect(try await client.postForm("/oauth2/revoke", [("token", refreshed.refreshToken), ("client_id", "ghost")]).status == .unauthorized)
            // Admin: read, end, delete.
            let bobID = try #require(try await client.admin(.get, "/admin/v1/users").decode(AdminUserPage.self).users.first { $0.username == "bob" }?.id)
            _ = try await client.admin(.get, "/admin/v1/users/\(bobID)")
            _ = try await client.admin(.post, "/admin/v1/users/\(bobID)/sign-out")
            #expect(try await client.admin(.delete, "/admin/v1/users/\(bobID)").status == .noContent)
            for path in ["/admin/v1/users/\(bobID)", "/admin/v1/users/\(alice.userId)", "/admin/v1/test-keys/ghost", "/admin/v1/issuers/ghost", "/admin/v1/clients/ghost", "/admin/v1/tokens/ghost"] {
                #expect(try await client.admin(.delete, path).status == .notFound, "\(path)")
            }
            #expect(try await client.admin(.get, "/admin/v1/users/ghost").status == .notFound)
            #expect(try await client.admin(.post, "/admin/v1/users/ghost/sign-out").status == .notFound)
            #expect(try await client.admin(.delete, "/admin/v1/clients/default").status == .conflict)
            #expect(try await client.admin(.delete, "/admin/v1/test-keys/tour-key").status == .noContent)
            #expect(try await client.admin(.delete, "/admin/v1/issuers/acme").status == .noContent)
            #expect(try await client.admin(.delete, "/admin/v1/clients/ios").status == .noContent)
            #expect(try await client.admin(.delete, "/admin/v1/tokens/\(token.id)").status == .noContent)
            #expect(try await client.send(.delete, "/admin/v1/tokens/env", headers: admin).status == .conflict)
            // Admin accounts and roles: create, list, a token of a lower role refused (403), an owned resource listed (409), delete.
            let dana = try await client.admin(.post, "/admin/v1/admins", AdminAccountRequest(username: "dana", role: .support))
            #expect(dana.status == .created)
            let danaID = try dana.decode(AdminAccountInfo.self).id
            #expect(try await client.admin(.post, "/admin/v1/admins", AdminAccountRequest(username: "DANA", role: .auditor)).status == .conflict)
            #expect(try await client.adminRaw(.post, "/admin/v1/admins", #"{"username":"","role":"admin"}"#).status == .badRequest)
            _ = try await client.admin(.get, "/admin/v1/admins")
            let danaToken = try await client.admin(.post, "/admin/v1/tokens", AdminTokenRequest(name: "dana", expiresIn: 3600, accountId: danaID))
                .decode(AdminTokenCreated.self)
            let asDana: HTTPFields = [.authorization: "Bearer \(danaToken.token)", .contentType: "application/json"]
            #expect(try await client.send(.get, "/admin/v1/tokens", headers: asDana).status == .ok)
            #expect(try await client.send(.get, "/admin/v1/clients", headers: asDana).status == .forbidden)
            #expect(try await client.send(.post, "/admin/v1/tokens", headers: asDana, body: #"{"role":"admin"}"#).status == .forbidden)
            #expect(try await client.send(.post, "/admin/v1/admins", headers: asDana, body: #"{"username":"x","role":"owner"}"#).status == .forbidden)
            #expect(try await client.send(.delete, "/admin/v1/admins/\(danaID)", headers: asDana).status == .forbidden)
            #expect(try await client.admin(.delete, "/admin/v1/admins/adm_root").status == .conflict)
            #expect(try await client.admin(.delete, "/admin/v1/admins/ghost").status == .notFound)
            #expect(try await client.admin(.delete, "/admin/v1/admins/\(danaID)").status == .noContent)
            #expect(try await client.send(.get, "/admin/v1/users", headers: asDana).status == .unauthorized)
            // Rate limits, from one (forwarded) address: every limited endpoint answers 429 once it is spent.
            let flood: HTTPFields = [.init("X-Forwarded-For")!: "203.0.113.9", .contentType: "application/json"]
            var limited = false
            for _ in 0..<400 where !limited {
                limited = try await client.send(.post, "/v1/sign-in/challenge", headers: flood, body: #"{"username":"x"}"#).status == .tooManyRequests
            }
            #expect(limited)
            #expect(try await client.send(.post, "/v1/registrations", headers: flood, body: "{}").status == .tooManyRequests)
            var form = flood
            form[.contentType] = "application/x-www-form-urlencoded"
            #expect(try await client.send(.post, "/oauth2/token", headers: form, body: "grant_type=refresh_token").status == .tooManyRequests)
            #expect(try await client.send(.post, "/oauth2/revoke", headers: form, body: "token=x").status == .tooManyRequests)
        }
        #expect(recorder.count > 70)
        // The answers, checked by scripts/check_answers.py (jsonschema, draft 2020-12).
        try await recorder.checkAgainstOpenAPI()
    }
}
