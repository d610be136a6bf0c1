import Crypto
import CryptoExtras
import Foundation
import LatchCBOR

/// COSE_Key (RFC 9052 §7, RFC 9053 §7.1.1 and RFC 8230 §4): the public-key form of authenticator data and
/// attestation. Latch reads the two key types its ``PublicKey`` holds, each bound to one algorithm as a JWK is.
extension PublicKey {
    /// COSE labels and values used here (IANA "COSE Key Common Parameters", "COSE Algorithms").
    enum COSE {
        static let kty: CBORValue = .unsigned(1)
        static let alg: CBORValue = .unsigned(3)
        static let ec2: Int64 = 2
        static let rsa: Int64 = 3
        static let es256: Int64 = -7
        static let rs256: Int64 = -257
        static let p256: Int64 = 1
        static let es384: Int64 = -35
        static let p384: Int64 = 2
        /// EC2 `crv`, `x`, `y`, `d`; RSA `n`, `e`, `d`.
        static let minus1: CBORValue = .int(-1)
        static let minus2: CBORValue = .int(-2)
        static let minus3: CBORValue = .int(-3)
        static let minus4: CBORValue = .int(-4)
    }

    /// Reads a COSE_Key map: EC2 P-256 with `alg` ES256 (−7), or RSA with `alg` RS256 (−257), 2048–8192 bits.
    /// `alg` is required (it binds the key to one algorithm); a key with private parameters is refused.
    public init(coseKey key: CBORValue) throws(JOSEError) {
        guard key.mapValue != nil else { throw JOSEError(.invalidKey, "a COSE key is a CBOR map") }
        guard let type = key[COSE.kty]?.intValue else { throw JOSEError(.invalidKey, "the COSE key has no kty") }
        guard let algorithm = key[COSE.alg]?.intValue else {
            throw JOSEError(.invalidKey, "the COSE key has no alg (Latch binds every key to one algorithm)")
        }
        switch (type, algorithm) {
        case (COSE.ec2, COSE.es256):
            guard key[COSE.minus4] == nil else { throw JOSEError(.invalidKey, "the COSE key holds a private key (d)") }
            guard key[COSE.minus1]?.intValue == COSE.p256 else { throw JOSEError(.invalidKey, "an ES256 COSE key must be on P-256 (crv 1)") }
            guard let x = key[COSE.minus2]?.bytesValue, let y = key[COSE.minus3]?.bytesValue, x.count == 32, y.count == 32,
                let point = try? P256.Signing.PublicKey(rawRepresentation: x + y)
            else { throw JOSEError(.invalidKey, "the COSE key's x and y are not a P-256 point (32 bytes each, on the curve)") }
            self.init(p256: point)
        case (COSE.rsa, COSE.rs256):
            guard key[COSE.minus3] == nil else { throw JOSEError(.invalidKey, "the COSE key holds a private key (d)") }
            guard let n = key[COSE.minus1]?.bytesValue, let e = key[COSE.minus2]?.bytesValue, !e.isEmpty, e.count <= 8,
                let rsa = try? _RSA.Signing.PublicKey(n: n, e: e), rsa.keySizeInBits <= Self.maximumRSABits
            else { throw JOSEError(.invalidKey, "the COSE key is not an RSA key of 2048 to \(Self.maximumRSABits) bits") }
            self.init(rsa: rsa)
        case (COSE.ec2, _), (COSE.rsa, _):
            throw JOSEError(.algorithmMismatch, "COSE algorithm \(algorithm) does not go with key type \(type) (Latch takes ES256 on EC2, RS256 on RSA)")
        default:
            throw JOSEError(.unsupportedAlgorithm, "COSE key type \(type) with algorithm \(algorithm) is not supported")
        }
    }

    /// This key as a COSE_Key map.
    public var coseKey: CBORValue {
        switch backing {
        case .p256(let box):
            let key = box.key
            let raw = Array(key.rawRepresentation)
            return .map([
                .init(COSE.kty, .int(COSE.ec2)), .init(COSE.alg, .int(COSE.es256)), .init(COSE.minus1, .int(COSE.p256)),
                .init(COSE.minus2, .bytes(Array(raw[..<32]))), .init(COSE.minus3, .bytes(Array(raw[32...]))),
            ])
        case .p384(let box):
            let key = box.key
            let raw = Array(key.rawRepresentation)
            return .map([
                .init(COSE.kty, .int(COSE.ec2)), .init(COSE.alg, .int(COSE.es384)), .init(COSE.minus1, .int(COSE.p384)),
                .init(COSE.minus2, .bytes(Array(raw[..<48]))), .init(COSE.minus3, .bytes(Array(raw[48...]))),
            ])
        case .rsa(let key):
            // Primitives cannot fail for a key that was constructed successfully (as in `jwk(kid:)`).
            let components = try! key.getKeyPrimitives()
            return .map([
                .init(COSE.kty, .int(COSE.rsa)), .init(COSE.alg, .int(COSE.rs256)),
                .init(COSE.minus1, .bytes(Array(components.modulus))), .init(COSE.minus2, .bytes(Array(components.publicExponent))),
            ])
        }
    }
}
