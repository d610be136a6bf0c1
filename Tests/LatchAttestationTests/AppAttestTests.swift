import Crypto
import Foundation
import LatchAttestation
import LatchCBOR
import LatchModel
import Testing

@Suite struct AppAttestTests {
    static let now = Date(timeIntervalSince1970: 1_795_000_000)
    static let app = AppAttest.App(appID: "ABCDE12345.com.example.app", environment: .production)
    static let challenge = Array("registration-challenge".utf8)
    static let authority = try! TestAttestationAuthority.create(now: now)

    struct Fixture {
        let deviceKey = P256.Signing.PrivateKey()
        var keyID: [UInt8] { Array(SHA256.hash(data: deviceKey.publicKey.x963Representation)) }
        var clientDataHash: [UInt8] { Array(SHA256.hash(data: AppAttestTests.challenge)) }
        func attestation(environment: AppAttest.Environment = .production, appID: String = AppAttestTests.app.appID) throws -> [UInt8] {
            try AppAttestTests.authority.appAttestAttestation(
                deviceKey: deviceKey.publicKey, appID: appID, environment: environment, clientDataHash: clientDataHash, now: AppAttestTests.now)
        }
    }

    func verify(
        _ object: [UInt8], keyID: [UInt8], clientDataHash: [UInt8], apps: [AppAttest.App] = [app], at date: Date = now,
        anchors: TrustAnchors = authority.anchors
    ) throws(AttestationFailure) -> AppAttest.VerifiedAttestation {
        var trace = AttestationTrace()
        return try AppAttest.verifyAttestation(
            object, keyID: keyID, clientDataHash: clientDataHash, apps: apps, chains: CertificateChainValidator(anchors: anchors), at: date,
            trace: &trace)
    }

    @Test func aTestAuthorityAttestationVerifiesInEveryStep() throws {
        let fixture = Fixture()
        var trace = AttestationTrace()
        let verified = try AppAttest.verifyAttestation(
            try fixture.attestation(), keyID: fixture.keyID, clientDataHash: fixture.clientDataHash, apps: [Self.app],
            chains: CertificateChainValidator(anchors: Self.authority.anchors), at: Self.now, trace: &trace)
        #expect(verified.publicKey.rawRepresentation == fixture.deviceKey.publicKey.rawRepresentation)
        #expect(verified.app == Self.app)
        #expect(trace.steps.map(\.name) == [
            "attestation object", "1 certificate chain", "2 client data hash", "3 nonce extension", "4 nonce", "5 key id", "6 app id",
            "7 counter", "8 environment", "9 credential id",
        ])
        #expect(trace.steps.allSatisfy { $0.ok })
    }

    @Test func eachWrongInputFailsItsOwnStep() throws {
        let fixture = Fixture()
        let object = try fixture.attestation()
        func code(_ body: () throws -> AppAttest.VerifiedAttestation) -> String? {
            do {
                _ = try body()
                return nil
            } catch {
                return (error as? AttestationFailure)?.code.rawValue
            }
        }
        #expect(code { try verify(object, keyID: fixture.keyID, clientDataHash: Array(SHA256.hash(data: [1]))) } == "attestation_challenge_mismatch")
        #expect(code { try verify(object, keyID: Array(repeating: 7, count: 32), clientDataHash: fixture.clientDataHash) } == "attestation_key_mismatch")
        #expect(code {
            try verify(object, keyID: fixture.keyID, clientDataHash: fixture.clientDataHash, apps: [.init(appID: "OTHER.app", environment: .production)])
        } == "attestation_app_mismatch")
        #expect(code {
            try verify(object, keyID: fixture.keyID, clientDataHash: fixture.clientDataHash, apps: [.init(appID: Self.app.appID, environment: .development)])
        } == "attestation_environment_mismatch")
        #expect(code {
            try verify(object, keyID: fixture.keyID, clientDataHash: fixture.clientDataHash, at: Self.now.addingTimeInterval(400 * 86_400))
        } == "attestation_untrusted")
        let otherRoot = try TestAttestationAuthority.create(now: Self.now)
        #expect(code { try verify(object, keyID: fixture.keyID, clientDataHash: fixture.clientDataHash, anchors: otherRoot.anchors) } == "attestation_untrusted")
        #expect(code { try verify(Array(object.dropLast()), keyID: fixture.keyID, clientDataHash: fixture.clientDataHash) } == "attestation_malformed")
    }

    /// Flipping any one bit of the attestation object is refused (never a crash): the signed parts break the chain
    /// or the nonce, the rest break the CBOR or the checks.
    @Test func everyFlippedBitIsRefused() throws {
        let fixture = Fixture()
        let object = try fixture.attestation()
        var refused = 0
        let validator = CertificateChainValidator(anchors: Self.authority.anchors)
        for index in stride(from: 0, to: object.count, by: 1) {
            var tampered = object
            tampered[index] ^= 0x01 << UInt8(index % 8)
            var trace = AttestationTrace()
            do {
                _ = try AppAttest.verifyAttestation(
                    tampered, keyID: fixture.keyID, clientDataHash: fixture.clientDataHash, apps: [Self.app], chains: validator, at: Self.now,
                    trace: &trace)
            } catch {
                refused += 1
            }
        }
        // The receipt is not signed by anything a server can check offline (Apple's receipt is a PKCS#7 envelope
        // checked by Apple's fraud-metric service), so flips inside it pass.
        #expect(refused >= object.count - 18)
    }

    @Test func assertionsVerifyAndCountersOnlyGrow() throws {
        let fixture = Fixture()
        let clientData = Array(#"{"challenge":"lsn_abc"}"#.utf8)
        let assertion = try TestAttestationAuthority.appAttestAssertion(deviceKey: fixture.deviceKey, appID: Self.app.appID, counter: 5, clientData: clientData)
        var trace = AttestationTrace()
        let verified = try AppAttest.verifyAssertion(
            assertion, clientDataHash: Array(SHA256.hash(data: clientData)), publicKey: fixture.deviceKey.publicKey, apps: [Self.app],
            previousCounter: 4, trace: &trace)
        #expect(verified.counter == 5)
        for (previous, clientDataHash, expected) in [
            (UInt32(5), Array(SHA256.hash(data: clientData)), "attestation_counter_invalid"),
            (UInt32(4), Array(SHA256.hash(data: [0])), "attestation_untrusted"),
        ] {
            var trace = AttestationTrace()
            do {
                _ = try AppAttest.verifyAssertion(
                    assertion, clientDataHash: clientDataHash, publicKey: fixture.deviceKey.publicKey, apps: [Self.app], previousCounter: previous,
                    trace: &trace)
                Issue.record("a bad assertion verified")
            } catch {
                #expect(error.code.rawValue == expected)
            }
            #expect(trace.steps.last?.ok == false)
        }
    }
}
