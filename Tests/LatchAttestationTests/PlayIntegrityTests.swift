import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import Testing

@Suite struct PlayIntegrityTests {
    static let now = Date(timeIntervalSince1970: 1_795_000_000)
    static let decryptionKey = SymmetricKey(size: .bits256)
    static let signingKey = P256.Signing.PrivateKey()
    static let digest = Array(SHA256.hash(data: Array("signing certificate".utf8)))
    static let app = PlayIntegrity.App(
        packageName: "com.example.app", decryptionKey: decryptionKey, verificationKey: signingKey.publicKey, certificateDigests: [digest])
    static let requestHash = PlayIntegrity.bindingRequestHash(challenge: "lrc_abc", publicKeySPKI: Array(P256.Signing.PrivateKey().publicKey.derRepresentation))

    static func token(
        packageName: String = "com.example.app", requestHash: String = requestHash, digest: [UInt8] = digest, at: Date = now,
        key: SymmetricKey = decryptionKey, signer: P256.Signing.PrivateKey = signingKey, devices: [String] = ["MEETS_DEVICE_INTEGRITY"],
        recognition: String = "PLAY_RECOGNIZED"
    ) throws -> String {
        try TestAttestationAuthority.playIntegrityToken(
            packageName: packageName, requestHash: requestHash, certificateDigest: digest, timestamp: at, decryptionKey: key, signingKey: signer,
            deviceVerdicts: devices, appRecognitionVerdict: recognition)
    }

    func code(_ token: String, policy: PlayIntegrity.Policy = .init(), app: PlayIntegrity.App = app) -> String? {
        var trace = AttestationTrace()
        do {
            _ = try PlayIntegrity.verify(token, requestHash: Self.requestHash, app: app, policy: policy, now: Self.now, trace: &trace)
            return nil
        } catch {
            return error.code.rawValue
        }
    }

    @Test("A verdict in Google's format verifies in six traced steps")
    func verifies() throws {
        var trace = AttestationTrace()
        let verdict = try PlayIntegrity.verify(
            try Self.token(), requestHash: Self.requestHash, app: Self.app, policy: .init(), now: Self.now, trace: &trace)
        #expect(verdict.deviceLevel == .device)
        #expect(trace.steps.map(\.name) == ["1 decrypt", "2 signature", "3 request details", "4 app integrity", "5 device integrity", "6 licensing"])
    }

    @Test("Each failed check has its own code")
    func eachCheckItsCode() throws {
        #expect(code(try Self.token(key: SymmetricKey(size: .bits256))) == "attestation_untrusted")
        #expect(code(try Self.token(signer: P256.Signing.PrivateKey())) == "attestation_untrusted")
        #expect(code("a.b.c.d.e") == "attestation_malformed")
        #expect(code(try Self.token(packageName: "com.example.other")) == "attestation_app_mismatch")
        #expect(code(try Self.token(requestHash: "other")) == "attestation_challenge_mismatch")
        #expect(code(try Self.token(at: Self.now.addingTimeInterval(-301))) == "integrity_token_stale")
        #expect(code(try Self.token(at: Self.now.addingTimeInterval(120))) == "integrity_token_stale")
        #expect(code(try Self.token(recognition: "UNRECOGNIZED_VERSION")) == "integrity_app_unrecognized")
        #expect(code(try Self.token(digest: Array(repeating: 9, count: 32))) == "integrity_certificate_mismatch")
        #expect(code(try Self.token(devices: ["MEETS_BASIC_INTEGRITY"])) == "integrity_device_verdict")
        #expect(code(try Self.token(devices: [])) == "integrity_device_verdict")
        #expect(code(try Self.token(devices: ["MEETS_DEVICE_INTEGRITY"]), policy: .init(minimumDeviceLevel: .strong)) == "integrity_device_verdict")
        #expect(code(try Self.token(devices: ["MEETS_BASIC_INTEGRITY"]), policy: .init(minimumDeviceLevel: .basic)) == nil)
    }

    @Test("The binding request hash covers the challenge and the key")
    func binding() {
        let key = Array(P256.Signing.PrivateKey().publicKey.derRepresentation)
        let hash = PlayIntegrity.bindingRequestHash(challenge: "c", publicKeySPKI: key)
        #expect(hash == Base64URL.encode(Data(SHA256.hash(data: Array("c".utf8) + key))))
        #expect(hash != PlayIntegrity.bindingRequestHash(challenge: "d", publicKeySPKI: key))
        #expect(!hash.contains("="))
    }
}
