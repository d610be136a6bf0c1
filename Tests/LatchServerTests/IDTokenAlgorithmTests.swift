import Foundation
import HTTPTypes
import LatchApp
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// ID tokens signed with RS256 for the clients that ask (`idTokenSignedResponseAlg`), ES256 for the others.
@Suite("ID token signing algorithm per client")
struct IDTokenAlgorithmTests {
    static func jwks(_ client: Client) async throws -> JSONWebKeySet {
        try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self)
    }

    @Test("A client registered with idTokenSignedResponseAlg RS256 gets RS256 ID tokens (sign-in and refresh) from a key published beside the ES256 one; its access tokens and other clients' ID tokens stay ES256; rotation rotates both; other values are invalid_input")
    func rs256ForOneClient() async throws {
        try await Deployment.make().run { client in
            #expect(try await Self.jwks(client).keys.map(\.alg) == ["ES256"])
            for bad in ["HS256", "none", "ES384", "rs256", ""] {
                let refused = try await client.admin(.post, "/admin/v1/clients", AdminClientRequest(clientId: "bad", idTokenSignedResponseAlg: bad))
                #expect(refused.status == .badRequest && refused.code == "invalid_input", "\(bad): \(refused.json)")
            }
            let created = try await client.admin(.post, "/admin/v1/clients", AdminClientRequest(clientId: "rs-app", idTokenSignedResponseAlg: "RS256"))
            #expect(created.status == .created, "\(created.json)")
            #expect(try created.decode(AdminClient.self).idTokenSignedResponseAlg == "RS256")
            // Both keys are published as soon as a client asks for RS256.
            let jwks = try await Self.jwks(client)
            #expect(Set(jwks.keys.compactMap(\.alg)) == ["ES256", "RS256"] && jwks.keys.count == 2)
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let reply = try await client.token(assertion: try client.federatedAssertion(), clientID: "rs-app")
            #expect(reply.status == .ok, "\(reply.json)")
            let tokens = try reply.decode(TokenResponse.self)
            #expect(try ParsedJWS(tokens.idToken).algorithmName == "RS256")
            #expect(try verifyAgainstJWKS(tokens.idToken, jwks: jwks)["aud"] == "rs-app")
            #expect(try ParsedJWS(tokens.accessToken).algorithmName == "ES256")
            #expect(try await client.get("/oauth2/userinfo", bearer: tokens.accessToken).status == .ok)
            let refreshed = try await client.postForm(
                "/oauth2/token", [("grant_type", "refresh_token"), ("refresh_token", tokens.refreshToken), ("client_id", "rs-app")])
            #expect(refreshed.status == .ok, "\(refreshed.json)")
            #expect(try ParsedJWS(try refreshed.decode(TokenResponse.self).idToken).algorithmName == "RS256")
            // The default client keeps ES256.
            let other = try await client.signInFederated()
            #expect(try ParsedJWS(other.idToken).algorithmName == "ES256")
            // Rotation: a new key for each algorithm; the old ones stay published.
            let rsBefore = try ParsedJWS(tokens.idToken).keyID
            let rotated = try await client.admin(.post, "/admin/v1/keys/rotate").decode(AdminKeyRotated.self)
            let afterRotation = try await Self.jwks(client)
            #expect(afterRotation.keys.count == 4 && afterRotation.keys.filter { $0.alg == "RS256" }.count == 2)
            let next = try await client.token(assertion: try client.federatedAssertion(), clientID: "rs-app").decode(TokenResponse.self)
            let nextID = try ParsedJWS(next.idToken)
            #expect(nextID.algorithmName == "RS256" && nextID.keyID != rsBefore && nextID.keyID != nil)
            #expect(try ParsedJWS(next.accessToken).keyID == rotated.keyId)
            _ = try verifyAgainstJWKS(tokens.idToken, jwks: afterRotation)
            // PATCH switches a client: the default client now gets RS256 too.
            let patched = try await client.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(idTokenSignedResponseAlg: "RS256"))
            #expect(patched.status == .ok, "\(patched.json)")
            #expect(try patched.decode(AdminClient.self).idTokenSignedResponseAlg == "RS256")
            #expect(try ParsedJWS(try await client.signInFederated().idToken).algorithmName == "RS256")
            let badPatch = try await client.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(idTokenSignedResponseAlg: "PS256"))
            #expect(badPatch.status == .badRequest && badPatch.code == "invalid_input")
        }
    }

    @Test("Discovery advertises ES256 first and RS256 (OpenID Connect Discovery 1.0 §3); with keys.algorithm RS256, RS256 first")
    func advertised() async throws {
        try await Deployment.make().run { client in
            let metadata = try await client.get("/.well-known/openid-configuration").json
            #expect(metadata["id_token_signing_alg_values_supported"] == .array([.string("ES256"), .string("RS256")]))
        }
        try await Deployment.make({ $0.signingAlgorithm = .RS256 }).run { client in
            let metadata = try await client.get("/.well-known/openid-configuration").json
            #expect(metadata["id_token_signing_alg_values_supported"] == .array([.string("RS256"), .string("ES256")]))
        }
    }
}
