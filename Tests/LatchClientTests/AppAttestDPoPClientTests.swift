import Crypto
import Foundation
import LatchApp
import LatchAttestation
import LatchClient
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// An App Attest "device" for tests: keys in memory, attestations and assertions from the test attestation authority
/// (whose root the server trusts with test keys on).
final class TestAppAttestProvider: AppAttestProvider {
    let authority: TestAttestationAuthority
    let appID: String
    private let state = Locked<(keys: [String: P256.Signing.PrivateKey], counter: UInt32)>(([:], 0))

    init(authority: TestAttestationAuthority, appID: String) {
        self.authority = authority
        self.appID = appID
    }

    func generateKey() async throws -> String {
        let key = P256.Signing.PrivateKey()
        let id = Data(SHA256.hash(data: key.publicKey.x963Representation)).base64EncodedString()
        state.withLock { $0.keys[id] = key }
        return id
    }

    func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        guard let key = state.withLock({ $0.keys[keyId] }) else { throw CancellationError() }
        return Data(try authority.appAttestAttestation(
            deviceKey: key.publicKey, appID: appID, environment: .production, clientDataHash: Array(clientDataHash), now: Date()))
    }

    func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        let (key, counter) = state.withLock { state -> (P256.Signing.PrivateKey?, UInt32) in
            state.counter += 1
            return (state.keys[keyId], state.counter)
        }
        guard let key else { throw CancellationError() }
        return Data(try TestAttestationAuthority.appAttestAssertion(deviceKey: key, appID: appID, counter: counter, clientDataHash: Array(clientDataHash)))
    }
}

@Suite("UserClient App Attest with attested DPoP")
struct AppAttestDPoPClientTests {
    static let appID = "ABCDE12345.com.example.app"

    /// A live server trusting a test attestation authority, its default client set up for the app `appID` (App Attest
    /// in production) with the DPoP policy given, and an App Attest "device" of that authority.
    static func appAttestLatch(
        dpop: String? = nil, dpopAttested: Bool? = nil, _ body: @Sendable (LiveLatch, TestAppAttestProvider) async throws -> Void
    ) async throws {
        let authority = try TestAttestationAuthority.create(now: Date())
        let folder = TemporaryDirectory()
        defer { folder.remove() }
        let root = folder.path + "/root.pem"
        try authority.rootPEM.write(toFile: root, atomically: true, encoding: .utf8)
        try await LiveLatch.run(configure: { $0.testAttestationRootFile = root }) { latch in
            let patch = AdminClientPatch(
                ios: AdminIOSEvidence(appIds: [appID], appAttestEnvironment: "production"), dpop: dpop, dpopAttested: dpopAttested)
            let patched = try await DPoPClientTests.admin(latch, "PATCH", "admin/v1/clients/default", body: patch)
            #expect(patched.status == 200, "\(String(decoding: patched.body, as: UTF8.self))")
            try await body(latch, TestAppAttestProvider(authority: authority, appID: appID))
        }
    }

    @Test("An App Attest device signs in under attested DPoP: its assertion vouches for the SDK's own key, the tokens are bound to it (amr hwk)")
    func vouchedKey() async throws {
        try await Self.appAttestLatch(dpop: "required", dpopAttested: true) { latch, provider in
            let client = try latch.device()
            _ = try await client.registerWithAppAttest(provider)
            let tokens = try await client.signInWithAppAttest(provider)
            #expect(tokens.tokenType == "DPoP")
            let jkt = try ParsedJWS(tokens.accessToken).claims["cnf"]?["jkt"]?.stringValue
            let own = await client.dpopKeyThumbprint()
            #expect(jkt != nil && jkt == own)
            #expect(try ParsedJWS(tokens.idToken).claims["amr"] == ["hwk"])
            // Bound: Latch's own endpoints work through the SDK, and a refresh proves the same key.
            #expect(try await client.userInfo()["sub"] != nil)
            let refreshed = try await client.refreshTokens()
            #expect(try ParsedJWS(refreshed.accessToken).claims["cnf"]?["jkt"]?.stringValue == jkt)
        }
    }
}
