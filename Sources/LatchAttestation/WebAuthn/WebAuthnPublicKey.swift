import Crypto
import CryptoExtras
import Foundation
import LatchCBOR
import LatchModel

/// A WebAuthn credential public key (COSE_Key, RFC 9052 §7) of one of the algorithms a relying party lists in
/// `pubKeyCredParams`: ES256 (−7, EC2 P-256), EdDSA (−8, OKP Ed25519) and RS256 (−257, RSA PKCS#1 v1.5).
public enum WebAuthnPublicKey: Sendable {
    case es256(P256.Signing.PublicKey)
    case eddsa(Curve25519.Signing.PublicKey)
    case rs256(_RSA.Signing.PublicKey)

    /// The COSE algorithm identifiers.
    public enum Algorithm: Int64, Sendable, CaseIterable {
        case es256 = -7
        case eddsa = -8
        case rs256 = -257
    }

    public var algorithm: Algorithm {
        switch self {
        case .es256: .es256
        case .eddsa: .eddsa
        case .rs256: .rs256
        }
    }

    /// Reads a COSE_Key; `alg` is required and must go with the key type and curve; private parameters are refused.
    public init(cose key: CBORValue) throws(AttestationFailure) {
        func invalid(_ detail: String) -> AttestationFailure { AttestationFailure(.webauthnUnsupportedAlgorithm, step: "credential public key", detail) }
        guard key.mapValue != nil, let kty = key[.unsigned(1)]?.intValue, let alg = key[.unsigned(3)]?.intValue else {
            throw invalid("the COSE key has no kty or alg")
        }
        switch (kty, alg) {
        case (2, -7):
            guard key[.int(-4)] == nil else { throw invalid("the COSE key holds a private key") }
            guard key[.int(-1)]?.intValue == 1, let x = key[.int(-2)]?.bytesValue, let y = key[.int(-3)]?.bytesValue, x.count == 32, y.count == 32,
                let point = try? P256.Signing.PublicKey(rawRepresentation: x + y)
            else { throw invalid("an ES256 key must be a P-256 point (crv 1, 32-byte x and y)") }
            self = .es256(point)
        case (1, -8):
            guard key[.int(-4)] == nil else { throw invalid("the COSE key holds a private key") }
            guard key[.int(-1)]?.intValue == 6, let x = key[.int(-2)]?.bytesValue, x.count == 32,
                let point = try? Curve25519.Signing.PublicKey(rawRepresentation: x)
            else { throw invalid("an EdDSA key must be Ed25519 (crv 6, 32-byte x)") }
            self = .eddsa(point)
        case (3, -257):
            guard key[.int(-3)] == nil else { throw invalid("the COSE key holds a private key") }
            guard let n = key[.int(-1)]?.bytesValue, let e = key[.int(-2)]?.bytesValue, !e.isEmpty, e.count <= 8,
                let rsa = try? _RSA.Signing.PublicKey(n: n, e: e), rsa.keySizeInBits >= 2048, rsa.keySizeInBits <= 8192
            else { throw invalid("an RS256 key must be RSA of 2048 to 8192 bits") }
            self = .rs256(rsa)
        default:
            throw invalid("COSE key type \(kty) with algorithm \(alg) is not accepted (ES256, EdDSA, RS256)")
        }
    }

    /// Reads a COSE_Key from its CBOR bytes (as stored at registration).
    public init(coseBytes: [UInt8]) throws(AttestationFailure) {
        let value: CBORValue
        do {
            value = try CBORDecoder.decode(coseBytes)
        } catch {
            throw AttestationFailure(.attestationMalformed, step: "credential public key", "the COSE key is not CBOR: \(error)")
        }
        try self.init(cose: value)
    }

    /// Whether `signature` (DER ECDSA for ES256, raw for EdDSA, PKCS#1 v1.5 for RS256) signs `data`.
    public func isValidSignature(_ signature: [UInt8], for data: [UInt8]) -> Bool {
        switch self {
        case .es256(let key):
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
            return key.isValidSignature(parsed, for: data)
        case .eddsa(let key):
            return key.isValidSignature(signature, for: data)
        case .rs256(let key):
            return key.isValidSignature(_RSA.Signing.RSASignature(rawRepresentation: signature), for: data, padding: .insecurePKCS1v1_5)
        }
    }
}
