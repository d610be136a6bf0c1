import Crypto
import Foundation
import LatchAttestation
import LatchCBOR
import LatchJOSE
import LatchModel
import LatchTesting
import SwiftASN1
import Testing
import X509

@Suite("WebAuthn: apple and android-key attestation, trust per model")
struct WebAuthnPlatformFormatTests {
    static func failureCode(_ body: () throws -> Any) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error as? AttestationFailure)?.code.rawValue
        }
    }

    // MARK: apple, with a real device's registration

    struct AppleVector {
        let json = (try? JSONValue.parse(Data(contentsOf: Vectors.folder.appendingPathComponent("webauthn/apple-ios-2020.json")))) ?? .null
        func bytes(_ field: String) -> [UInt8] { json[field]?.stringValue.flatMap(Base64URL.decode).map(Array.init) ?? [] }
        var party: WebAuthnRelyingParty {
            WebAuthnRelyingParty(rpID: json["rpId"]?.stringValue ?? "", origins: [json["origin"]?.stringValue ?? ""])
        }
        var at: Date { ISO8601DateFormatter().date(from: json["at"]?.stringValue ?? "") ?? Date(timeIntervalSince1970: 0) }

        func register(party: WebAuthnRelyingParty, clientData: [UInt8]? = nil, at date: Date? = nil) throws(AttestationFailure)
            -> WebAuthnRelyingParty.VerifiedCredential
        {
            var trace = AttestationTrace()
            return try party.verifyRegistration(
                clientDataJSON: clientData ?? bytes("clientDataJSON"), attestationObject: bytes("attestationObject"), challenge: bytes("challenge"),
                at: date ?? at, trace: &trace)
        }
    }

    @Test("A real iPhone's apple attestation verifies and chains to the Apple WebAuthn Root CA Latch ships")
    func appleDevice() throws {
        let vector = AppleVector()
        let credential = try vector.register(party: vector.party)
        #expect(credential.format == "apple" && credential.trust == .trusted)
        #expect(Base64URL.encode(Data(credential.credentialID)) == vector.json["credentialId"]?.stringValue)
        // Past the credential certificate's day it no longer chains (still a valid statement, untrusted) …
        let later = Date(timeIntervalSince1970: 1_795_000_000)
        #expect(try vector.register(party: vector.party, at: later).trust == .untrusted)
        // … which a policy requiring trust refuses.
        var strict = vector.party
        strict.requireTrustedAttestation = true
        #expect(Self.failureCode { try vector.register(party: strict, at: later) } == "webauthn_attestation_invalid")
        // Without Apple's root the chain reaches nothing.
        var noRoots = vector.party
        noRoots.formatAnchors = [:]
        #expect(try vector.register(party: noRoots).trust == .untrusted)
    }

    @Test("apple: client data other than what the nonce covers is refused (same challenge and origin)")
    func appleNonce() throws {
        let vector = AppleVector()
        var fields = try #require(try JSONValue.parse(Data(vector.bytes("clientDataJSON"))).objectValue)
        fields["crossOrigin"] = .bool(false)
        let other = Array(JSONValue.object(fields).serialized())
        var trace = AttestationTrace()
        do {
            _ = try vector.party.verifyRegistration(
                clientDataJSON: other, attestationObject: vector.bytes("attestationObject"), challenge: vector.bytes("challenge"), at: vector.at,
                trace: &trace)
            Issue.record("verified with other client data")
        } catch {
            #expect(error.code.rawValue == "webauthn_attestation_invalid" && error.detail.contains("nonce"), "\(error)")
        }
    }

    // MARK: android-key, with chains from a test attestation authority

    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    /// An android-key registration by `authenticator` (see ``TestWebAuthnAuthenticator/registerAndroidKey``).
    static func androidKey(
        _ authenticator: TestWebAuthnAuthenticator, authority: TestAttestationAuthority, certified: P256.Signing.PrivateKey? = nil,
        challenge: [UInt8]? = nil
    ) -> (clientData: [UInt8], attestationObject: [UInt8], challenge: [UInt8]) {
        let ceremony = Array(SHA256.hash(data: Array("android-key ceremony".utf8)))
        let response = authenticator.registerAndroidKey(
            challenge: Base64URL.encode(Data(ceremony)), authority: authority, now: now, certified: certified, attestationChallenge: challenge)
        let fields = response["response"]
        return (
            fields?["clientDataJSON"]?.stringValue.flatMap(Base64URL.decode).map(Array.init) ?? [],
            fields?["attestationObject"]?.stringValue.flatMap(Base64URL.decode).map(Array.init) ?? [], ceremony
        )
    }

    static func register(_ made: (clientData: [UInt8], attestationObject: [UInt8], challenge: [UInt8]), party: WebAuthnRelyingParty)
        throws(AttestationFailure) -> WebAuthnRelyingParty.VerifiedCredential
    {
        var trace = AttestationTrace()
        return try party.verifyRegistration(
            clientDataJSON: made.clientData, attestationObject: made.attestationObject, challenge: made.challenge, at: now, trace: &trace)
    }

    @Test("android-key: a Keystore chain binding the client data hash verifies; its root vouches only for the models it is listed for")
    func androidKey() throws {
        let authority = try TestAttestationAuthority.create(now: Self.now.addingTimeInterval(-86_400))
        let authenticator = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test")
        let made = Self.androidKey(authenticator, authority: authority)
        var party = WebAuthnRelyingParty(rpID: "latch.test", origins: ["https://latch.test"])
        // Not a Google root: verifies, untrusted.
        #expect(try Self.register(made, party: party).trust == .untrusted)
        party.attestationAnchors = authority.anchors
        let credential = try Self.register(made, party: party)
        #expect(credential.format == "android-key" && credential.trust == .trusted)
        // Metadata listing other roots for this AAGUID: the test root no longer vouches for it.
        let other = try TestAttestationAuthority.create(now: Self.now.addingTimeInterval(-86_400), commonName: "another vendor")
        party.metadata = FidoMetadata(entries: [Hex.encode(authenticator.aaguid): .init(anchors: other.anchors)])
        #expect(try Self.register(made, party: party).trust == .untrusted)
        party.metadata = FidoMetadata(entries: [Hex.encode(authenticator.aaguid): .init(anchors: authority.anchors)])
        #expect(try Self.register(made, party: party).trust == .trusted)
        // A compromised model is refused whatever its chain.
        party.metadata.entries[Hex.encode(authenticator.aaguid)]?.status = "ATTESTATION_KEY_COMPROMISE"
        #expect(Self.failureCode { try Self.register(made, party: party) } == "attestation_revoked")
    }

    @Test("android-key refusals: another challenge, a certificate for another key, the W3C vector's empty authorization lists")
    func androidKeyRefusals() throws {
        let authority = try TestAttestationAuthority.create(now: Self.now.addingTimeInterval(-86_400))
        let authenticator = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test")
        var party = WebAuthnRelyingParty(rpID: "latch.test", origins: ["https://latch.test"])
        party.attestationAnchors = authority.anchors
        func detail(_ made: (clientData: [UInt8], attestationObject: [UInt8], challenge: [UInt8])) -> String {
            do {
                _ = try Self.register(made, party: party)
                return "verified"
            } catch {
                return "\(error.code.rawValue): \(error.detail)"
            }
        }
        #expect(detail(Self.androidKey(authenticator, authority: authority, challenge: [UInt8](repeating: 0, count: 32))).contains("challenge"))
        #expect(detail(Self.androidKey(authenticator, authority: authority, certified: P256.Signing.PrivateKey())).contains("not the certificate"))
        // The W3C Level 3 android-key vector: signature, key and challenge check out; its key description has empty
        // authorization lists (no origin, no purpose), which §8.4 step 5 requires — refused there.
        let vector = WebAuthnVectorTests.Vector("w3c-es256-android-key")
        var trace = AttestationTrace()
        do {
            _ = try WebAuthnVectorTests.relyingParty().verifyRegistration(
                clientDataJSON: vector.bytes("registration", "clientDataJSON"), attestationObject: vector.bytes("registration", "attestationObject"),
                challenge: vector.bytes("registration", "challenge"), at: WebAuthnVectorTests.now, trace: &trace)
            Issue.record("the W3C android-key vector registered")
        } catch {
            #expect(error.code.rawValue == "webauthn_attestation_invalid" && error.detail.contains("origin"), "\(error)")
        }
    }

    // MARK: Metadata: a folder and an MDS3 BLOB

    @Test("An MDS3 BLOB verifies offline against its root and gives roots and statuses per AAGUID; tampering or another root is refused")
    func metadataBlob() throws {
        let signer = try TestMetadataBlob.Signer(now: Self.now)
        let authority = try TestAttestationAuthority.create(now: Self.now.addingTimeInterval(-86_400))
        let vendorRoot = try TestMetadataBlob.Signer.base64(try #require(authority.anchors.roots.first))
        let payload: JSONValue = .object([
            "legalHeader": "test", "no": 42, "nextUpdate": "2026-12-31",
            "entries": .array([
                .object([
                    "aaguid": "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
                    "metadataStatement": .object(["description": "Test key", "attestationRootCertificates": .array([.string(vendorRoot)])]),
                    "statusReports": .array([
                        .object(["status": "FIDO_CERTIFIED_L1", "effectiveDate": "2024-01-01"]),
                        .object(["status": "REVOKED", "effectiveDate": "2025-06-01"]),
                    ]),
                ]),
                .object(["attestationCertificateKeyIdentifiers": .array(["0011"]), "statusReports": .array([])]),
            ]),
        ])
        let text = try signer.sign(payload)
        var trace = AttestationTrace()
        let metadata = try FidoMetadata.blob(text, roots: TrustAnchors([signer.root]), at: Self.now, trace: &trace)
        #expect(metadata.serial == 42 && metadata.nextUpdate == "2026-12-31" && metadata.entries.count == 1)
        let aaguid = [UInt8](repeating: 0xAA, count: 16)
        #expect(metadata.anchors(for: aaguid)?.roots.count == 1)
        #expect(metadata.refusal(for: aaguid) == "REVOKED", "the latest report by effectiveDate")
        // Refusals: another root; a payload changed after signing; not a JWS.
        let elsewhere = try TestMetadataBlob.Signer(now: Self.now)
        #expect(Self.failureCode { try FidoMetadata.blob(text, roots: TrustAnchors([elsewhere.root]), at: Self.now, trace: &trace) } != nil)
        var parts = text.split(separator: ".").map(String.init)
        parts[1] = Base64URL.encode(JSONValue.object(["no": 43, "nextUpdate": "2027-01-01", "entries": .array([])]).serialized())
        #expect(Self.failureCode { try FidoMetadata.blob(parts.joined(separator: "."), roots: TrustAnchors([signer.root]), at: Self.now, trace: &trace) }
            == "attestation_malformed")
        #expect(Self.failureCode { try FidoMetadata.blob("not a blob", roots: TrustAnchors([signer.root]), at: Self.now, trace: &trace) }
            == "attestation_malformed")
    }

    @Test("A folder of <aaguid>.pem files gives each model its roots; other files are ignored; a bad PEM is refused")
    func metadataFolder() throws {
        let authority = try TestAttestationAuthority.create(now: Self.now)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("latch-fido-anchors-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try authority.rootPEM.write(to: directory.appendingPathComponent("CB69481E-8FF7-4039-93EC-0A2729A154A8.pem"), atomically: true, encoding: .utf8)
        try "notes".write(to: directory.appendingPathComponent("README.txt"), atomically: true, encoding: .utf8)
        let metadata = try FidoMetadata.folder(directory.path)
        #expect(Array(metadata.entries.keys) == ["cb69481e8ff7403993ec0a2729a154a8"])
        try "garbage".write(to: directory.appendingPathComponent("00000000000000000000000000000000.pem"), atomically: true, encoding: .utf8)
        #expect(Self.failureCode { try FidoMetadata.folder(directory.path) } == "attestation_malformed")
    }
}

@Suite("WebAuthn: bounded fuzz of the platform formats")
struct WebAuthnPlatformFuzzTests {
    /// 1,500 seeded mutations of the real Apple registration: none crashes; none verifies as trusted with another
    /// credential id or key than the device made (a byte the statement does not cover — its unused `alg` — may change
    /// and still verify, which is harmless).
    @Test("Mutated apple attestation objects never crash and never vouch for another credential")
    func appleMutations() throws {
        let vector = WebAuthnPlatformFormatTests.AppleVector()
        let original = try vector.register(party: vector.party)
        var generator = SplitMix64(seed: 0x4150_504C)
        var trustedOthers = 0
        for _ in 0..<1_500 {
            var bytes = vector.bytes("attestationObject")
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &generator)] ^= UInt8.random(in: 1...255, using: &generator)
            case 1: bytes.removeLast(Int.random(in: 1...min(40, bytes.count), using: &generator))
            default: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: Int.random(in: 0...bytes.count, using: &generator))
            }
            var trace = AttestationTrace()
            if let accepted = try? vector.party.verifyRegistration(
                clientDataJSON: vector.bytes("clientDataJSON"), attestationObject: bytes, challenge: vector.bytes("challenge"), at: vector.at,
                trace: &trace), accepted.trust == .trusted, accepted.credentialID != original.credentialID || accepted.publicKeyCOSE != original.publicKeyCOSE
            {
                trustedOthers += 1
            }
        }
        #expect(trustedOthers == 0)
    }
}
