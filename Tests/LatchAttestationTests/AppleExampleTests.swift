import Crypto
import Foundation
import LatchAttestation
import LatchModel
import Testing
import X509

/// App Attest evidence made by Apple: the examples of Apple's validation guide and a real device's attestation and
/// assertion, verified against Apple's App Attest root at their documented times.
@Suite struct AppleExampleTests {
    static let apple = CertificateChainValidator(anchors: try! TrustAnchors(pem: KnownRoots.appleAppAttestation))

    static func date(_ iso: String) -> Date { try! Date(iso, strategy: .iso8601) }

    func verify(
        _ base64: String, keyID: String, clientDataHash: [UInt8], app: AppAttest.App, at date: Date
    ) throws(AttestationFailure) -> AppAttest.VerifiedAttestation {
        var trace = AttestationTrace()
        return try AppAttest.verifyAttestation(
            Array(Data(base64Encoded: base64, options: .ignoreUnknownCharacters)!), keyID: Array(Data(base64Encoded: keyID)!),
            clientDataHash: clientDataHash, apps: [app], chains: Self.apple, at: date, trace: &trace)
    }

    @Test("Apple's 2024 guide example verifies at 2024-04-18 with the raw challenge as clientDataHash")
    func guide2024() throws {
        let app = AppAttest.App(appID: "0352187391.com.apple.example_app_attest", environment: .production)
        let verified = try verify(
            AppleExamples.attestation2024, keyID: AppleExamples.keyID2024, clientDataHash: Array("test_server_challenge".utf8), app: app,
            at: Self.date("2024-04-18T12:00:00Z"))
        #expect(verified.receipt.count == 3877)
        #expect(Data(SHA256.hash(data: verified.publicKey.x963Representation)).base64EncodedString() == AppleExamples.keyID2024)
        // The hash of the challenge is not what the example's app passed; the day after the leaf expired, nothing verifies.
        #expect(throws: AttestationFailure(.attestationChallengeMismatch, step: "4 nonce", "")) {
            try verify(
                AppleExamples.attestation2024, keyID: AppleExamples.keyID2024, clientDataHash: Array(SHA256.hash(data: Array("test_server_challenge".utf8))),
                app: app, at: Self.date("2024-04-18T12:00:00Z"))
        }
        #expect(throws: AttestationFailure(.attestationUntrusted, step: "1 certificate chain", "")) {
            try verify(
                AppleExamples.attestation2024, keyID: AppleExamples.keyID2024, clientDataHash: Array("test_server_challenge".utf8), app: app,
                at: Self.date("2024-04-21T12:00:00Z"))
        }
        #expect(throws: AttestationFailure(.attestationEnvironmentMismatch, step: "8 environment", "")) {
            try verify(
                AppleExamples.attestation2024, keyID: AppleExamples.keyID2024, clientDataHash: Array("test_server_challenge".utf8),
                app: .init(appID: app.appID, environment: .development), at: Self.date("2024-04-18T12:00:00Z"))
        }
    }

    @Test("Apple's 2026 guide example verifies at 2026-04-21 (its authenticator data carries unflagged extensions)")
    func guide2026() throws {
        let app = AppAttest.App(appID: "1234567890.com.example.myapp", environment: .production)
        _ = try verify(
            AppleExamples.attestation2026, keyID: AppleExamples.keyID2026, clientDataHash: Array("example_server_challenge".utf8), app: app,
            at: Self.date("2026-04-21T12:00:00Z"))
    }

    @Test("A real device's attestation and its later assertion verify; the assertion's counter must exceed the stored one")
    func device2021() throws {
        let app = AppAttest.App(appID: "6MURL8TA57.de.vincent-haupert.apple-appattest-poc", environment: .development)
        let clientDataHash = Array(SHA256.hash(data: Array("wurzelpfropf".utf8)))
        let verified = try verify(
            AppleExamples.deviceAttestation2021, keyID: AppleExamples.deviceKeyID2021, clientDataHash: clientDataHash, app: app,
            at: Self.date("2021-01-24T12:00:00Z"))
        let assertion = Array(Data(base64Encoded: AppleExamples.deviceAssertion2021)!)
        var trace = AttestationTrace()
        let asserted = try AppAttest.verifyAssertion(
            assertion, clientDataHash: clientDataHash, publicKey: verified.publicKey, apps: [app], previousCounter: 0, trace: &trace)
        #expect(asserted.counter == 1)
        #expect(throws: AttestationFailure(.attestationCounterInvalid, step: "5 counter", "")) {
            var trace = AttestationTrace()
            _ = try AppAttest.verifyAssertion(
                assertion, clientDataHash: clientDataHash, publicKey: verified.publicKey, apps: [app], previousCounter: 1, trace: &trace)
        }
        #expect(throws: AttestationFailure(.attestationUntrusted, step: "3 signature", "")) {
            var trace = AttestationTrace()
            _ = try AppAttest.verifyAssertion(
                assertion, clientDataHash: Array(SHA256.hash(data: Array("wurzel".utf8))), publicKey: verified.publicKey, apps: [app],
                previousCounter: 0, trace: &trace)
        }
    }
}
