import Crypto
import CryptoExtras
import Foundation
import LatchModel

/// A public key bound to exactly one JWS algorithm (RFC 8725 §3.1).
public struct PublicKey: Sendable {
    enum Backing: Sendable {
        case p256(SendableKey<P256.Signing.PublicKey>)
        case p384(SendableKey<P384.Signing.PublicKey>)
        case rsa(_RSA.Signing.PublicKey)
    }

    let backing: Backing

    /// The only algorithm this key verifies.
    public var algorithm: JWSAlgorithm {
        switch backing {
        case .p256: .ES256
        case .p384: .ES384
        case .rsa: .RS256
        }
    }

    /// Wraps a P-384 key (ES384).
    public init(p384 key: P384.Signing.PublicKey) { backing = .p384(SendableKey(key)) }

    /// Wraps a P-256 key (ES256).
    public init(p256 key: P256.Signing.PublicKey) { backing = .p256(SendableKey(key)) }

    /// The P-256 key, when this is one.
    public var p256: P256.Signing.PublicKey? {
        if case .p256(let box) = backing { return box.key }
        return nil
    }

    /// Wraps an RSA key (RS256). Keys under 2048 bits cannot be made (swift-crypto refuses them).
    public init(rsa key: _RSA.Signing.PublicKey) { backing = .rsa(key) }

    /// Largest RSA modulus accepted: bounds the cost of a verification an attacker can trigger.
    public static let maximumRSABits = 8192

    /// Reads a key for `algorithm` from PEM (SPKI `PUBLIC KEY`, PKCS#1 `RSA PUBLIC KEY`) or from base64 of
    /// the DER of either. The text must match the algorithm: an EC key for ES256, RSA ≥ 2048 bits for RS256.
    public init(pemOrBase64DER text: String, algorithm: JWSAlgorithm) throws(JOSEError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 16 * 1024 else {
            throw JOSEError(.invalidKey, "the public key is empty or too long")
        }
        let der: Data
        if trimmed.hasPrefix("-----BEGIN") {
            der = try Self.derFromPEM(trimmed)
        } else {
            let compact = trimmed.filter { !$0.isWhitespace }
            guard let decoded = Data(base64Encoded: compact), !decoded.isEmpty else {
                throw JOSEError(.invalidKey, "the public key is neither PEM nor base64 DER")
            }
            der = decoded
        }
        try self.init(der: der, algorithm: algorithm)
    }

    /// Reads a key for `algorithm` from DER (SPKI, or PKCS#1 for RSA).
    public init(der: Data, algorithm: JWSAlgorithm) throws(JOSEError) {
        switch algorithm {
        case .ES256:
            guard let key = try? P256.Signing.PublicKey(derRepresentation: der) else {
                throw JOSEError(.invalidKey, "not a P-256 public key (ES256 needs an EC P-256 SPKI key)")
            }
            backing = .p256(SendableKey(key))
        case .ES384:
            guard let key = try? P384.Signing.PublicKey(derRepresentation: der) else {
                throw JOSEError(.invalidKey, "not a P-384 public key (ES384 needs an EC P-384 SPKI key)")
            }
            backing = .p384(SendableKey(key))
        case .RS256:
            guard let key = try? _RSA.Signing.PublicKey(derRepresentation: der) else {
                throw JOSEError(.invalidKey, "not an RSA public key of at least 2048 bits")
            }
            guard key.keySizeInBits <= Self.maximumRSABits else {
                throw JOSEError(.invalidKey, "RSA keys over \(Self.maximumRSABits) bits are not accepted")
            }
            backing = .rsa(key)
        }
    }

    /// Reads a public JWK; its `alg`, when present, must match the key type.
    public init(jwk: JSONWebKey) throws(JOSEError) {
        switch jwk.kty {
        case "EC" where jwk.crv == "P-384":
            guard let x = jwk.x.flatMap(Base64URL.decode), let y = jwk.y.flatMap(Base64URL.decode), x.count == 48, y.count == 48,
                let key = try? P384.Signing.PublicKey(rawRepresentation: x + y)
            else { throw JOSEError(.invalidKey, "not a P-384 JWK") }
            guard jwk.alg == nil || jwk.alg == JWSAlgorithm.ES384.rawValue else {
                throw JOSEError(.algorithmMismatch, "an EC P-384 JWK must be used with ES384")
            }
            backing = .p384(SendableKey(key))
        case "EC":
            guard jwk.crv == "P-256", let x = jwk.x.flatMap(Base64URL.decode), let y = jwk.y.flatMap(Base64URL.decode),
                x.count == 32, y.count == 32,
                let key = try? P256.Signing.PublicKey(rawRepresentation: x + y)
            else { throw JOSEError(.invalidKey, "not a P-256 JWK") }
            guard jwk.alg == nil || jwk.alg == JWSAlgorithm.ES256.rawValue else {
                throw JOSEError(.algorithmMismatch, "an EC P-256 JWK must be used with ES256")
            }
            backing = .p256(SendableKey(key))
        case "RSA":
            guard let n = jwk.n.flatMap(Base64URL.decode), let e = jwk.e.flatMap(Base64URL.decode),
                let key = try? _RSA.Signing.PublicKey(n: n, e: e), key.keySizeInBits <= Self.maximumRSABits
            else { throw JOSEError(.invalidKey, "not an RSA JWK of 2048 to \(Self.maximumRSABits) bits") }
            guard jwk.alg == nil || jwk.alg == JWSAlgorithm.RS256.rawValue else {
                throw JOSEError(.algorithmMismatch, "an RSA JWK must be used with RS256")
            }
            backing = .rsa(key)
        default:
            throw JOSEError(.invalidKey, "unsupported JWK key type")
        }
    }

    /// The SPKI DER encoding.
    public var derRepresentation: Data {
        switch backing {
        case .p256(let box): box.key.derRepresentation
        case .p384(let box): box.key.derRepresentation
        case .rsa(let key): key.derRepresentation
        }
    }

    /// The SPKI PEM encoding.
    public var pemRepresentation: String {
        switch backing {
        case .p256(let box): box.key.pemRepresentation
        case .p384(let box): box.key.pemRepresentation
        case .rsa(let key): key.pemRepresentation
        }
    }

    /// The public JWK, with `kid`, `alg` and `use: sig`.
    public func jwk(kid: String) -> JSONWebKey {
        switch backing {
        case .p256(let box):
            let key = box.key
            let raw = key.rawRepresentation
            return JSONWebKey(
                kty: "EC", kid: kid, alg: "ES256", crv: "P-256",
                x: Base64URL.encode(raw.prefix(32)), y: Base64URL.encode(raw.suffix(32)))
        case .p384(let box):
            let key = box.key
            let raw = key.rawRepresentation
            return JSONWebKey(
                kty: "EC", kid: kid, alg: "ES384", crv: "P-384",
                x: Base64URL.encode(raw.prefix(48)), y: Base64URL.encode(raw.suffix(48)))
        case .rsa(let key):
            // Primitives cannot fail for a key that was constructed successfully.
            let primitives = try! key.getKeyPrimitives()
            return JSONWebKey(
                kty: "RSA", kid: kid, alg: "RS256",
                n: Base64URL.encode(primitives.modulus), e: Base64URL.encode(primitives.publicExponent))
        }
    }

    /// RFC 7638 JWK thumbprint (SHA-256, base64url): a stable id derived from the key itself.
    public var thumbprint: String {
        let jwk = jwk(kid: "")
        let json: String
        switch backing {
        case .p256: json = #"{"crv":"P-256","kty":"EC","x":"\#(jwk.x!)","y":"\#(jwk.y!)"}"#
        case .p384: json = #"{"crv":"P-384","kty":"EC","x":"\#(jwk.x!)","y":"\#(jwk.y!)"}"#
        case .rsa: json = #"{"e":"\#(jwk.e!)","kty":"RSA","n":"\#(jwk.n!)"}"#
        }
        return Base64URL.encode(Data(SHA256.hash(data: Data(json.utf8))))
    }

    /// Checks a JWS signature over `signingInput` (RFC 7515 §5.2 step 8). With `canonical`, an ECDSA signature
    /// must also be in low-S form (the only form Latch writes), so a signature of Latch's has one spelling.
    public func isValidSignature(_ signature: some DataProtocol, for signingInput: some DataProtocol, canonical: Bool = false) -> Bool {
        switch backing {
        case .p256(let box):
            let key = box.key
            // RFC 7518 §3.4: the signature is R || S, 32 bytes each.
            guard signature.count == 64, !canonical || P256LowS.isLow(signature.dropFirst(32)),
                let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
            else { return false }
            return key.isValidSignature(ecdsa, for: SHA256.hash(data: signingInput))
        case .p384(let box):
            let key = box.key
            // R || S, 48 bytes each. Latch never signs ES384, so no form is canonical: `canonical` refuses it.
            guard signature.count == 96, !canonical, let ecdsa = try? P384.Signing.ECDSASignature(rawRepresentation: signature) else {
                return false
            }
            return key.isValidSignature(ecdsa, for: SHA384.hash(data: signingInput))
        case .rsa(let key):
            guard signature.count == key.keySizeInBits / 8 else { return false }
            return key.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: signature), for: SHA256.hash(data: signingInput),
                padding: .insecurePKCS1v1_5)
        }
    }

    static func derFromPEM(_ pem: String) throws(JOSEError) -> Data {
        let lines = pem.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        guard let first = lines.first, let last = lines.last, first.hasPrefix("-----BEGIN "), last.hasPrefix("-----END "),
            first.hasSuffix("-----"), last.hasSuffix("-----")
        else { throw JOSEError(.invalidKey, "malformed PEM armour") }
        let label = first.dropFirst("-----BEGIN ".count).dropLast(5)
        guard label == "PUBLIC KEY" || label == "RSA PUBLIC KEY" || label == "EC PUBLIC KEY" else {
            throw JOSEError(.invalidKey, "a PEM public key is expected (PUBLIC KEY or RSA PUBLIC KEY)")
        }
        guard last == "-----END \(label)-----" else { throw JOSEError(.invalidKey, "mismatched PEM armour") }
        let body = lines.dropFirst().dropLast().joined()
        guard let der = Data(base64Encoded: body), !der.isEmpty else {
            throw JOSEError(.invalidKey, "the PEM body is not base64")
        }
        return der
    }
}

extension PublicKey {
    /// Reads a key whose algorithm is not given: an EC P-256 key is ES256, P-384 ES384, an RSA key RS256.
    public init(pemOrBase64DER text: String) throws(JOSEError) {
        if let key = try? PublicKey(pemOrBase64DER: text, algorithm: .ES256) {
            self = key
        } else if let key = try? PublicKey(pemOrBase64DER: text, algorithm: .ES384) {
            self = key
        } else {
            self = try PublicKey(pemOrBase64DER: text, algorithm: .RS256)
        }
    }
}

extension PublicKey {
    /// The signing keys of a JWK Set (RFC 7517 §5) by `kid`: members with a `kid` of 1–255 bytes, `use` absent or `sig`,
    /// no private part, of a supported type and size; a key whose `alg` does not match its type is left out. At most
    /// `maximumKeys` members are read; a body over `maximumBytes`, or one that is not a JSON object with a `keys`
    /// array, is refused (`malformed` / `tooLarge`).
    public static func signingKeys(ofJWKS body: [UInt8], maximumBytes: Int = 64 * 1024, maximumKeys: Int = 32) throws(JOSEError) -> [String: PublicKey] {
        guard body.count <= maximumBytes else { throw JOSEError(.tooLarge, "the JWKS is larger than \(maximumBytes) bytes") }
        guard case .object(let root)? = try? JSONValue.parse(body), case .array(let members)? = root["keys"] else {
            throw JOSEError(.malformed, "the JWKS is not a JSON object with a keys array")
        }
        var keys: [String: PublicKey] = [:]
        for member in members.prefix(maximumKeys) {
            guard case .object(let fields) = member, let kid = fields["kid"]?.stringValue, !kid.isEmpty, kid.utf8.count <= 255,
                fields["use"] == nil || fields["use"]?.stringValue == "sig", fields["d"] == nil
            else { continue }
            let jwk = JSONWebKey(
                kty: fields["kty"]?.stringValue ?? "", kid: kid, alg: fields["alg"]?.stringValue, crv: fields["crv"]?.stringValue,
                x: fields["x"]?.stringValue, y: fields["y"]?.stringValue, n: fields["n"]?.stringValue, e: fields["e"]?.stringValue)
            if let key = try? PublicKey(jwk: jwk) { keys[kid] = key }
        }
        return keys
    }
}
