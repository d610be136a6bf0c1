import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import Testing

/// The W3C Web Authentication Level 3 test vectors (Tests/Vectors/webauthn, sources in its README): registration
/// then authentication, with rpId `example.org`, origin `https://example.org`, and the spec's attestation CA as the
/// only trust anchor.
@Suite("WebAuthn: W3C Level 3 test vectors")
struct WebAuthnVectorTests {
    struct Vector {
        let name: String
        let json: JSONValue

        init(_ name: String) {
            self.name = name
            json = (try? JSONValue.parse(Data(contentsOf: Vectors.folder.appendingPathComponent("webauthn/\(name).json")))) ?? .null
        }

        func bytes(_ section: String, _ field: String) -> [UInt8] {
            json[section]?[field]?.stringValue.flatMap(Base64URL.decode).map(Array.init) ?? []
        }
    }

    static let anchors: TrustAnchors = {
        let ca = (try? JSONValue.parse(Data(contentsOf: Vectors.folder.appendingPathComponent("webauthn/w3c-attestation-ca.json")))) ?? .null
        return (try? TrustAnchors(pem: ca["attestationCACertPEM"]?.stringValue ?? "")) ?? TrustAnchors([])
    }()

    static func relyingParty(requireTrusted: Bool = false) -> WebAuthnRelyingParty {
        var party = WebAuthnRelyingParty(rpID: "example.org", origins: ["https://example.org"])
        party.attestationAnchors = anchors
        party.requireTrustedAttestation = requireTrusted
        return party
    }

    static let now = Date(timeIntervalSince1970: 1_795_000_000)

    func register(_ vector: Vector, party: WebAuthnRelyingParty = relyingParty()) throws(AttestationFailure) -> WebAuthnRelyingParty.VerifiedCredential {
        var trace = AttestationTrace()
        return try party.verifyRegistration(
            clientDataJSON: vector.bytes("registration", "clientDataJSON"), attestationObject: vector.bytes("registration", "attestationObject"),
            challenge: vector.bytes("registration", "challenge"), at: Self.now, trace: &trace)
    }

    func authenticate(_ vector: Vector, credential: WebAuthnRelyingParty.VerifiedCredential, stored: UInt32 = 0) throws(AttestationFailure)
        -> WebAuthnRelyingParty.VerifiedAssertion
    {
        var trace = AttestationTrace()
        return try Self.relyingParty().verifyAuthentication(
            clientDataJSON: vector.bytes("authentication", "clientDataJSON"), authenticatorData: vector.bytes("authentication", "authenticatorData"),
            signature: vector.bytes("authentication", "signature"), challenge: vector.bytes("authentication", "challenge"),
            publicKey: credential.publicKey, storedSignCount: stored, trace: &trace)
    }

    @Test(
        "Registration and authentication verify",
        arguments: [
            ("w3c-es256-none", "none", WebAuthnRelyingParty.AttestationTrust.none),
            ("w3c-es256-packed-self", "packed", .selfAttested),
            ("w3c-es256-packed", "packed", .trusted),
            ("w3c-rs256-packed", "packed", .trusted),
            ("w3c-eddsa-ed25519-packed", "packed", .trusted),
            ("w3c-es256-fido-u2f", "fido-u2f", .trusted),
            ("w3c-es256-tpm", "tpm", .trusted),
            ("w3c-es256-apple", "apple", .trusted),
            ("w3c-es256-none-long-credential-id", "none", .none),
        ])
    func verifies(_ name: String, format: String, trust: WebAuthnRelyingParty.AttestationTrust) throws {
        let vector = Vector(name)
        let credential = try register(vector)
        #expect(credential.format == format && credential.trust == trust)
        #expect(Base64URL.encode(Data(credential.credentialID)) == vector.json["registration"]?["credentialId"]?.stringValue)
        #expect(Hex.encode(credential.publicKeyCOSE) == vector.json["expected"]?["credentialPublicKeyCOSE"]?.stringValue)
        _ = try authenticate(vector, credential: credential)
    }

    @Test("Each tampered part is refused with its own code")
    func refusals() throws {
        let vector = Vector("w3c-es256-packed")
        let credential = try register(vector)
        func code(_ body: () throws -> Any) -> String? {
            do {
                _ = try body()
                return nil
            } catch {
                return (error as? AttestationFailure)?.code.rawValue
            }
        }
        var trace = AttestationTrace()
        let party = Self.relyingParty()
        // Wrong challenge, origin, rpId; another ceremony's client data.
        #expect(code {
            try party.verifyRegistration(
                clientDataJSON: vector.bytes("registration", "clientDataJSON"), attestationObject: vector.bytes("registration", "attestationObject"),
                challenge: [1, 2, 3], at: Self.now, trace: &trace)
        } == "webauthn_client_data_invalid")
        #expect(code { try register(vector, party: WebAuthnRelyingParty(rpID: "example.org", origins: ["https://other.example"])) } == "webauthn_client_data_invalid")
        #expect(code { try register(vector, party: WebAuthnRelyingParty(rpID: "other.example", origins: ["https://example.org"])) } == "webauthn_rp_mismatch")
        #expect(code {
            try party.verifyRegistration(
                clientDataJSON: vector.bytes("authentication", "clientDataJSON"), attestationObject: vector.bytes("registration", "attestationObject"),
                challenge: vector.bytes("authentication", "challenge"), at: Self.now, trace: &trace)
        } == "webauthn_client_data_invalid")
        // An algorithm not offered.
        var es256Only = Self.relyingParty()
        es256Only.algorithms = [.rs256]
        #expect(code { try register(vector, party: es256Only) } == "webauthn_unsupported_algorithm")
        // Trust required without anchors: the attestation chains nowhere.
        var untrustedParty = WebAuthnRelyingParty(rpID: "example.org", origins: ["https://example.org"])
        untrustedParty.requireTrustedAttestation = true
        #expect(code { try register(vector, party: untrustedParty) } == "webauthn_attestation_invalid")
        // Authentication: a flipped signature bit; a counter that does not grow.
        var signature = vector.bytes("authentication", "signature")
        signature[signature.count - 1] ^= 1
        #expect(code {
            try party.verifyAuthentication(
                clientDataJSON: vector.bytes("authentication", "clientDataJSON"), authenticatorData: vector.bytes("authentication", "authenticatorData"),
                signature: signature, challenge: vector.bytes("authentication", "challenge"), publicKey: credential.publicKey, storedSignCount: 0,
                trace: &trace)
        } == "webauthn_signature_invalid")
        #expect(code { try authenticate(vector, credential: credential, stored: 5) } == "webauthn_counter_regressed")
    }

    @Test(
        "Vectors of what this relying party does not accept are refused with a stable code",
        arguments: [
            ("w3c-es256-none-crossorigin", "webauthn_client_data_invalid"),
            ("w3c-es256-none-toporigin", "webauthn_client_data_invalid"),
            ("w3c-es384-packed", "webauthn_unsupported_algorithm"),
            ("w3c-es512-packed", "webauthn_unsupported_algorithm"),
            ("w3c-eddsa-ed448-packed", "webauthn_unsupported_algorithm"),
        ])
    func notAccepted(_ name: String, code: String) {
        do {
            _ = try register(Vector(name))
            Issue.record("\(name) registered")
        } catch {
            #expect(error.code.rawValue == code, "\(name): \(error)")
        }
    }
}

@Suite("WebAuthn: bounded fuzz")
struct WebAuthnFuzzTests {
    /// 3,000 seeded mutations of a registration and an assertion (bit flips, truncations, inserted bytes): every one
    /// answers or refuses with an AttestationFailure. No changed assertion verifies; a changed registration verifies
    /// only as untrusted (a byte of the attestation certificate outside what its signature covers, such as the
    /// certificate's own signature, breaks the chain to the anchor, not the statement) — never as trusted.
    @Test("Mutated attestation objects and authenticator data never crash and never verify")
    func mutations() throws {
        let vector = WebAuthnVectorTests.Vector("w3c-es256-packed")
        let party = WebAuthnVectorTests.relyingParty()
        var trace = AttestationTrace()
        let credential = try party.verifyRegistration(
            clientDataJSON: vector.bytes("registration", "clientDataJSON"), attestationObject: vector.bytes("registration", "attestationObject"),
            challenge: vector.bytes("registration", "challenge"), at: WebAuthnVectorTests.now, trace: &trace)
        var generator = SplitMix64(seed: 0x5745_4241)
        var verified = 0
        for round in 0..<3_000 {
            let registration = round.isMultiple(of: 2)
            var bytes = registration ? vector.bytes("registration", "attestationObject") : vector.bytes("authentication", "authenticatorData")
            let original = bytes
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &generator)] ^= UInt8.random(in: 1...255, using: &generator)
            case 1: bytes.removeLast(Int.random(in: 1...min(40, bytes.count), using: &generator))
            default: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: Int.random(in: 0...bytes.count, using: &generator))
            }
            guard bytes != original else { continue }
            var mutationTrace = AttestationTrace()
            if registration {
                if let accepted = try? party.verifyRegistration(
                    clientDataJSON: vector.bytes("registration", "clientDataJSON"), attestationObject: bytes,
                    challenge: vector.bytes("registration", "challenge"), at: WebAuthnVectorTests.now, trace: &mutationTrace),
                    accepted.trust == .trusted
                {
                    verified += 1
                }
            } else if (try? party.verifyAuthentication(
                clientDataJSON: vector.bytes("authentication", "clientDataJSON"), authenticatorData: bytes,
                signature: vector.bytes("authentication", "signature"), challenge: vector.bytes("authentication", "challenge"),
                publicKey: credential.publicKey, storedSignCount: 0, trace: &mutationTrace)) != nil
            {
                verified += 1
            }
        }
        #expect(verified == 0)
    }
}
