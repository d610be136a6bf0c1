import Hummingbird
import LatchCore
import LatchJOSE
import LatchModel

/// OpenID Provider metadata (OIDC Discovery 1.0 §3), also served as OAuth 2.0 Authorization Server Metadata (RFC 8414
/// §3); ``WellKnownDocuments`` answers it.
enum DiscoveryMetadata {
    /// `algorithms`: the ID token algorithms, the deployment's first (`id_token_signing_alg_values_supported`);
    /// `dpop`: whether DPoP proofs are accepted (RFC 9449 §5.1).
    static func document(
        issuer: String, algorithms: [String], scopes: [String], grantTypes: [String], proofTypes: [String], dpop: Bool = false
    ) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 1024)
        writer.beginObject()
        writer.member("issuer", issuer)
        writer.member("jwks_uri", issuer + "/.well-known/jwks.json")
        writer.member("authorization_endpoint", issuer + "/oauth2/authorize")
        // OpenID Connect RP-Initiated Logout 1.0 §2.1.
        writer.member("end_session_endpoint", issuer + "/oauth2/logout")
        writer.member("token_endpoint", issuer + "/oauth2/token")
        writer.member("userinfo_endpoint", issuer + "/oauth2/userinfo")
        writer.member("revocation_endpoint", issuer + "/oauth2/revoke")
        // RFC 8414 §2; resource servers authenticate with the credential the admin created for them.
        writer.member("introspection_endpoint", issuer + "/oauth2/introspect")
        writer.member("introspection_endpoint_auth_methods_supported", ["client_secret_basic"])
        writer.member("grant_types_supported", grantTypes)
        // Only what `/oauth2/authorize` accepts (RFC 8414 §2, OpenID Connect Discovery 1.0 §3): the code flow.
        // (`none`, OAuth 2.0 Multiple Response Type Encoding Practices §4, is refused there with
        // `unsupported_response_type`.)
        writer.member("response_types_supported", ["code"])
        writer.member("response_modes_supported", ["query"])
        // RFC 7636: S256 only (`plain` is refused, RFC 9700 §2.1.1).
        writer.member("code_challenge_methods_supported", ["S256"])
        // RFC 9207: every authorization response carries `iss`.
        writer.key("authorization_response_iss_parameter_supported")
        writer.write(JSONValue.bool(true))
        writer.member("prompt_values_supported", ["none", "login", "consent", "select_account"])
        // OpenID Connect Discovery 1.0 §3: an absent `request_uri_parameter_supported` means true, and
        // `/oauth2/authorize` refuses both `request_uri` and `request` (OpenID Connect Core 1.0 §6).
        writer.key("request_parameter_supported")
        writer.write(JSONValue.bool(false))
        writer.key("request_uri_parameter_supported")
        writer.write(JSONValue.bool(false))
        writer.member("subject_types_supported", ["public"])
        // ES256 by default, RS256 for clients registered with idTokenSignedResponseAlg RS256 (OpenID Connect
        // Discovery 1.0 §3 requires RS256 here).
        writer.member("id_token_signing_alg_values_supported", algorithms)
        writer.member("token_endpoint_auth_methods_supported", ["none"])
        if dpop { writer.member("dpop_signing_alg_values_supported", DPoP.algorithms.map(\.rawValue)) }
        writer.member("revocation_endpoint_auth_methods_supported", ["none"])
        writer.member("scopes_supported", scopes)
        // Latch's own: the user-registration proof types (`challengeType` of POST /v1/registrations) accepted here.
        // (Not `registration_endpoint`: that name is RFC 7591 dynamic client registration.)
        writer.member("registration_proof_types_supported", proofTypes)
        // Latch's own: the enabled custom identity providers (they change at run time, so a list of their own).
        writer.member("custom_registration_providers_endpoint", issuer + "/v1/custom-registrations/providers")
        writer.member(
            "claims_supported",
            ["iss", "sub", "aud", "iat", "exp", "auth_time", "amr", "sid", "username", "nonce", "consumers"])
        writer.endObject()
        return writer.bytes
    }
}
