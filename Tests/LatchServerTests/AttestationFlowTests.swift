import Crypto
import Foundation
import HTTPTypes
import LatchApp
import LatchAttestation
import LatchCore
import LatchJOSE
import LatchModel
import LatchSQLite
import LatchTesting
import Testing
import X509

/// Device attestation end to end over HTTP: evidence in the real formats under a test root the deployment trusts
/// while test keys are on, against apps configured through the admin API.
@Suite("Device attestation over HTTP")
struct AttestationFlowTests {
    static let start = Date(timeIntervalSince1970: 1_790_000_000)
    static let appID = "ABCDE12345.com.example.app"
    static let packageName = "com.example.app"
    static let signingCertificate = Array(SHA256.hash(data: Array("the app's signing certificate".utf8)))

    /// A deployment trusting a fresh test root, its default client configured for iOS and Android.
    static func withDeployment(
        _ configure: @escaping (inout LatchConfiguration) -> Void = { _ in },
        _ body: @Sendable (Client, TestAttestationAuthority, PlayKeys) async throws -> Void
    ) async throws {
        let authority = try TestAttestationAuthority.create(now: start)
        let folder = TemporaryDirectory()
        defer { folder.remove() }
        let rootFile = folder.path + "/root.pem"
        try authority.rootPEM.write(toFile: rootFile, atomically: true, encoding: .utf8)
        let play = PlayKeys()
        try await Deployment.make {
            $0.testAttestationRootFile = rootFile
            configure(&$0)
        }.run { client in
            let patch = AdminClientPatch(
                ios: AdminIOSEvidence(appIds: [appID], appAttestEnvironment: "production"),
                android: AdminAndroidEvidence(
                    packageNames: [packageName],
                    playIntegrity: AdminPlayIntegrity(
                        decryptionKey: play.decryption.withUnsafeBytes { Data($0) }.base64EncodedString(),
                        verificationKey: play.signing.publicKey.derRepresentation.base64EncodedString())))
            let patched = try await client.admin(.patch, "/admin/v1/clients/default", patch)
            #expect(patched.status == .ok, "\(String(decoding: patched.body, as: UTF8.self))")
            // Secrets are write-only.
            #expect(!String(decoding: patched.body, as: UTF8.self).contains(play.decryption.withUnsafeBytes { Data($0) }.base64EncodedString()))
            #expect(patched.json["android"]?["playIntegrity"]?["hasDecryptionKey"] == .bool(true))
            let added = try await client.admin(
                .post, "/admin/v1/clients/default/signing-certificates", AdminSigningCertificateRequest(sha256: Hex.encode(signingCertificate)))
            #expect(added.status == .created)
            try await body(client, authority, play)
        }
    }

    struct PlayKeys: Sendable {
        let decryption = SymmetricKey(size: .bits256)
        let signing = P256.Signing.PrivateKey()
    }

    static func challenge(_ client: Client, _ type: RegistrationMethod) async throws -> String {
        let reply = try await client.postJSON("/v1/registrations/challenge", RegistrationChallengeRequest(challengeType: type))
        #expect(reply.status == .ok, "\(String(decoding: reply.body, as: UTF8.self))")
        return try reply.decode(RegistrationChallengeResponse.self).challenge
    }

    @Test("App Attest: register with an attestation, sign in with assertions; counters only grow, challenges and nonces are single-use")
    func appAttest() async throws {
        try await Self.withDeployment { client, authority, _ in
            let discovery = try await client.get("/.well-known/openid-configuration")
            #expect(discovery.json["registration_proof_types_supported"]?.arrayValue?.contains(.string("APP_ATTEST")) == true)
            #expect(discovery.json["grant_types_supported"]?.arrayValue?.contains(.string(GrantType.appAttest)) == true)

            let deviceKey = P256.Signing.PrivateKey()
            let keyID = Data(SHA256.hash(data: deviceKey.publicKey.x963Representation)).base64EncodedString()
            let challenge = try await Self.challenge(client, .appAttest)
            let attestation = try authority.appAttestAttestation(
                deviceKey: deviceKey.publicKey, appID: Self.appID, environment: .production,
                clientDataHash: Array(SHA256.hash(data: Array(challenge.utf8))), now: client.deployment.clock.now)
            let request = RegistrationRequest(
                challengeType: .appAttest, answer: Data(attestation).base64EncodedString(), registrationId: UUID().uuidString, challenge: challenge,
                keyId: keyID)
            let registered = try await client.postJSON("/v1/registrations", request)
            #expect(registered.status == .created, "\(String(decoding: registered.body, as: UTF8.self))")
            let user = try registered.decode(RegistrationResponse.self)
            // The same request again answers the same user (idempotent); the challenge with another id is spent.
            #expect(try await client.postJSON("/v1/registrations", request).decode(RegistrationResponse.self) == user)
            var again = request
            again.registrationId = UUID().uuidString
            let replay = try await client.postJSON("/v1/registrations", again)
            #expect(replay.status == .badRequest && replay.code == "invalid_challenge", "\(String(decoding: replay.body, as: UTF8.self))")

            func signIn(counter: UInt32, nonce: String? = nil) async throws -> (Reply, String) {
                var nonce = nonce ?? ""
                if nonce.isEmpty {
                    nonce = try await client.postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: user.username))
                        .decode(SignInChallengeResponse.self).nonce
                }
                let clientData = Array(#"{"challenge":"\#(nonce)"}"#.utf8)
                let assertion = try TestAttestationAuthority.appAttestAssertion(
                    deviceKey: deviceKey, appID: Self.appID, counter: counter, clientData: clientData)
                let reply = try await client.postForm(
                    "/oauth2/token",
                    [
                        ("grant_type", GrantType.appAttest), ("key_id", keyID), ("assertion", Base64URL.encode(Data(assertion))),
                        ("client_data", Base64URL.encode(Data(clientData))),
                    ])
                return (reply, nonce)
            }
            let (first, nonce) = try await signIn(counter: 1)
            #expect(first.status == .ok, "\(String(decoding: first.body, as: UTF8.self))")
            let tokens = try first.decode(TokenResponse.self)
            let claims = try verifyAgainstJWKS(tokens.idToken, jwks: try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self))
            #expect(claims["sub"]?.stringValue == user.userId && claims["amr"] == ["hwk"])
            // The same nonce again (counter 2): the nonce is spent.
            let (reusedNonce, _) = try await signIn(counter: 2, nonce: nonce)
            #expect(reusedNonce.status == .badRequest && reusedNonce.code == "invalid_grant")
            // A new nonce with a counter that does not grow.
            let (stale, _) = try await signIn(counter: 1)
            #expect(stale.status == .badRequest && stale.code == "invalid_grant", "\(String(decoding: stale.body, as: UTF8.self))")
            #expect(stale.json["error_description"]?.stringValue?.contains("counter") == true)
            let (next, _) = try await signIn(counter: 7)
            #expect(next.status == .ok)
            #expect(try await client.deployment.store.deviceKey(userID: user.userId, keyID: keyID)?.attestation?.signCount == 7)
        }
    }

    @Test("Android key attestation: register the attested key, sign in with it; wrong package, certificate or boot state are refused")
    func androidKey() async throws {
        try await Self.withDeployment { client, authority, _ in
            let deviceKey = P256.Signing.PrivateKey()
            func register(packageName: String = Self.packageName, digest: [UInt8] = Self.signingCertificate, verifiedBoot: Bool = true) async throws -> Reply {
                let challenge = try await Self.challenge(client, .androidKey)
                let chain = try authority.androidKeyChain(
                    deviceKey: .init(deviceKey.publicKey), challenge: Array(challenge.utf8), packageName: packageName, signatureDigest: digest,
                    verifiedBoot: verifiedBoot, now: client.deployment.clock.now)
                let answer = String(decoding: try JSONEncoder().encode(chain.map { Data($0).base64EncodedString() }), as: UTF8.self)
                return try await client.postJSON(
                    "/v1/registrations",
                    RegistrationRequest(
                        challengeType: .androidKey, answer: answer, registrationId: UUID().uuidString,
                        publicKey: RegistrationPublicKey(keyId: "android-1", algorithm: "ES256", publicKey: ""), challenge: challenge))
            }
            #expect(try await register(packageName: "com.example.other").code == "attestation_app_mismatch")
            #expect(try await register(digest: Array(repeating: 1, count: 32)).code == "attestation_app_mismatch")
            #expect(try await register(verifiedBoot: false).code == "attestation_policy_failed")
            let registered = try await register()
            #expect(registered.status == .created, "\(String(decoding: registered.body, as: UTF8.self))")
            let user = try registered.decode(RegistrationResponse.self)
            let signedIn = try await client.signInWithKey(username: user.username, deviceKey: PrivateKey(p256: deviceKey), deviceKeyID: "android-1")
            #expect(signedIn.status == .ok, "\(String(decoding: signedIn.body, as: UTF8.self))")
        }
    }

    @Test("Play Integrity: a verdict binding the challenge and the key registers it; stale, unrecognised or rebound verdicts do not")
    func playIntegrity() async throws {
        try await Self.withDeployment { client, _, play in
            let deviceKey = P256.Signing.PrivateKey()
            let publicKey = RegistrationPublicKey(keyId: "play-1", algorithm: "ES256", publicKey: PublicKey(p256: deviceKey.publicKey).pemRepresentation)
            func register(age: TimeInterval = 0, recognition: String = "PLAY_RECOGNIZED", otherKey: Bool = false) async throws -> Reply {
                let challenge = try await Self.challenge(client, .playIntegrity)
                let boundKey = otherKey ? P256.Signing.PrivateKey().publicKey : deviceKey.publicKey
                let token = try TestAttestationAuthority.playIntegrityToken(
                    packageName: Self.packageName,
                    requestHash: PlayIntegrity.bindingRequestHash(challenge: challenge, publicKeySPKI: Array(boundKey.derRepresentation)),
                    certificateDigest: Self.signingCertificate, timestamp: client.deployment.clock.now.addingTimeInterval(-age),
                    decryptionKey: play.decryption, signingKey: play.signing, appRecognitionVerdict: recognition)
                return try await client.postJSON(
                    "/v1/registrations",
                    RegistrationRequest(
                        challengeType: .playIntegrity, answer: token, registrationId: UUID().uuidString, publicKey: publicKey,
                        packageName: Self.packageName, challenge: challenge))
            }
            #expect(try await register(age: 600).code == "integrity_token_stale")
            #expect(try await register(recognition: "UNRECOGNIZED_VERSION").code == "integrity_app_unrecognized")
            #expect(try await register(otherKey: true).code == "attestation_challenge_mismatch")
            let registered = try await register()
            #expect(registered.status == .created, "\(String(decoding: registered.body, as: UTF8.self))")
            let user = try registered.decode(RegistrationResponse.self)
            let signedIn = try await client.signInWithKey(username: user.username, deviceKey: PrivateKey(p256: deviceKey), deviceKeyID: "play-1")
            #expect(signedIn.status == .ok)
        }
    }

    @Test("Play Integrity in deviceId mode (Sudo's SDK): the request hash is the device id; the token itself is spent")
    func playIntegrityDeviceIdMode() async throws {
        try await Self.withDeployment { client, _, play in
            let mode = try await client.admin(
                .patch, "/admin/v1/clients/default",
                AdminClientPatch(android: AdminAndroidEvidence(packageNames: [Self.packageName], requestHashMode: "deviceId")))
            #expect(mode.json["android"]?["requestHashMode"] == .string("deviceId"))
            // The Play Integrity keys were kept (omitted from the patch).
            #expect(mode.json["android"]?["playIntegrity"]?["hasDecryptionKey"] == .bool(true))
            let deviceKey = P256.Signing.PrivateKey()
            let token = try TestAttestationAuthority.playIntegrityToken(
                packageName: Self.packageName, requestHash: "android-id-1234", certificateDigest: Self.signingCertificate,
                timestamp: client.deployment.clock.now, decryptionKey: play.decryption, signingKey: play.signing)
            func register(deviceId: String) async throws -> Reply {
                try await client.postJSON(
                    "/v1/registrations",
                    RegistrationRequest(
                        challengeType: .playIntegrity, answer: token, registrationId: UUID().uuidString,
                        publicKey: RegistrationPublicKey(keyId: "p", algorithm: "ES256", publicKey: PublicKey(p256: deviceKey.publicKey).pemRepresentation),
                        deviceId: deviceId, packageName: Self.packageName))
            }
            #expect(try await register(deviceId: "another-id").code == "attestation_challenge_mismatch")
            #expect(try await register(deviceId: "android-id-1234").status == .created)
            #expect(try await register(deviceId: "android-id-1234").code == "invalid_proof")
        }
    }

    @Test("With test keys off the test root is not trusted: test evidence is refused as untrusted")
    func testRootNeedsTestKeys() async throws {
        try await Self.withDeployment({ $0.registration.testKeysEnabled = false }) { client, authority, _ in
            let deviceKey = P256.Signing.PrivateKey()
            let challenge = try await Self.challenge(client, .appAttest)
            let attestation = try authority.appAttestAttestation(
                deviceKey: deviceKey.publicKey, appID: Self.appID, environment: .production,
                clientDataHash: Array(SHA256.hash(data: Array(challenge.utf8))), now: client.deployment.clock.now)
            let reply = try await client.postJSON(
                "/v1/registrations",
                RegistrationRequest(
                    challengeType: .appAttest, answer: Data(attestation).base64EncodedString(), challenge: challenge,
                    keyId: Data(SHA256.hash(data: deviceKey.publicKey.x963Representation)).base64EncodedString()))
            #expect(reply.status == .badRequest && reply.code == "attestation_untrusted")
        }
    }

    @Test("An App ID or package name belongs to one client; a patch keeps the stored App Attest environment")
    func evidenceBelongsToOneClient() async throws {
        try await Self.withDeployment { client, _, _ in
            #expect(try await client.admin(.post, "/admin/v1/clients", AdminClientRequest(clientId: "other")).status == .created)
            let taken = try await client.admin(.patch, "/admin/v1/clients/other", AdminClientPatch(ios: AdminIOSEvidence(appIds: [Self.appID])))
            #expect(taken.status == .conflict && taken.code == "conflict")
            let package = try await client.admin(.patch, "/admin/v1/clients/other", AdminClientPatch(android: AdminAndroidEvidence(packageNames: [Self.packageName])))
            #expect(package.status == .conflict)
            _ = try await client.admin(
                .patch, "/admin/v1/clients/default", AdminClientPatch(ios: AdminIOSEvidence(appIds: [Self.appID], appAttestEnvironment: "development")))
            let kept = try await client.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(ios: AdminIOSEvidence(appIds: [Self.appID, "ABCDE12345.com.x"])))
            #expect(kept.json["ios"]?["appAttestEnvironment"] == .string("development"))
        }
    }

    @Test("Signing certificates are owned by the admin account that adds them: deleting it lists them first, then deletes them with it")
    func ownedCertificates() async throws {
        try await Self.withDeployment { client, _, _ in
            let account = try await client.admin(.post, "/admin/v1/admins", AdminAccountRequest(username: "ops", role: .admin)).decode(AdminAccountInfo.self)
            let created = try await client.admin(.post, "/admin/v1/tokens", AdminTokenRequest(name: "ops", accountId: account.id))
                .decode(AdminTokenCreated.self)
            #expect(created.accountId == account.id && created.role == .admin)
            let sha = String(repeating: "ab", count: 32)
            let added = try await client.send(
                .post, "/admin/v1/clients/default/signing-certificates", headers: [.authorization: "Bearer \(created.token)", .contentType: "application/json"],
                body: #"{"sha256":"\#(sha)"}"#)
            #expect(added.status == .created && added.json["owner"]?.stringValue == account.id)
            // Revoking the token leaves the account's resources alone.
            #expect(try await client.admin(.delete, "/admin/v1/tokens/\(created.id)").status == .noContent)
            let refused = try await client.admin(.delete, "/admin/v1/admins/\(account.id)")
            #expect(refused.status == .conflict && refused.json["error_description"]?.stringValue?.contains(sha) == true)
            #expect(try await client.admin(.delete, "/admin/v1/admins/\(account.id)?deleteOwned=true").status == .noContent)
            let remaining = try await client.admin(.get, "/admin/v1/clients/default/signing-certificates").decode(AdminSigningCertificateList.self)
            #expect(remaining.signingCertificates.map(\.sha256) == [Hex.encode(Self.signingCertificate)])
        }
    }
}
