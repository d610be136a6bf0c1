import Crypto
import CryptoExtras
import Foundation
import LatchCBOR
import LatchModel
import SwiftASN1
import X509

/// The `tpm` attestation format (W3C WebAuthn Level 3 §8.3): a TPM 2.0 certifies the credential key (`pubArea`, a
/// TPMT_PUBLIC) in a TPMS_ATTEST structure (`certInfo`) signed by its attestation identity key, whose certificate
/// (`x5c`) meets §8.3.1. Structures are TPM 2.0 Library Part 2 (big-endian, sized buffers).
extension WebAuthnRelyingParty {
    func verifyTPM(
        _ statement: CBORValue, authData: AuthenticatorData, credential: AuthenticatorData.AttestedCredential, publicKey: WebAuthnPublicKey,
        clientDataHash: [UInt8], step: String, trace: inout AttestationTrace
    ) throws(AttestationFailure) -> CertificateChainValidator.Chain {
        func refuse(_ detail: String) -> AttestationFailure { trace.failed(step, .webauthnAttestationInvalid, "tpm: " + detail) }
        // Step 1. The statement: ver "2.0", alg, x5c (ECDAA is not supported), sig, certInfo, pubArea.
        guard statement["ver"]?.textValue == "2.0", let alg = statement["alg"]?.intValue, let signature = statement["sig"]?.bytesValue,
            let x5c = statement["x5c"], let certInfo = statement["certInfo"]?.bytesValue, let pubArea = statement["pubArea"]?.bytesValue
        else { throw refuse("needs ver 2.0, alg, sig, x5c, certInfo and pubArea") }
        // alg: ES256 or RS256. RS1 (RSASSA-PKCS1-v1_5 with SHA-1, COSE -65535, RFC 8812 §2), which WebAuthn allows
        // for TPMs, is refused on purpose: SHA-1 has practical chosen-prefix collisions, so such a signature proves
        // little (docs/security.md).
        guard alg != -65535 else { throw refuse("alg RS1 (-65535, RSASSA-PKCS1-v1_5 with SHA-1) is not accepted: SHA-1 signatures are not trusted") }
        guard Self.tpmDigest(alg: alg, []) != nil else { throw refuse("alg \(alg) is not supported (ES256 -7 or RS256 -257)") }
        // Step 2. pubArea's key is the credential public key.
        let area: TPMPublicArea
        do {
            area = try TPMPublicArea(pubArea)
        } catch {
            throw refuse("pubArea: \(error.detail)")
        }
        guard area.matches(publicKey) else { throw refuse("the key in pubArea is not the credential public key") }
        // Step 3–4. certInfo: TPM_GENERATED, TPM_ST_ATTEST_CERTIFY, extraData = hash(authData ‖ clientDataHash) with
        // alg's hash, attested.name = nameAlg ‖ hash(pubArea) with nameAlg.
        let attest: TPMAttest
        do {
            attest = try TPMAttest(certInfo)
        } catch {
            throw refuse("certInfo: \(error.detail)")
        }
        guard attest.magic == 0xFF54_4347 else { throw refuse("certInfo is not TPM_GENERATED_VALUE") }
        guard attest.type == 0x8017 else { throw refuse("certInfo is not TPM_ST_ATTEST_CERTIFY") }
        guard let digest = Self.tpmDigest(alg: alg, authData.bytes + clientDataHash), attest.extraData == digest else {
            throw refuse("extraData is not the hash of authenticatorData ‖ clientDataHash (alg \(alg))")
        }
        guard let nameDigest = Self.tpmNameDigest(nameAlg: area.nameAlg, pubArea), attest.attestedName == area.nameAlgBytes + nameDigest else {
            throw refuse("attested.name is not the name of pubArea")
        }
        // Step 5. sig over certInfo by the AIK certificate's key; the certificate meets §8.3.1.
        let chain = try certificates(x5c, step: step, trace: &trace)
        guard let key = Self.signatureKey(chain.leaf.publicKey, alg: alg), key.isValidSignature(signature, for: certInfo) else {
            throw refuse("the signature over certInfo does not verify with the AIK certificate's key (alg \(alg))")
        }
        try checkAIKCertificate(chain.leaf, aaguid: credential.aaguid, step: step, trace: &trace)
        trace.passed(step, "tpm: certify of the credential key, signed by the AIK")
        return chain
    }

    /// §8.3.1: version 3, an empty subject, a critical subject alternative name with the TPM manufacturer, model and
    /// version (tcg-at-tpmManufacturer 2.23.133.2.1, tcg-at-tpmModel 2.23.133.2.2, tcg-at-tpmVersion 2.23.133.2.3),
    /// extended key usage tcg-kp-AIKCertificate (2.23.133.8.3), not a CA; the AAGUID extension, when present, the
    /// credential's.
    func checkAIKCertificate(_ certificate: Certificate, aaguid: [UInt8], step: String, trace: inout AttestationTrace) throws(AttestationFailure) {
        func refuse(_ detail: String) -> AttestationFailure { trace.failed(step, .webauthnAttestationInvalid, "tpm AIK certificate: " + detail) }
        guard certificate.version == .v3 else { throw refuse("not version 3") }
        guard certificate.subject.isEmpty else { throw refuse("the subject is not empty") }
        guard let san = certificate.extensions[oid: [2, 5, 29, 17]], san.critical, let names = try? certificate.extensions.subjectAlternativeNames
        else { throw refuse("no critical subject alternative name") }
        let tpmAttributes: Set<ASN1ObjectIdentifier> = [[2, 23, 133, 2, 1], [2, 23, 133, 2, 2], [2, 23, 133, 2, 3]]
        var found = Set<ASN1ObjectIdentifier>()
        for name in names {
            guard case .directoryName(let directory) = name else { continue }
            for rdn in directory { for attribute in rdn where tpmAttributes.contains(attribute.type) { found.insert(attribute.type) } }
        }
        guard found == tpmAttributes else { throw refuse("the subject alternative name lacks the TPM manufacturer, model or version") }
        guard let usage = try? certificate.extensions.extendedKeyUsage, usage.contains(ExtendedKeyUsage.Usage(oid: [2, 23, 133, 8, 3])) else {
            throw refuse("the extended key usage lacks tcg-kp-AIKCertificate (2.23.133.8.3)")
        }
        if case .isCertificateAuthority? = try? certificate.extensions.basicConstraints { throw refuse("it is a CA") }
        if let ext = certificate.extensions[oid: [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4]] {
            guard !ext.critical, let node = try? DER.parse(ext.value), node.identifier == .octetString, case .primitive(let value) = node.content,
                Array(value) == aaguid
            else { throw refuse("its AAGUID extension does not match the credential's") }
        }
    }

    /// The hash `alg`'s signatures use (ES256, RS256: SHA-256; EdDSA has no separate hash and is refused here).
    static func tpmDigest(alg: Int64, _ data: [UInt8]) -> [UInt8]? {
        switch alg {
        case -7, -257: Array(SHA256.hash(data: data))
        default: nil
        }
    }

    /// A TPM name's digest with `nameAlg` (TPM_ALG_SHA1 0x0004, SHA256 0x000B, SHA384 0x000C, SHA512 0x000D).
    static func tpmNameDigest(nameAlg: UInt16, _ data: [UInt8]) -> [UInt8]? {
        switch nameAlg {
        case 0x0004: Array(Insecure.SHA1.hash(data: data))
        case 0x000B: Array(SHA256.hash(data: data))
        case 0x000C: Array(SHA384.hash(data: data))
        case 0x000D: Array(SHA512.hash(data: data))
        default: nil
        }
    }
}

/// Reads TPM 2.0 structures: big-endian integers and UINT16-sized buffers, never past the end.
struct TPMReader {
    struct Failure: Error {
        let detail: String
    }

    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func take(_ count: Int) throws(Failure) -> [UInt8] {
        guard count >= 0, bytes.count - offset >= count else { throw Failure(detail: "truncated at byte \(offset)") }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    mutating func uint16() throws(Failure) -> UInt16 { try take(2).reduce(0) { $0 << 8 | UInt16($1) } }
    mutating func uint32() throws(Failure) -> UInt32 { try take(4).reduce(0) { $0 << 8 | UInt32($1) } }
    mutating func sized() throws(Failure) -> [UInt8] { try take(Int(try uint16())) }

    func end() throws(Failure) {
        guard offset == bytes.count else { throw Failure(detail: "\(bytes.count - offset) bytes after the structure") }
    }
}

/// TPMT_PUBLIC: the certified key's type, name algorithm and public key.
struct TPMPublicArea {
    static let rsa: UInt16 = 0x0001
    static let ecc: UInt16 = 0x0023
    static let null: UInt16 = 0x0010

    var type: UInt16
    var nameAlg: UInt16
    var nameAlgBytes: [UInt8] { [UInt8(nameAlg >> 8), UInt8(nameAlg & 0xFF)] }
    /// ECC: curve (TPM_ECC_NIST_P256 = 0x0003), x, y. RSA: modulus and exponent (0 = 65537).
    var curve: UInt16 = 0
    var x: [UInt8] = []
    var y: [UInt8] = []
    var modulus: [UInt8] = []
    var exponent: UInt32 = 0

    init(_ bytes: [UInt8]) throws(TPMReader.Failure) {
        var reader = TPMReader(bytes)
        type = try reader.uint16()
        nameAlg = try reader.uint16()
        _ = try reader.uint32()  // objectAttributes
        _ = try reader.sized()  // authPolicy
        // symmetric: TPMT_SYM_DEF_OBJECT (algorithm, then key bits and mode unless TPM_ALG_NULL).
        if try reader.uint16() != Self.null { _ = try reader.take(4) }
        // scheme: TPMT_*_SCHEME (scheme, then a hash algorithm unless TPM_ALG_NULL).
        if try reader.uint16() != Self.null { _ = try reader.take(2) }
        switch type {
        case Self.ecc:
            curve = try reader.uint16()
            if try reader.uint16() != Self.null { _ = try reader.take(2) }  // kdf
            x = try reader.sized()
            y = try reader.sized()
        case Self.rsa:
            _ = try reader.uint16()  // keyBits
            exponent = try reader.uint32()
            modulus = try reader.sized()
        default:
            throw TPMReader.Failure(detail: "key type \(type) is neither RSA nor ECC")
        }
        try reader.end()
    }

    /// Whether this is `key` (P-256 for ES256, the same modulus and exponent for RS256).
    func matches(_ key: WebAuthnPublicKey) -> Bool {
        switch key {
        case .es256(let p256):
            let raw = Array(p256.rawRepresentation)
            return type == Self.ecc && curve == 0x0003 && x == Array(raw[0..<32]) && y == Array(raw[32..<64])
        case .rs256(let rsa):
            guard type == Self.rsa, let components = try? rsa.getKeyPrimitives() else { return false }
            let e = Array(components.publicExponent.drop { $0 == 0 })
            let expected = exponent == 0 ? [1, 0, 1] : Array(withUnsafeBytes(of: exponent.bigEndian, Array.init).drop { $0 == 0 })
            return Array(components.modulus.drop { $0 == 0 }) == Array(modulus.drop { $0 == 0 }) && e == expected
        case .eddsa:
            return false
        }
    }
}

/// TPMS_ATTEST of a certify: magic, type, extraData and the certified object's name.
struct TPMAttest {
    var magic: UInt32
    var type: UInt16
    var extraData: [UInt8]
    var attestedName: [UInt8]

    init(_ bytes: [UInt8]) throws(TPMReader.Failure) {
        var reader = TPMReader(bytes)
        magic = try reader.uint32()
        type = try reader.uint16()
        _ = try reader.sized()  // qualifiedSigner
        extraData = try reader.sized()
        _ = try reader.take(17)  // clockInfo: clock, resetCount, restartCount, safe
        _ = try reader.take(8)  // firmwareVersion
        attestedName = try reader.sized()  // TPMS_CERTIFY_INFO.name
        _ = try reader.sized()  // qualifiedName
        try reader.end()
    }
}
