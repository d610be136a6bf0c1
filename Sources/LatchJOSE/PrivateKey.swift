import Crypto
import CryptoExtras
import Foundation

/// A private signing key bound to one JWS algorithm. Never logged: `description` names only the algorithm.
public struct PrivateKey: Sendable, CustomStringConvertible {
    enum Backing: Sendable {
        case p256(SendableKey<P256.Signing.PrivateKey>)
        case p384(SendableKey<P384.Signing.PrivateKey>)
        case rsa(_RSA.Signing.PrivateKey)
    }

    let backing: Backing

    /// The algorithm this key signs with.
    public var algorithm: JWSAlgorithm {
        switch backing {
        case .p256: .ES256
        case .p384: .ES384
        case .rsa: .RS256
        }
    }

    /// A new random key for `algorithm` (RSA: 2048 bits unless `rsaBits` says more).
    public static func generate(_ algorithm: JWSAlgorithm, rsaBits: Int = 2048) throws -> PrivateKey {
        switch algorithm {
        case .ES256: PrivateKey(backing: .p256(SendableKey(P256.Signing.PrivateKey())))
        case .ES384: PrivateKey(backing: .p384(SendableKey(P384.Signing.PrivateKey())))
        case .RS256: PrivateKey(backing: .rsa(try _RSA.Signing.PrivateKey(keySize: .init(bitCount: rsaBits))))
        }
    }

    /// Wraps a P-256 key.
    public init(p256 key: P256.Signing.PrivateKey) { backing = .p256(SendableKey(key)) }

    /// Wraps an RSA key.
    public init(rsa key: _RSA.Signing.PrivateKey) { backing = .rsa(key) }

    private init(backing: Backing) { self.backing = backing }

    /// Reads a PEM private key: PKCS#8 (`PRIVATE KEY`), SEC1 (`EC PRIVATE KEY`) or PKCS#1 (`RSA PRIVATE KEY`).
    public init(pem: String) throws(JOSEError) {
        let text = pem.trimmingCharacters(in: .whitespacesAndNewlines)
        if let key = try? P256.Signing.PrivateKey(pemRepresentation: text) {
            backing = .p256(SendableKey(key))
        } else if let key = try? P384.Signing.PrivateKey(pemRepresentation: text) {
            backing = .p384(SendableKey(key))
        } else if let key = try? _RSA.Signing.PrivateKey(pemRepresentation: text) {
            backing = .rsa(key)
        } else {
            throw JOSEError(.invalidKey, "not a PEM P-256, P-384 or RSA (≥ 2048 bits) private key")
        }
    }

    /// PKCS#8 PEM.
    public var pemRepresentation: String {
        switch backing {
        case .p256(let box): box.key.pemRepresentation
        case .p384(let box): box.key.pemRepresentation
        case .rsa(let key): key.pkcs8PEMRepresentation
        }
    }

    /// The matching public key.
    public var publicKey: PublicKey {
        switch backing {
        case .p256(let box): PublicKey(p256: box.key.publicKey)
        case .p384(let box): PublicKey(p384: box.key.publicKey)
        case .rsa(let key): PublicKey(rsa: key.publicKey)
        }
    }

    /// The raw JWS signature over `signingInput` (RFC 7518 §3.3, §3.4); an ECDSA one in low-S form.
    public func signature(for signingInput: some DataProtocol) throws -> Data {
        switch backing {
        case .p256(let box):
            let key = box.key
            return Data(P256LowS.normalized(Array(try key.signature(for: SHA256.hash(data: signingInput)).rawRepresentation)))
        case .p384(let box):
            let key = box.key
            return try key.signature(for: SHA384.hash(data: signingInput)).rawRepresentation
        case .rsa(let key):
            return try key.signature(for: SHA256.hash(data: signingInput), padding: .insecurePKCS1v1_5)
                .rawRepresentation
        }
    }

    public var description: String { "PrivateKey(\(algorithm.rawValue), redacted)" }
}
