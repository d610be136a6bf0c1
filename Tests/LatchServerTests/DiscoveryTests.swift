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

    @Test("request and request_uri are published as unsupported; the same document is served at /.well-known/oauth-authorization-server (RFC 8414 §3)")
    func authorizationServerMetadata() async throws {
        try await Deployment.make().run { client in
            let openID = try await client.get("/.well-known/openid-configuration")
            let oauth = try await client.get("/.well-known/oauth-authorization-server")
            #expect(openID.status == .ok && oauth.status == .ok)
            #expect(oauth.headers[.contentType] == openID.headers[.contentType] && oauth.headers[.cacheControl] == openID.headers[.cacheControl])
            #expect(oauth.json == openID.json)
            // RFC 8414 §3.3: the issuer in the document is the one the document was asked of.
            #expect(oauth.json["issuer"] == "https://latch.test")
            // OpenID Connect Discovery 1.0 §3: absent means true; both are refused at /oauth2/authorize.
            #expect(openID.json["request_uri_parameter_supported"] == .bool(false))
            #expect(openID.json["request_parameter_supported"] == .bool(false))
        }
    }

    @Test("UserInfo reads the access token from the Authorization header only: one in the form body or the query is not accepted")
    func userInfoTokenInHeaderOnly() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let tokens = try await client.signInFederated()
            #expect(try await client.get("/oauth2/userinfo", bearer: tokens.accessToken).status == .ok)
            let form = try await client.postForm("/oauth2/userinfo", [("access_token", tokens.accessToken)])
            #expect(form.status == .unauthorized && form.code == "invalid_token", "\(form.json)")
            let query = try await client.get("/oauth2/userinfo?access_token=" + tokens.accessToken)
            #expect(query.status == .unauthorized && query.code == "invalid_token", "\(query.json)")
        }
    }

    /// Validates both metadata documents with Authlib's relying-party models: `OpenIDProviderMetadata` (with the
    /// RP-Initiated Logout and RFC 9207 extensions) and RFC 8414's `AuthorizationServerMetadata`. Authlib's Python
    /// objects also read the defaults of absent members (e.g. `request_uri_parameter_supported` means true).
    static let authlibScript = """
        import json, sys
        from authlib.oidc.discovery import OpenIDProviderMetadata
        from authlib.oidc import rpinitiated
        from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
        from authlib.oauth2 import rfc9207
        openid, oauth, skipped = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3:]

        class Checked(OpenIDProviderMetadata):
            pass

        for rule in skipped:
            setattr(Checked, "validate_" + rule, lambda self: None)
        metadata = Checked(openid)
        metadata.validate(metadata_classes=[rpinitiated.OpenIDProviderMetadata, rfc9207.AuthorizationServerMetadata])
        AuthorizationServerMetadata(oauth).validate(metadata_classes=[rfc9207.AuthorizationServerMetadata])
        assert metadata.request_uri_parameter_supported is False, "request_uri_parameter_supported"
        assert metadata.request_parameter_supported is False, "request_parameter_supported"
        assert metadata.response_types_supported == ["code"], metadata.response_types_supported
        print("valid")
        """

    /// Runs ``authlibScript`` on the deployment's two documents, skipping Authlib's rules named in `skipping` (a test
    /// calling it takes `.requires(.authlib)`).
    static func validateWithAuthlib(_ client: Client, skipping: [String] = []) async throws {
        try await Peer.authlib.require()
        let openID = String(decoding: try await client.get("/.well-known/openid-configuration").body, as: UTF8.self)
        let oauth = String(decoding: try await client.get("/.well-known/oauth-authorization-server").body, as: UTF8.self)
        let (status, output) = try await ChildProcess.run("/usr/bin/env", ["python3", "-c", authlibScript, openID, oauth] + skipping)
        #expect(status == 0, "\(output)")
        #expect(output.contains("valid"), "\(output)")
    }

    @Test(
        "A third-party relying-party library (Authlib) accepts both metadata documents, every rule included (RS256 among the ID token algorithms)",
        .requires(.authlib))
    func authlibAcceptsTheMetadata() async throws {
        try await Deployment.make().run { client in
            try await Self.validateWithAuthlib(client)
        }
    }
}
