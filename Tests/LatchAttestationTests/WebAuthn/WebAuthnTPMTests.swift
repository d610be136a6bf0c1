import Crypto
import Foundation
import LatchAttestation
import LatchCBOR
import LatchJOSE
import LatchModel
import Testing

@Suite("WebAuthn: the tpm attestation format")
struct WebAuthnTPMTests {
    let vector = WebAuthnVectorTests.Vector("w3c-es256-tpm")

    /// The vector's attestation object with `change` applied to its statement; `resign` re-signs `certInfo` with the
    /// vector's AIK private key (so a changed field is reached past the signature check).
    func object(resign: Bool = false, _ change: (inout [String: CBORValue]) -> Void) throws -> [UInt8] {
        let original = try CBORDecoder.decode(vector.bytes("registration", "attestationObject"))
        var statement: [String: CBORValue] = [:]
        for pair in original["attStmt"]?.mapValue ?? [] { if let key = pair.key.textValue { statement[key] = pair.value } }
        change(&statement)
        if resign, let certInfo = statement["certInfo"]?.bytesValue {
            let hex = try #require(vector.json["registration"]?["attestationPrivateKeyHex"]?.stringValue)
            let key = try P256.Signing.PrivateKey(rawRepresentation: Hex.decode(hex) ?? [])
            statement["sig"] = .bytes(Array(try key.signature(for: certInfo).derRepresentation))
        }
        let order = ["ver", "alg", "x5c", "sig", "certInfo", "pubArea"]
        return CBORValue.map([
            .init(.text("fmt"), .text("tpm")),
            .init(.text("attStmt"), .map(order.compactMap { name in statement[name].map { .init(.text(name), $0) } })),
            .init(.text("authData"), original["authData"] ?? .null),
        ]).encoded
    }

    func refusal(_ attestationObject: [UInt8]) -> String {
        var trace = AttestationTrace()
        do {
            _ = try WebAuthnVectorTests.relyingParty().verifyRegistration(
                clientDataJSON: vector.bytes("registration", "clientDataJSON"), attestationObject: attestationObject,
                challenge: vector.bytes("registration", "challenge"), at: WebAuthnVectorTests.now, trace: &trace)
            return "verified"
        } catch {
            return "\(error.code.rawValue): \(error.detail)"
        }
    }

    @Test("The W3C vector re-encoded unchanged verifies (the test's encoder is faithful)")
    func unchanged() throws {
        #expect(refusal(try object { _ in }) == "verified")
        #expect(refusal(try object(resign: true) { _ in }) == "verified")
    }

    @Test("Each TPM check refuses its own tampering, reached past the signature by re-signing certInfo")
    func refusals() throws {
        func certInfo(_ edit: (inout [UInt8]) -> Void) throws -> [UInt8] {
            try object(resign: true) { statement in
                var bytes = statement["certInfo"]?.bytesValue ?? []
                edit(&bytes)
                statement["certInfo"] = .bytes(bytes)
            }
        }
        #expect(refusal(try certInfo { $0[0] ^= 1 }).contains("TPM_GENERATED_VALUE"))
        #expect(refusal(try certInfo { $0[5] ^= 1 }).contains("TPM_ST_ATTEST_CERTIFY"))
        // extraData starts after magic (4), type (2) and an empty qualifiedSigner (2), behind its size (2).
        #expect(refusal(try certInfo { $0[10] ^= 1 }).contains("extraData"))
        // The attested name's digest: the vector's qualifiedName is empty, so the name ends 2 bytes before the end.
        let name = refusal(try certInfo { $0[$0.count - 5] ^= 1 })
        #expect(name.contains("name of pubArea"), "\(name)")
        #expect(refusal(try certInfo { $0.removeLast(5) }).contains("truncated"))
        #expect(refusal(try certInfo { $0.append(0) }).contains("after the structure"))
        // Not re-signed: the signature check refuses first.
        #expect(refusal(try object { statement in
            var bytes = statement["certInfo"]?.bytesValue ?? []
            bytes[45] ^= 1  // clockInfo: only the signature covers it
            statement["certInfo"] = .bytes(bytes)
        }).contains("signature"))
        // Another key in pubArea: not the credential's.
        #expect(refusal(try object(resign: true) { statement in
            var area = statement["pubArea"]?.bytesValue ?? []
            area[area.count - 1] ^= 1
            statement["pubArea"] = .bytes(area)
        }).contains("pubArea"))
        // ver, and a missing member.
        #expect(refusal(try object { $0["ver"] = .text("1.2") }).contains("ver 2.0"))
        #expect(refusal(try object { $0["pubArea"] = nil }).contains("pubArea"))
    }

    @Test("alg RS1 (SHA-1) is refused as such, not as a wrong extraData; an unknown alg is named")
    func sha1Refused() throws {
        // COSE -65535 is CBOR negative(65534); -999 is negative(998).
        let rs1 = refusal(try object { $0["alg"] = .negative(65534) })
        #expect(rs1.contains("RS1") && rs1.contains("not accepted") && !rs1.contains("extraData"), "\(rs1)")
        let unknown = refusal(try object { $0["alg"] = .negative(998) })
        #expect(unknown.contains("alg -999 is not supported") && !unknown.contains("extraData"), "\(unknown)")
    }

    @Test("Mutated tpm attestation objects never crash and never vouch for another credential (bounded: 1,500)")
    func mutations() throws {
        let party = WebAuthnVectorTests.relyingParty()
        var trace = AttestationTrace()
        let original = try party.verifyRegistration(
            clientDataJSON: vector.bytes("registration", "clientDataJSON"), attestationObject: vector.bytes("registration", "attestationObject"),
            challenge: vector.bytes("registration", "challenge"), at: WebAuthnVectorTests.now, trace: &trace)
        #expect(original.format == "tpm" && original.trust == .trusted)
        var generator = SplitMix64(seed: 0x5450_4D32)
        var others = 0
        for _ in 0..<1_500 {
            var bytes = vector.bytes("registration", "attestationObject")
            switch Int.random(in: 0..<3, using: &generator) {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &generator)] ^= UInt8.random(in: 1...255, using: &generator)
            case 1: bytes.removeLast(Int.random(in: 1...min(40, bytes.count), using: &generator))
            default: bytes.insert(UInt8.random(in: 0...255, using: &generator), at: Int.random(in: 0...bytes.count, using: &generator))
            }
            var mutationTrace = AttestationTrace()
            if let accepted = try? party.verifyRegistration(
                clientDataJSON: vector.bytes("registration", "clientDataJSON"), attestationObject: bytes,
                challenge: vector.bytes("registration", "challenge"), at: WebAuthnVectorTests.now, trace: &mutationTrace),
                accepted.trust == .trusted, accepted.credentialID != original.credentialID || accepted.publicKeyCOSE != original.publicKeyCOSE
            {
                others += 1
            }
        }
        #expect(others == 0)
    }
}
