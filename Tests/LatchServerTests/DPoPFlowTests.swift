import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import LatchApp
import LatchAttestation
import LatchCore
import LatchJOSE
import LatchModel
@testable import LatchSQLite
import LatchTesting
import Testing
import X509

/// RFC 9449 over HTTP: the token endpoint's proof checks one by one, tokens bound to the key (`cnf.jkt`,
/// `token_type: DPoP`), refresh bound across rotation, Latch's own resource endpoints with the DPoP scheme, server
/// nonces, per-client policy (off / allowed / required, attested), and a proof made by a third-party library.
@Suite("DPoP over HTTP")
struct DPoPFlowTests {
    static let tokenURL = "https://latch.test/oauth2/token"

    /// A DPoP proof by `key` for the token endpoint, at the deployment's time unless told otherwise.
    static func proof(
        _ key: PrivateKey, _ deployment: Deployment, method: String = "POST", url: String = tokenURL, accessToken: String? = nil, nonce: String? = nil,
        jti: String = UUID().uuidString, iat: Int64? = nil
    ) throws -> String {
        try DPoP.proof(key: key, method: method, url: url, accessToken: accessToken, nonce: nonce, jti: jti, issuedAt: iat ?? deployment.now)
    }

    /// A form POST to the token endpoint with `DPoP` header values.
    static func token(_ client: Client, _ parameters: [(String, String)], proofs: [String]) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        for proof in proofs { headers.append(HTTPField(name: HTTPField.Name("DPoP")!, value: proof)) }
        let body = parameters.map { "\($0.0.formEscaped)=\($0.1.formEscaped)" }.joined(separator: "&")
        return try await client.send(.post, "/oauth2/token", headers: headers, body: body)
    }

    static func federated(_ client: Client, subject: String = "alice") throws -> [(String, String)] {
        [("grant_type", GrantType.jwtBearer), ("assertion", try client.federatedAssertion(subject: subject))]
    }

    /// `GET /v1/me` with a token and scheme (and proofs).
    static func me(_ client: Client, token: String, scheme: String = "DPoP", proofs: [String] = []) async throws -> Reply {
        var headers: HTTPFields = [.authorization: "\(scheme) \(token)"]
        for proof in proofs { headers.append(HTTPField(name: HTTPField.Name("DPoP")!, value: proof)) }
        return try await client.send(.get, "/v1/me", headers: headers)
    }

    @Test("A proof binds the tokens: token_type DPoP, cnf.jkt = the key's thumbprint; /v1/me needs the DPoP scheme and a proof with ath; the refresh token is bound across rotations")
    func bound() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let key = try PrivateKey.generate(.ES256)
            var reply = try await Self.token(client, try Self.federated(client), proofs: [try Self.proof(key, deployment)])
            #expect(reply.status == .ok, "\(reply.json)")
            #expect(reply.json["token_type"]?.stringValue == "DPoP")
            let access = try #require(reply.json["access_token"]?.stringValue)
            let refresh = try #require(reply.json["refresh_token"]?.stringValue)
            let claims = try ParsedJWS(access).claims
            #expect(claims["cnf"]?["jkt"]?.stringValue == key.publicKey.thumbprint)

            // Latch's own resource: DPoP scheme + a proof for this request over this token.
            let meURL = "https://latch.test/v1/me"
            reply = try await Self.me(client, token: access, proofs: [try Self.proof(key, deployment, method: "GET", url: meURL, accessToken: access)])
            #expect(reply.status == .ok, "\(reply.json)")
            // As Bearer: refused. Without a proof, a wrong ath, another key, a replayed proof: refused (401, DPoP challenge).
            reply = try await Self.me(client, token: access, scheme: "Bearer")
            #expect(reply.status == .unauthorized && reply.code == "invalid_token")
            reply = try await Self.me(client, token: access)
            #expect(reply.status == .unauthorized && reply.code == "invalid_dpop_proof")
            #expect(reply.headers[.wwwAuthenticate]?.hasPrefix("DPoP error=\"invalid_dpop_proof\"") == true)
            reply = try await Self.me(client, token: access, proofs: [try Self.proof(key, deployment, method: "GET", url: meURL, accessToken: "another")])
            #expect(reply.code == "invalid_dpop_proof")
            let other = try PrivateKey.generate(.ES256)
            reply = try await Self.me(client, token: access, proofs: [try Self.proof(other, deployment, method: "GET", url: meURL, accessToken: access)])
            #expect(reply.code == "invalid_dpop_proof")
            let once = try Self.proof(key, deployment, method: "GET", url: meURL, accessToken: access)
            #expect(try await Self.me(client, token: access, proofs: [once]).status == .ok)
            #expect(try await Self.me(client, token: access, proofs: [once]).code == "invalid_dpop_proof")

            // Refresh: another key or none is refused and changes nothing; the right key rotates, and the binding stays.
            let sessions = try await deployment.count("sessions")
            reply = try await Self.token(client, [("grant_type", "refresh_token"), ("refresh_token", refresh)], proofs: [try Self.proof(other, deployment)])
            #expect(reply.code == "invalid_dpop_proof" && reply.status == .badRequest)
            reply = try await Self.token(client, [("grant_type", "refresh_token"), ("refresh_token", refresh)], proofs: [])
            #expect(reply.code == "invalid_dpop_proof")
            reply = try await Self.token(client, [("grant_type", "refresh_token"), ("refresh_token", refresh)], proofs: [try Self.proof(key, deployment)])
            #expect(reply.status == .ok, "\(reply.json)")
            #expect(reply.json["token_type"]?.stringValue == "DPoP")
            let rotated = try #require(reply.json["refresh_token"]?.stringValue)
            reply = try await Self.token(client, [("grant_type", "refresh_token"), ("refresh_token", rotated)], proofs: [try Self.proof(other, deployment)])
            #expect(reply.code == "invalid_dpop_proof")
            reply = try await Self.token(client, [("grant_type", "refresh_token"), ("refresh_token", rotated)], proofs: [try Self.proof(key, deployment)])
            #expect(reply.status == .ok)
            #expect(try await deployment.count("sessions") == sessions)
            let latest = try #require(reply.json["refresh_token"]?.stringValue)
            let discovery = try await client.get("/.well-known/openid-configuration").json
            #expect(discovery["dpop_signing_alg_values_supported"] == ["ES256", "ES384", "RS256"])
            // Introspection (RFC 9449 §6.2) shows the binding of the access and the refresh token.
            let server = try await client.admin(.post, "/admin/v1/resource-servers", AdminResourceServerRequest(name: "api")).json
            let basic = Data("\(server["clientId"]?.stringValue ?? ""):\(server["clientSecret"]?.stringValue ?? "")".utf8).base64EncodedString()
            for token in [access, latest] {
                let introspected = try await client.send(
                    .post, "/oauth2/introspect", headers: [.authorization: "Basic \(basic)", .contentType: "application/x-www-form-urlencoded"],
                    body: "token=\(token.formEscaped)")
                #expect(introspected.json["cnf"]?["jkt"]?.stringValue == key.publicKey.thumbprint, "\(introspected.json)")
            }
        }
    }

    @Test("RFC 9449 §4.3 one by one at the token endpoint: each bad proof is invalid_dpop_proof and opens no session", arguments: BadProof.allCases)
    func badProof(_ bad: BadProof) async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let key = try PrivateKey.generate(.ES256)
            let proofs = try bad.proofs(key, deployment)
            let before = try await deployment.count("sessions")
            let reply = try await Self.token(client, try Self.federated(client), proofs: proofs)
            #expect(reply.status == .badRequest && reply.code == "invalid_dpop_proof", "\(bad): \(reply.status) \(reply.json)")
            #expect(try await deployment.count("sessions") == before)
        }
    }

    enum BadProof: String, CaseIterable, CustomTestStringConvertible {
        case twoHeaders, notAJWT, wrongType, algNone, algHS256, privateKeyInJWK, symmetricJWK, badSignature, wrongMethod, wrongURL,
            wrongURLWithQuery, stale, future, noJTI, millisecondIAT, x5cHeader

        var testDescription: String { rawValue }

        func proofs(_ key: PrivateKey, _ deployment: Deployment) throws -> [String] {
            let now = deployment.now
            func good() throws -> String { try DPoPFlowTests.proof(key, deployment) }
            /// A proof with its header and claims changed, signed by `signer`.
            func tampered(
                header change: (inout [String: JSONValue]) -> Void = { _ in }, claims changeClaims: (inout [String: JSONValue]) -> Void = { _ in },
                signer: PrivateKey? = nil
            ) throws -> String {
                let parts = try good().split(separator: ".")
                var header = try JSONValue.parse(Base64URL.decode(String(parts[0])) ?? Data()).objectValue ?? [:]
                var claims = try JSONValue.parse(Base64URL.decode(String(parts[1])) ?? Data()).objectValue ?? [:]
                change(&header)
                changeClaims(&claims)
                let input = Base64URL.encode(JSONValue.object(header).serialized()) + "." + Base64URL.encode(JSONValue.object(claims).serialized())
                return input + "." + Base64URL.encode(try (signer ?? key).signature(for: Array(input.utf8)))
            }
            switch self {
            case .twoHeaders: return [try good(), try good()]
            case .notAJWT: return ["not.a.jwt"]
            case .wrongType: return [try tampered(header: { $0["typ"] = "JWT" })]
            case .algNone:
                let parts = try tampered(header: { $0["alg"] = "none" }).split(separator: ".")
                return ["\(parts[0]).\(parts[1])."]
            case .algHS256: return [try tampered(header: { $0["alg"] = "HS256" })]
            case .privateKeyInJWK: return [try tampered(header: { $0["jwk"]?.setMember("d", "AAAA") })]
            case .symmetricJWK: return [try tampered(header: { $0["jwk"] = ["kty": "oct", "k": "c2VjcmV0"] })]
            case .badSignature: return [try tampered(signer: try PrivateKey.generate(.ES256))]
            case .wrongMethod: return [try DPoPFlowTests.proof(key, deployment, method: "GET")]
            case .wrongURL: return [try DPoPFlowTests.proof(key, deployment, url: "https://latch.test/oauth2/revoke")]
            case .wrongURLWithQuery: return [try tampered(claims: { $0["htu"] = "https://latch.test/oauth2/tokens?x=1#f" })]
            case .stale: return [try DPoPFlowTests.proof(key, deployment, iat: now - 61)]
            case .future: return [try DPoPFlowTests.proof(key, deployment, iat: now + 61)]
            case .noJTI: return [try tampered(claims: { $0["jti"] = nil })]
            case .millisecondIAT: return [try tampered(claims: { $0["iat"] = .int(now * 1000) })]
            case .x5cHeader: return [try tampered(header: { $0["x5c"] = ["MIIB"] })]
            }
        }
    }

    @Test("htu is compared without query and fragment, scheme and host case and a default port; a replayed proof is refused")
    func normalisedAndReplay() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let key = try PrivateKey.generate(.ES256)
            for url in ["https://latch.test/oauth2/token?x=1#frag", "HTTPS://LATCH.TEST:443/oauth2/token"] {
                let reply = try await Self.token(client, try Self.federated(client), proofs: [try Self.proof(key, deployment, url: url)])
                #expect(reply.status == .ok, "\(url): \(reply.json)")
            }
            // Another host name: refused, naming the URL the server expected (a client on localhost against an
            // issuer at 127.0.0.1 learns why).
            let elsewhere = try await Self.token(client, try Self.federated(client), proofs: [try Self.proof(key, deployment, url: "https://localhost/oauth2/token")])
            #expect(
                elsewhere.code == "invalid_dpop_proof"
                    && elsewhere.json["error_description"]?.stringValue?.contains("this request's URL, https://latch.test/oauth2/token") == true,
                "\(elsewhere.json)")
            let once = try Self.proof(key, deployment)
            #expect(try await Self.token(client, try Self.federated(client), proofs: [once]).status == .ok)
            let replayed = try await Self.token(client, try Self.federated(client), proofs: [once])
            #expect(replayed.code == "invalid_dpop_proof" && replayed.json["error_description"]?.stringValue?.contains("used before") == true)
        }
    }

    @Test("Server nonces: without one use_dpop_nonce with a DPoP-Nonce header; a made-up one too; the given one works, also on /v1/me")
    func nonces() async throws {
        let deployment = try await Deployment.make { $0.dpopRequireNonce = true }
        try await deployment.run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let key = try PrivateKey.generate(.ES256)
            var reply = try await Self.token(client, try Self.federated(client), proofs: [try Self.proof(key, deployment)])
            #expect(reply.status == .badRequest && reply.code == "use_dpop_nonce")
            let nonce = try #require(reply.headers[HTTPField.Name("DPoP-Nonce")!])
            reply = try await Self.token(client, try Self.federated(client), proofs: [try Self.proof(key, deployment, nonce: "made-up")])
            #expect(reply.code == "use_dpop_nonce")
            reply = try await Self.token(client, try Self.federated(client), proofs: [try Self.proof(key, deployment, nonce: nonce)])
            #expect(reply.status == .ok, "\(reply.json)")
            let fresh = try #require(reply.headers[HTTPField.Name("DPoP-Nonce")!])
            let access = try #require(reply.json["access_token"]?.stringValue)
            let url = "https://latch.test/v1/me"
            reply = try await Self.me(client, token: access, proofs: [try Self.proof(key, deployment, method: "GET", url: url, accessToken: access)])
            #expect(reply.status == .unauthorized && reply.code == "use_dpop_nonce" && reply.headers[HTTPField.Name("DPoP-Nonce")!] != nil)
            reply = try await Self.me(
                client, token: access, proofs: [try Self.proof(key, deployment, method: "GET", url: url, accessToken: access, nonce: fresh)])
            #expect(reply.status == .ok)
            // A nonce lives its window and the next (5 to 10 minutes), then it is refused.
            deployment.clock.advance(by: 601)
            reply = try await Self.token(client, try Self.federated(client), proofs: [try Self.proof(key, deployment, nonce: nonce)])
            #expect(reply.code == "use_dpop_nonce")
        }
    }

    @Test("Client policy: off ignores the header; required refuses a request without a proof; attested binds only to the device key that signed in (amr swk for a test key)")
    func policy() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let key = try PrivateKey.generate(.ES256)
            func patch(_ body: AdminClientPatch) async throws {
                let reply = try await client.admin(.patch, "/admin/v1/clients/default", body)
                #expect(reply.status == .ok, "\(reply.json)")
            }
            try await patch(AdminClientPatch(dpop: "off"))
            var reply = try await Self.token(client, try Self.federated(client), proofs: [try Self.proof(key, deployment)])
            #expect(reply.status == .ok && reply.json["token_type"]?.stringValue == "Bearer")
            try await patch(AdminClientPatch(dpop: "required"))
            reply = try await Self.token(client, try Self.federated(client), proofs: [])
            #expect(reply.code == "invalid_dpop_proof")
            #expect(try await client.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(dpop: "sometimes")).code == "invalid_input")
            let shown = try await client.admin(.get, "/admin/v1/clients").json["clients"]?.arrayValue?.first
            #expect(shown?["dpop"]?.stringValue == "required" && shown?["dpopAttested"] == false)

            // Attested: a federated sign-in has no device key; the device's own key signs in and proves.
            try await patch(AdminClientPatch(dpopAttested: true))
            reply = try await Self.token(client, try Self.federated(client), proofs: [try Self.proof(key, deployment)])
            #expect(reply.code == "invalid_dpop_proof")
            let device = try PrivateKey.generate(.ES256)
            _ = try await client.registerWithTestKey(username: "dora", deviceKey: device)
            func deviceSignIn(proofKey: PrivateKey) async throws -> Reply {
                let challenge = try await client.postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: "dora"))
                    .decode(SignInChallengeResponse.self)
                let assertion = try Assertions.device(
                    username: "dora", keyID: "device-1", nonce: challenge.nonce, audience: challenge.audience, now: deployment.now
                ).sign(with: device)
                return try await Self.token(
                    client, [("grant_type", GrantType.jwtBearer), ("assertion", assertion)], proofs: [try Self.proof(proofKey, deployment)])
            }
            reply = try await deviceSignIn(proofKey: key)
            #expect(reply.code == "invalid_dpop_proof")
            reply = try await deviceSignIn(proofKey: device)
            #expect(reply.status == .ok, "\(reply.json)")
            let idToken = try ParsedJWS(try #require(reply.json["id_token"]?.stringValue)).claims
            #expect(idToken["amr"] == ["pop", "swk"])
            #expect(try ParsedJWS(try #require(reply.json["access_token"]?.stringValue)).claims["cnf"]?["jkt"]?.stringValue == device.publicKey.thumbprint)
        }
    }

    @Test("Attested DPoP with an Android key attestation: the attested key signs in and proves; the tokens are bound to it and amr says hwk")
    func attestedHardwareKey() async throws {
        try await AttestationFlowTests.withDeployment { client, authority, _ in
            let deployment = client.deployment
            let device = P256.Signing.PrivateKey()
            let challenge = try await AttestationFlowTests.challenge(client, .androidKey)
            let chain = try authority.androidKeyChain(
                deviceKey: .init(device.publicKey), challenge: Array(challenge.utf8), packageName: AttestationFlowTests.packageName,
                signatureDigest: AttestationFlowTests.signingCertificate, verifiedBoot: true, now: deployment.clock.now)
            let registered = try await client.postJSON(
                "/v1/registrations",
                RegistrationRequest(
                    challengeType: .androidKey, answer: String(decoding: try JSONEncoder().encode(chain.map { Data($0).base64EncodedString() }), as: UTF8.self),
                    registrationId: UUID().uuidString, publicKey: RegistrationPublicKey(keyId: "android-1", algorithm: "ES256", publicKey: ""),
                    challenge: challenge))
            #expect(registered.status == .created, "\(registered.json)")
            let username = try registered.decode(RegistrationResponse.self).username
            #expect(try await client.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(dpop: "required", dpopAttested: true)).status == .ok)
            let key = PrivateKey(p256: device)
            func signIn(proofKey: PrivateKey) async throws -> Reply {
                let nonce = try await client.postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: username))
                    .decode(SignInChallengeResponse.self)
                let assertion = try Assertions.device(username: username, keyID: "android-1", nonce: nonce.nonce, audience: nonce.audience, now: deployment.now)
                    .sign(with: key)
                return try await Self.token(
                    client, [("grant_type", GrantType.jwtBearer), ("assertion", assertion)], proofs: [try Self.proof(proofKey, deployment)])
            }
            #expect(try await signIn(proofKey: try PrivateKey.generate(.ES256)).code == "invalid_dpop_proof")
            let reply = try await signIn(proofKey: key)
            #expect(reply.status == .ok, "\(reply.json)")
            #expect(try ParsedJWS(try #require(reply.json["id_token"]?.stringValue)).claims["amr"] == ["pop", "hwk"])
            #expect(try ParsedJWS(try #require(reply.json["access_token"]?.stringValue)).claims["cnf"]?["jkt"]?.stringValue == key.publicKey.thumbprint)
        }
    }

    @Test("Attested DPoP with App Attest: the assertion vouches for the app's own key (dpop_jkt in client_data); a proof of it binds (amr hwk); none or another key is refused")
    func appAttestVouchedKey() async throws {
        try await AttestationFlowTests.withDeployment { client, authority, _ in
            let deployment = client.deployment
            let attested = P256.Signing.PrivateKey()
            let keyID = Data(SHA256.hash(data: attested.publicKey.x963Representation)).base64EncodedString()
            let challenge = try await AttestationFlowTests.challenge(client, .appAttest)
            let attestation = try authority.appAttestAttestation(
                deviceKey: attested.publicKey, appID: AttestationFlowTests.appID, environment: .production,
                clientDataHash: Array(SHA256.hash(data: Array(challenge.utf8))), now: deployment.clock.now)
            let registered = try await client.postJSON(
                "/v1/registrations",
                RegistrationRequest(
                    challengeType: .appAttest, answer: Data(attestation).base64EncodedString(), registrationId: UUID().uuidString, challenge: challenge,
                    keyId: keyID))
            #expect(registered.status == .created, "\(registered.json)")
            let username = try registered.decode(RegistrationResponse.self).username
            #expect(try await client.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(dpop: "required", dpopAttested: true)).status == .ok)
            let enclave = try PrivateKey.generate(.ES256)
            var counter: UInt32 = 0
            func signIn(vouching: String?, proofKey: PrivateKey) async throws -> Reply {
                counter += 1
                let nonce = try await client.postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: username))
                    .decode(SignInChallengeResponse.self).nonce
                var data: [String: JSONValue] = ["challenge": .string(nonce)]
                if let vouching { data["dpop_jkt"] = .string(vouching) }
                let clientData = JSONValue.object(data).serialized()
                let assertion = try TestAttestationAuthority.appAttestAssertion(
                    deviceKey: attested, appID: AttestationFlowTests.appID, counter: counter, clientData: clientData)
                return try await Self.token(
                    client,
                    [
                        ("grant_type", GrantType.appAttest), ("key_id", keyID), ("assertion", Base64URL.encode(Data(assertion))),
                        ("client_data", Base64URL.encode(Data(clientData))),
                    ], proofs: [try Self.proof(proofKey, deployment)])
            }
            #expect(try await signIn(vouching: nil, proofKey: enclave).code == "invalid_dpop_proof")
            #expect(try await signIn(vouching: enclave.publicKey.thumbprint, proofKey: try PrivateKey.generate(.ES256)).code == "invalid_dpop_proof")
            #expect(try await signIn(vouching: "not-a-thumbprint", proofKey: enclave).code == "invalid_grant")
            let reply = try await signIn(vouching: enclave.publicKey.thumbprint, proofKey: enclave)
            #expect(reply.status == .ok, "\(reply.json)")
            #expect(try ParsedJWS(try #require(reply.json["id_token"]?.stringValue)).claims["amr"] == ["hwk"])
            #expect(try ParsedJWS(try #require(reply.json["access_token"]?.stringValue)).claims["cnf"]?["jkt"]?.stringValue == enclave.publicKey.thumbprint)
        }
    }

    @Test("A proof made by a third-party library (Python joserfc) is accepted, and the token is bound to its key's thumbprint", .requires(.joserfc))
    func joserfcProof() async throws {
        try await Peer.joserfc.require()
        let deployment = try await Deployment.make()
        let script = """
            import json, sys, uuid
            from joserfc import jws
            from joserfc.jwk import ECKey
            key = ECKey.generate_key("P-256")
            public = key.as_dict(private=False)
            header = {"typ": "dpop+jwt", "alg": "ES256", "jwk": public}
            claims = {"jti": str(uuid.uuid4()), "htm": "POST", "htu": sys.argv[1], "iat": int(sys.argv[2])}
            print(json.dumps({"proof": jws.serialize_compact(header, json.dumps(claims), key), "thumbprint": key.thumbprint()}))
            """
        let (status, output) = try await ChildProcess.run("/usr/bin/env", ["python3", "-c", script, Self.tokenURL, String(deployment.now)])
        #expect(status == 0, "\(output)")
        let made = try JSONValue.parse(Data(output.utf8))
        let proof = try #require(made["proof"]?.stringValue)
        try await deployment.run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let reply = try await Self.token(client, try Self.federated(client), proofs: [proof])
            #expect(reply.status == .ok, "\(reply.json)")
            let access = try #require(reply.json["access_token"]?.stringValue)
            #expect(try ParsedJWS(access).claims["cnf"]?["jkt"] == made["thumbprint"])
        }
    }
}

extension JSONValue {
    /// Sets a member of an object value.
    mutating func setMember(_ name: String, _ value: JSONValue) {
        guard case .object(var members) = self else { return }
        members[name] = value
        self = .object(members)
    }
}
