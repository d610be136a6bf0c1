import Foundation
import HTTPTypes
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
import LatchServer
import LatchSQLite
import LatchTesting
import Testing

/// A hostile or malformed request and the answer it must get.
struct BadInput: Sendable, CustomTestStringConvertible {
    let name: String
    let status: HTTPResponse.Status
    let code: String
    /// Builds the request given the client (so tokens can use the deployment's clock).
    let send: @Sendable (Client) async throws -> Reply

    var testDescription: String { name }
}

/// Mints a federated assertion with claims changed by `edit`.
func assertion(_ client: Client, header: [String: JSONValue] = [:], key: PrivateKey = TestKeys.rsa, _ edit: (inout [String: JSONValue]) -> Void = { _ in }) throws -> String {
    var builder = Assertions.federated(issuer: "acme", keyID: "k1", subject: "alice", now: client.deployment.now)
    builder.header.merge(header) { _, new in new }
    edit(&builder.claims)
    return try builder.sign(with: key)
}

func tokenRequest(_ client: Client, _ assertion: String) async throws -> Reply {
    try await client.token(assertion: assertion)
}

let badTokenRequests: [BadInput] = [
    BadInput(name: "webauthn grant without a credential", status: .badRequest, code: "invalid_request") {
        try await $0.postForm("/oauth2/token", [("grant_type", GrantType.webauthn), ("ceremony_id", "lfc_x")])
    },
    BadInput(name: "webauthn grant with a ceremony Latch did not issue", status: .badRequest, code: "invalid_grant") {
        try await $0.postForm("/oauth2/token", [("grant_type", GrantType.webauthn), ("ceremony_id", "lfc_a.9999999999.auth..b"), ("credential", "{}")])
    },
    BadInput(name: "webauthn grant whose credential is not JSON", status: .badRequest, code: "invalid_request") { client in
        let options = try await client.postJSON("/v1/fido/authentication/options", FidoAuthenticationOptionsRequest())
        return try await client.postForm(
            "/oauth2/token",
            [("grant_type", GrantType.webauthn), ("ceremony_id", options.json["ceremonyId"]?.stringValue ?? ""), ("credential", "not json")])
    },
    BadInput(name: "no grant_type", status: .badRequest, code: "invalid_request") { try await $0.postForm("/oauth2/token", [("assertion", "x")]) },
    BadInput(name: "unknown grant_type", status: .badRequest, code: "unsupported_grant_type") { try await $0.postForm("/oauth2/token", [("grant_type", "password")]) },
    BadInput(name: "repeated parameter", status: .badRequest, code: "invalid_request") {
        try await $0.send(.post, "/oauth2/token", headers: [.contentType: "application/x-www-form-urlencoded"], body: "grant_type=refresh_token&grant_type=refresh_token")
    },
    BadInput(name: "bad percent-encoding", status: .badRequest, code: "invalid_request") {
        try await $0.send(.post, "/oauth2/token", headers: [.contentType: "application/x-www-form-urlencoded"], body: "grant_type=%zz")
    },
    BadInput(name: "JSON body at the token endpoint", status: .badRequest, code: "invalid_request") {
        try await $0.send(.post, "/oauth2/token", headers: [.contentType: "application/json"], body: "{}")
    },
    BadInput(name: "oversized body at the token endpoint", status: .badRequest, code: "invalid_request") {
        try await $0.postForm("/oauth2/token", [("grant_type", GrantType.jwtBearer), ("assertion", String(repeating: "a", count: 70_000))])
    },
    BadInput(name: "missing assertion", status: .badRequest, code: "invalid_request") { try await $0.postForm("/oauth2/token", [("grant_type", GrantType.jwtBearer)]) },
    BadInput(name: "missing refresh_token", status: .badRequest, code: "invalid_request") { try await $0.postForm("/oauth2/token", [("grant_type", "refresh_token")]) },
    BadInput(name: "unknown refresh token", status: .badRequest, code: "invalid_grant") { try await $0.refresh("lrt_nope") },
    BadInput(name: "unknown scope", status: .badRequest, code: "invalid_scope") {
        try await $0.postForm("/oauth2/token", [("grant_type", GrantType.jwtBearer), ("assertion", try assertion($0)), ("scope", "openid admin")])
    },
    BadInput(name: "assertion over 8 KiB", status: .badRequest, code: "invalid_grant") {
        try await tokenRequest($0, try assertion($0) { $0["pad"] = .string(String(repeating: "p", count: 9000)) })
    },
    BadInput(name: "alg none", status: .badRequest, code: "invalid_grant") { client in
        var builder = Assertions.federated(issuer: "acme", keyID: "k1", subject: "alice", now: client.deployment.now)
        builder.header["alg"] = "none"
        return try await tokenRequest(client, builder.unsigned())
    },
    BadInput(name: "HS256 keyed with the issuer's public key", status: .badRequest, code: "invalid_grant") { client in
        var builder = Assertions.federated(issuer: "acme", keyID: "k1", subject: "alice", now: client.deployment.now)
        builder.header["alg"] = "HS256"
        builder.header["typ"] = "JWT"
        let input = Base64URL.encode(JSONValue.object(builder.header).serialized()) + "." + Base64URL.encode(JSONValue.object(builder.claims).serialized())
        let mac = HMACSHA256.mac(key: Array(TestKeys.rsa.publicKey.pemRepresentation.utf8), message: Array(input.utf8))
        return try await tokenRequest(client, input + "." + Base64URL.encode(mac))
    },
    BadInput(name: "ES256 header on the RS256 issuer key", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0, key: TestKeys.p256)) },
    BadInput(name: "signed by another key", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0, key: TestKeys.rsa2)) },
    BadInput(name: "jwk header", status: .badRequest, code: "invalid_grant") {
        try await tokenRequest($0, try assertion($0, header: ["jwk": .object(["kty": "RSA"])]))
    },
    BadInput(name: "jku header", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0, header: ["jku": "https://evil.example/jwks"])) },
    BadInput(name: "x5u header", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0, header: ["x5u": "https://evil.example/cert"])) },
    BadInput(name: "crit header", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0, header: ["crit": ["exp"]])) },
    BadInput(name: "no kid", status: .badRequest, code: "invalid_grant") { client in
        var builder = Assertions.federated(issuer: "acme", keyID: "k1", subject: "alice", now: client.deployment.now)
        builder.header["kid"] = nil
        return try await tokenRequest(client, try builder.sign(with: TestKeys.rsa))
    },
    BadInput(name: "unknown kid", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0, header: ["kid": "k2"])) },
    BadInput(name: "millisecond iat/exp", status: .badRequest, code: "invalid_grant") { client in
        let ms = client.deployment.now * 1000
        return try await tokenRequest(client, try assertion(client) { $0["iat"] = .int(ms); $0["exp"] = .int(ms + 300_000) })
    },
    BadInput(name: "iat as a string", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0) { $0["iat"] = "now" }) },
    BadInput(name: "missing exp", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0) { $0["exp"] = nil }) },
    BadInput(name: "missing iat", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0) { $0["iat"] = nil }) },
    BadInput(name: "missing jti", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0) { $0["jti"] = nil }) },
    BadInput(name: "missing sub", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0) { $0["sub"] = nil }) },
    BadInput(name: "wrong aud", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0) { $0["aud"] = "someone-else" }) },
    BadInput(name: "aud as a number", status: .badRequest, code: "invalid_grant") { try await tokenRequest($0, try assertion($0) { $0["aud"] = 7 }) },
    BadInput(name: "expired beyond skew", status: .badRequest, code: "invalid_grant") { client in
        let now = client.deployment.now
        return try await tokenRequest(client, try assertion(client) { $0["iat"] = .int(now - 400); $0["exp"] = .int(now - 61) })
    },
    BadInput(name: "iat in the future", status: .badRequest, code: "invalid_grant") { client in
        let now = client.deployment.now
        return try await tokenRequest(client, try assertion(client) { $0["iat"] = .int(now + 120); $0["exp"] = .int(now + 300) })
    },
    BadInput(name: "lifetime over the issuer's cap", status: .badRequest, code: "invalid_grant") { client in
        let now = client.deployment.now
        return try await tokenRequest(client, try assertion(client) { $0["exp"] = .int(now + 3601) })
    },
    BadInput(name: "nbf in the future", status: .badRequest, code: "invalid_grant") { client in
        let now = client.deployment.now
        return try await tokenRequest(client, try assertion(client) { $0["nbf"] = .int(now + 200) })
    },
    BadInput(name: "unknown client", status: .unauthorized, code: "invalid_client") {
        try await $0.postForm("/oauth2/token", [("grant_type", GrantType.jwtBearer), ("assertion", try assertion($0)), ("client_id", "ghost")])
    },
]

/// A JSON body as UTF-16LE (ASCII text interleaved with NUL bytes), which JSONDecoder alone would accept.
func utf16LE(_ text: String) -> String { String(text.flatMap { [$0, "\u{0}"] }) }

let badRegistrations: [BadInput] = [
    BadInput(name: "duplicate member name", status: .badRequest, code: "invalid_json") {
        try await $0.send(.post, "/v1/registrations", headers: [.contentType: "application/json"], body: #"{"challengeType":"FSSO","answer":"a.b.c","answer":"d.e.f"}"#)
    },
    BadInput(name: "trailing comma", status: .badRequest, code: "invalid_json") {
        try await $0.send(.post, "/v1/registrations", headers: [.contentType: "application/json"], body: #"{"challengeType":"FSSO","answer":"a.b.c",}"#)
    },
    BadInput(name: "UTF-16 body", status: .badRequest, code: "invalid_json") {
        try await $0.send(.post, "/v1/registrations", headers: [.contentType: "application/json"], body: utf16LE(#"{"challengeType":"FSSO","answer":"a.b.c"}"#))
    },
    BadInput(name: "null registrationId", status: .badRequest, code: "invalid_json") {
        try await $0.send(.post, "/v1/registrations", headers: [.contentType: "application/json"], body: #"{"challengeType":"FSSO","answer":"a.b.c","registrationId":null}"#)
    },
    BadInput(name: "challenge: duplicate username", status: .badRequest, code: "invalid_json") {
        try await $0.send(.post, "/v1/sign-in/challenge", headers: [.contentType: "application/json"], body: #"{"username":"a","username":"b"}"#)
    },
    BadInput(name: "malformed JSON", status: .badRequest, code: "invalid_json") {
        try await $0.send(.post, "/v1/registrations", headers: [.contentType: "application/json"], body: "{\"challengeType\": ")
    },
    BadInput(name: "empty body", status: .badRequest, code: "invalid_json") { try await $0.send(.post, "/v1/registrations", body: nil) },
    BadInput(name: "missing answer", status: .badRequest, code: "invalid_json") {
        try await $0.send(.post, "/v1/registrations", headers: [.contentType: "application/json"], body: #"{"challengeType":"FSSO"}"#)
    },
    BadInput(name: "answer of the wrong type", status: .badRequest, code: "invalid_json") {
        try await $0.send(.post, "/v1/registrations", headers: [.contentType: "application/json"], body: #"{"challengeType":"FSSO","answer":5}"#)
    },
    BadInput(name: "oversized body", status: .contentTooLarge, code: "request_too_large") {
        try await $0.send(.post, "/v1/registrations", headers: [.contentType: "application/json"], body: #"{"challengeType":"FSSO","answer":""# + String(repeating: "a", count: 70_000) + #""}"#)
    },
    BadInput(name: "unknown challenge type", status: .badRequest, code: "unsupported_challenge_type") {
        try await $0.postJSON("/v1/registrations", RegistrationRequest(challengeType: .init(rawValue: "MAGIC"), answer: "x"))
    },
    BadInput(name: "DEVICE_CHECK without a build type", status: .badRequest, code: "invalid_input") {
        try await $0.postJSON("/v1/registrations", RegistrationRequest(challengeType: .deviceCheck, answer: "x"))
    },
    BadInput(name: "DEVICE_CHECK when no app has DeviceCheck credentials", status: .badRequest, code: "attestation_app_mismatch") {
        try await $0.postJSON(
            "/v1/registrations",
            RegistrationRequest(
                challengeType: .deviceCheck, answer: "AAAA",
                publicKey: RegistrationPublicKey(keyId: "k", algorithm: "ES256", publicKey: TestKeys.p256.publicKey.pemRepresentation), buildType: "release"))
    },
    BadInput(name: "APP_ATTEST without a keyId", status: .badRequest, code: "invalid_input") {
        try await $0.postJSON("/v1/registrations", RegistrationRequest(challengeType: .appAttest, answer: "x", challenge: "lrc_a.1.b"))
    },
    BadInput(name: "APP_ATTEST with a challenge Latch did not issue", status: .badRequest, code: "invalid_challenge") {
        try await $0.postJSON(
            "/v1/registrations",
            RegistrationRequest(challengeType: .appAttest, answer: "AAAA", challenge: "lrc_forged.9999999999.AAAA", keyId: Data(count: 32).base64EncodedString()))
    },
    BadInput(name: "APP_ATTEST whose attestation is not CBOR", status: .badRequest, code: "attestation_malformed") { client in
        let challenge = try await client.postJSON("/v1/registrations/challenge", RegistrationChallengeRequest(challengeType: .appAttest))
        return try await client.postJSON(
            "/v1/registrations",
            RegistrationRequest(
                challengeType: .appAttest, answer: Data("not cbor".utf8).base64EncodedString(), challenge: challenge.json["challenge"]?.stringValue,
                keyId: Data(count: 32).base64EncodedString()))
    },
    BadInput(name: "FIDO sign-in options for a username that cannot be one", status: .badRequest, code: "invalid_input") {
        try await $0.postJSON("/v1/fido/authentication/options", FidoAuthenticationOptionsRequest(username: String(repeating: "x", count: 300)))
    },
    BadInput(name: "FIDO registration without a sign-in", status: .unauthorized, code: "invalid_token") {
        try await $0.postJSON("/v1/fido/registration/options", [String: String]())
    },
    BadInput(name: "a registration challenge for a type that takes none", status: .badRequest, code: "unsupported_challenge_type") {
        try await $0.postJSON("/v1/registrations/challenge", RegistrationChallengeRequest(challengeType: .fsso))
    },
    BadInput(name: "PLAY_INTEGRITY without a package name", status: .badRequest, code: "invalid_input") {
        try await $0.postJSON("/v1/registrations", RegistrationRequest(challengeType: .playIntegrity, answer: "x"))
    },
    BadInput(name: "PLAY_INTEGRITY for an app Latch does not know", status: .badRequest, code: "attestation_app_mismatch") {
        try await $0.postJSON(
            "/v1/registrations",
            RegistrationRequest(
                challengeType: .playIntegrity, answer: "x",
                publicKey: RegistrationPublicKey(keyId: "k", algorithm: "ES256", publicKey: TestKeys.p256.publicKey.pemRepresentation),
                packageName: "com.unknown.app"))
    },
    BadInput(name: "ANDROID_KEY whose answer is not a JSON array", status: .badRequest, code: "attestation_malformed") { client in
        let challenge = try await client.postJSON("/v1/registrations/challenge", RegistrationChallengeRequest(challengeType: .androidKey))
        return try await client.postJSON(
            "/v1/registrations",
            RegistrationRequest(
                challengeType: .androidKey, answer: "{}", publicKey: RegistrationPublicKey(keyId: "k", algorithm: "ES256", publicKey: ""),
                challenge: challenge.json["challenge"]?.stringValue))
    },
    BadInput(name: "ANDROID_KEY whose certificates are not DER", status: .badRequest, code: "attestation_malformed") { client in
        let challenge = try await client.postJSON("/v1/registrations/challenge", RegistrationChallengeRequest(challengeType: .androidKey))
        return try await client.postJSON(
            "/v1/registrations",
            RegistrationRequest(
                challengeType: .androidKey, answer: #"["AAAA","AAAA"]"#, publicKey: RegistrationPublicKey(keyId: "k", algorithm: "ES256", publicKey: ""),
                challenge: challenge.json["challenge"]?.stringValue))
    },
    BadInput(name: "an ANDROID_KEY challenge used for APP_ATTEST", status: .badRequest, code: "invalid_challenge") { client in
        let challenge = try await client.postJSON("/v1/registrations/challenge", RegistrationChallengeRequest(challengeType: .androidKey))
        return try await client.postJSON(
            "/v1/registrations",
            RegistrationRequest(
                challengeType: .appAttest, answer: "AAAA", challenge: challenge.json["challenge"]?.stringValue,
                keyId: Data(count: 32).base64EncodedString()))
    },
    BadInput(name: "FSSO answer that is not a JWT", status: .badRequest, code: "invalid_proof") {
        try await $0.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: "hello"))
    },
    BadInput(name: "FSSO with alg none", status: .badRequest, code: "invalid_proof") { client in
        var builder = Assertions.federated(issuer: "acme", keyID: "k1", subject: "mallory", now: client.deployment.now)
        builder.header["alg"] = "none"
        return try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: builder.unsigned()))
    },
    BadInput(name: "FSSO with a device key", status: .badRequest, code: "invalid_input") {
        try await $0.postJSON(
            "/v1/registrations",
            RegistrationRequest(challengeType: .fsso, answer: try assertion($0), publicKey: RegistrationPublicKey(keyId: "k", algorithm: "ES256", publicKey: "x")))
    },
    BadInput(name: "FSSO with millisecond times", status: .badRequest, code: "invalid_proof") { client in
        let ms = client.deployment.now * 1000
        return try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: try assertion(client) { $0["iat"] = .int(ms); $0["exp"] = .int(ms + 1000) }))
    },
    BadInput(name: "TEST without publicKey", status: .badRequest, code: "invalid_input") {
        try await $0.postJSON("/v1/registrations", RegistrationRequest(challengeType: .test, answer: "a.b.c"))
    },
    BadInput(name: "TEST with bad PEM", status: .badRequest, code: "invalid_public_key") {
        try await $0.postJSON(
            "/v1/registrations",
            RegistrationRequest(challengeType: .test, answer: "a.b.c", publicKey: RegistrationPublicKey(keyId: "k", algorithm: "RS256", publicKey: "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----")))
    },
    BadInput(name: "TEST with bad base64", status: .badRequest, code: "invalid_public_key") {
        try await $0.postJSON(
            "/v1/registrations", RegistrationRequest(challengeType: .test, answer: "a.b.c", publicKey: RegistrationPublicKey(keyId: "k", algorithm: "ES256", publicKey: "%%%")))
    },
    BadInput(name: "TEST with an unsupported key algorithm", status: .badRequest, code: "invalid_public_key") {
        try await $0.postJSON(
            "/v1/registrations",
            RegistrationRequest(challengeType: .test, answer: "a.b.c", publicKey: RegistrationPublicKey(keyId: "k", algorithm: "HS256", publicKey: TestKeys.p256.publicKey.pemRepresentation)))
    },
    BadInput(name: "TEST with an EC key named RS256", status: .badRequest, code: "invalid_public_key") {
        try await $0.postJSON(
            "/v1/registrations",
            RegistrationRequest(challengeType: .test, answer: "a.b.c", publicKey: RegistrationPublicKey(keyId: "k", algorithm: "RS256", publicKey: TestKeys.p256.publicKey.pemRepresentation)))
    },
    BadInput(name: "TEST signed by an unknown test key", status: .badRequest, code: "invalid_proof") { client in
        let answer = try Assertions.testRegistration(keyID: "nope", subject: "u", now: client.deployment.now).sign(with: TestKeys.rsa)
        return try await client.postJSON(
            "/v1/registrations",
            RegistrationRequest(challengeType: .test, answer: answer, publicKey: RegistrationPublicKey(keyId: "k", algorithm: "ES256", publicKey: TestKeys.p256.publicKey.pemRepresentation)))
    },
    BadInput(name: "registrationId with spaces", status: .badRequest, code: "invalid_input") {
        try await $0.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: try assertion($0), registrationId: "a b"))
    },
    BadInput(name: "challenge without username", status: .badRequest, code: "invalid_json") {
        try await $0.send(.post, "/v1/sign-in/challenge", headers: [.contentType: "application/json"], body: "{}")
    },
    BadInput(name: "challenge with an empty username", status: .badRequest, code: "invalid_input") { try await $0.postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: "")) },
]

let badAdminRequests: [BadInput] = [
    BadInput(name: "evidence with an App ID that is not TEAMID.bundleId", status: .badRequest, code: "invalid_input") {
        try await $0.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(ios: AdminIOSEvidence(appIds: ["com.example.app"])))
    },
    BadInput(name: "evidence with an unknown App Attest environment", status: .badRequest, code: "invalid_input") {
        try await $0.admin(
            .patch, "/admin/v1/clients/default", AdminClientPatch(ios: AdminIOSEvidence(appIds: ["ABCDE12345.com.x"], appAttestEnvironment: "staging")))
    },
    BadInput(name: "evidence with a DeviceCheck key that is not a P-256 PEM", status: .badRequest, code: "invalid_public_key") {
        try await $0.admin(
            .patch, "/admin/v1/clients/default",
            AdminClientPatch(ios: AdminIOSEvidence(appIds: ["ABCDE12345.com.x"], deviceCheck: AdminDeviceCheck(teamId: "ABCDE12345", keyId: "KEY1234567", privateKey: "nope"))))
    },
    BadInput(name: "evidence with a package name that is not one", status: .badRequest, code: "invalid_input") {
        try await $0.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(android: AdminAndroidEvidence(packageNames: ["not a package"])))
    },
    BadInput(name: "evidence with a Play Integrity key of the wrong size", status: .badRequest, code: "invalid_input") {
        try await $0.admin(
            .patch, "/admin/v1/clients/default",
            AdminClientPatch(
                android: AdminAndroidEvidence(
                    packageNames: ["com.example.app"],
                    playIntegrity: AdminPlayIntegrity(decryptionKey: Data(count: 16).base64EncodedString(), verificationKey: "AAAA"))))
    },
    BadInput(name: "evidence for an unknown client", status: .notFound, code: "not_found") {
        try await $0.admin(.patch, "/admin/v1/clients/ghost", AdminClientPatch(ios: AdminIOSEvidence(appIds: [])))
    },
    BadInput(name: "an empty evidence patch", status: .badRequest, code: "invalid_input") { try await $0.adminRaw(.patch, "/admin/v1/clients/default", "{}") },
    BadInput(name: "a signing certificate that is not a SHA-256", status: .badRequest, code: "invalid_input") {
        try await $0.admin(.post, "/admin/v1/clients/default/signing-certificates", AdminSigningCertificateRequest(sha256: "abcd"))
    },
    BadInput(name: "a signing certificate for an unknown client", status: .notFound, code: "not_found") {
        try await $0.admin(.post, "/admin/v1/clients/ghost/signing-certificates", AdminSigningCertificateRequest(sha256: String(repeating: "a", count: 64)))
    },
    BadInput(name: "deleting a signing certificate that is not there", status: .notFound, code: "not_found") {
        try await $0.admin(.delete, "/admin/v1/clients/default/signing-certificates/" + String(repeating: "a", count: 64))
    },
    BadInput(name: "admin token with a null name", status: .badRequest, code: "invalid_json") { try await $0.adminRaw(.post, "/admin/v1/tokens", #"{"name":null}"#) },
    BadInput(name: "test key with a null keyId", status: .badRequest, code: "invalid_json") { try await $0.adminRaw(.post, "/admin/v1/test-keys", #"{"keyId":null}"#) },
    BadInput(name: "issuer with duplicate members", status: .badRequest, code: "invalid_json") {
        try await $0.adminRaw(.post, "/admin/v1/issuers", #"{"name":"a","name":"b","keyId":"k","publicKey":"x"}"#)
    },
    BadInput(name: "client with a 300-character name", status: .badRequest, code: "invalid_input") {
        try await $0.adminRaw(.post, "/admin/v1/clients", #"{"clientId":"x","name":"\#(String(repeating: "n", count: 300))"}"#)
    },
    BadInput(name: "client with a trailing comma", status: .badRequest, code: "invalid_json") { try await $0.adminRaw(.post, "/admin/v1/clients", #"{"id":"x",}"#) },
    BadInput(name: "no admin token", status: .unauthorized, code: "unauthorized") { try await $0.send(.get, "/admin/v1/users") },
    BadInput(name: "wrong admin token", status: .unauthorized, code: "unauthorized") { try await $0.send(.get, "/admin/v1/users", headers: [.authorization: "Bearer wrong-token-0123456789"]) },
    BadInput(name: "an access token is not an admin token", status: .unauthorized, code: "unauthorized") { client in
        try await client.send(.get, "/admin/v1/users", headers: [.authorization: "Bearer \(try await client.signInFederated().accessToken)"])
    },
    BadInput(name: "issuer with a bad PEM", status: .badRequest, code: "invalid_public_key") {
        try await $0.admin(.post, "/admin/v1/issuers", AdminSignOnIssuerRequest(name: "x", keyId: "k", publicKey: "junk"))
    },
    BadInput(name: "issuer copying a registered claim", status: .badRequest, code: "invalid_input") {
        try await $0.admin(.post, "/admin/v1/issuers", AdminSignOnIssuerRequest(name: "x", keyId: "k", publicKey: TestKeys.rsa.publicKey.pemRepresentation, allowedClaims: ["sub"]))
    },
    BadInput(name: "issuer key twice", status: .conflict, code: "conflict") {
        try await $0.admin(.post, "/admin/v1/issuers", AdminSignOnIssuerRequest(name: "acme", keyId: "k1", publicKey: TestKeys.rsa.publicKey.pemRepresentation))
    },
    BadInput(name: "issuer with an absurd maxLifetime", status: .badRequest, code: "invalid_input") {
        try await $0.admin(.post, "/admin/v1/issuers", AdminSignOnIssuerRequest(name: "y", keyId: "k", publicKey: TestKeys.rsa.publicKey.pemRepresentation, maxLifetime: 0))
    },
    BadInput(name: "user page limit out of range", status: .badRequest, code: "invalid_input") { try await $0.admin(.get, "/admin/v1/users?limit=0") },
    BadInput(name: "unknown user", status: .notFound, code: "not_found") { try await $0.admin(.get, "/admin/v1/users/ghost") },
    BadInput(name: "delete an unknown test key", status: .notFound, code: "not_found") { try await $0.admin(.delete, "/admin/v1/test-keys/ghost") },
    BadInput(name: "unknown path", status: .notFound, code: "not_found") { try await $0.admin(.get, "/admin/v1/nothing") },
    BadInput(name: "test key with an unknown algorithm", status: .badRequest, code: "invalid_input") {
        try await $0.admin(.post, "/admin/v1/test-keys", AdminTestKeyRequest(algorithm: "HS256"))
    },
]

@Suite("Bad input: a clear 4xx code, never a 5xx, and nothing written")
struct BadInputTests {
    /// Tables whose row counts must not change when a request is refused.
    static let tables = [
        "users", "sessions", "used_jtis", "registrations", "device_keys", "issuer_keys", "test_keys", "clients", "signing_certificates",
    ]

    func check(_ input: BadInput) async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            var before: [String: Int64] = [:]
            for table in Self.tables { before[table] = try await client.deployment.count(table) }
            let reply = try await input.send(client)
            #expect(reply.status == input.status, "\(input.name): \(String(decoding: reply.body, as: UTF8.self))")
            #expect(reply.code == input.code, "\(input.name): \(String(decoding: reply.body, as: UTF8.self))")
            #expect(reply.json["error_description"]?.stringValue?.isEmpty == false)
            #expect(reply.headers[.contentType] == "application/json")
            // A sign-in done by the case itself (the admin-token case) opens a session; nothing else may change.
            for table in Self.tables where !(input.name.contains("access token") && ["sessions", "used_jtis"].contains(table)) {
                #expect(try await client.deployment.count(table) == before[table], "\(input.name) wrote to \(table)")
            }
        }
    }

    @Test("Token endpoint", arguments: badTokenRequests)
    func token(_ input: BadInput) async throws { try await check(input) }

    @Test("Registration and challenge", arguments: badRegistrations)
    func registration(_ input: BadInput) async throws { try await check(input) }

    @Test("Admin API", arguments: badAdminRequests)
    func admin(_ input: BadInput) async throws { try await check(input) }

    @Test("Test keys switched off answer challenge_type_disabled")
    func testKeysDisabled() async throws {
        try await Deployment.make({ $0.registration.testKeysEnabled = false }).run { client in
            let reply = try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .test, answer: "a.b.c"))
            #expect(reply.status == .forbidden && reply.code == "challenge_type_disabled")
        }
    }

    @Test("A closed database answers 503 temporarily_unavailable, not 500 and not 200")
    func storeUnavailable() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let assertion = try client.federatedAssertion()
            client.deployment.store.close()
            let reply = try await client.token(assertion: assertion)
            #expect(reply.status == .serviceUnavailable && reply.code == "temporarily_unavailable")
            #expect(reply.headers[.retryAfter] != nil)
            #expect(try await client.get("/health/ready").status == .serviceUnavailable)
        }
    }
}

/// HMAC-SHA256 for forging "HMAC with the public key" tokens (RFC 8725 §2.1).
enum HMACSHA256 {
    static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        LatchTesting.hmacSHA256(key: key, message: message)
    }
}
