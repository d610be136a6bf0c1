import Foundation
import HTTPTypes
import LatchCore
import LatchModel
import LatchTesting
import Testing

/// The metadata documents (OpenID Connect Discovery 1.0 §3, RFC 8414 §2) say only what the endpoints do.
@Suite("Discovery metadata")
struct DiscoveryTests {
    static let redirect = "com.example.app:/callback"

    /// An authorization request of the default client with `responseType`; the `error` of the redirect back, or nil.
    static func authorizationError(_ client: Client, responseType: String) async throws -> String? {
        let query = FormEncoding.query([
            ("response_type", responseType), ("client_id", "default"), ("redirect_uri", redirect), ("scope", "openid"), ("state", "s0123456789"),
            ("nonce", "n0123456789"), ("code_challenge", PKCE.challenge(String(repeating: "v", count: 43))), ("code_challenge_method", "S256"),
        ])
        let reply = try await client.get("/oauth2/authorize?" + query)
        let location = try #require(reply.headers[.location], "\(responseType): \(reply.status) \(String(decoding: reply.body, as: UTF8.self).prefix(300))")
        #expect(location.hasPrefix(redirect + "?"))
        return queryParameters(location)["error"]
    }

    @Test("response_types_supported lists exactly the response types /oauth2/authorize accepts: code, not none")
    func responseTypes() async throws {
        try await Deployment.make().run { client in
            let patched = try await client.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(redirectUris: [Self.redirect]))
            #expect(patched.status == .ok, "\(patched.json)")
            let metadata = try await client.get("/.well-known/openid-configuration").json
            let listed = (metadata["response_types_supported"]?.arrayValue ?? []).compactMap(\.stringValue)
            #expect(listed == ["code"])
            for type in ["code", "none", "token", "id_token", "code id_token", "code token"] {
                // A listed type gets past the response_type check (here to the missing upstream), any other is refused.
                let error = try await Self.authorizationError(client, responseType: type)
                #expect((error != ErrorCode.unsupportedResponseType.rawValue) == listed.contains(type), "\(type): \(error ?? "no error")")
            }
        }
    }
}
