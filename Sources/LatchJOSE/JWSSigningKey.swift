import Foundation
import LatchModel

/// Something that makes JWS signatures with one key for one algorithm: a ``PrivateKey`` in memory, or a key that
/// never leaves its hardware (the SDK's Secure Enclave key), which only offers "sign these bytes".
public protocol JWSSigningKey: Sendable {
    /// The algorithm of every signature (`alg`).
    var algorithm: JWSAlgorithm { get }
    /// The matching public key.
    var publicKey: PublicKey { get }
    /// The raw JWS signature over `signingInput` (RFC 7518 §3.3, §3.4: R || S for ECDSA, low-S for ES256).
    func signature(for signingInput: [UInt8]) throws -> Data
}

extension PrivateKey: JWSSigningKey {
    public func signature(for signingInput: [UInt8]) throws -> Data {
        // The slice selects the generic `signature(for: some DataProtocol)`, not this method again.
        try signature(for: signingInput[...])
    }
}

extension JWSAlgorithm {
    /// The JWS form of a P-256 signature a platform made over SHA-256 of the signing input: its raw R || S (64
    /// bytes) in low-S form, the only form Latch writes. `nil` when it is not 64 bytes.
    public static func es256Signature(rawRepresentation raw: some DataProtocol) -> Data? {
        let bytes = Array(raw)
        guard bytes.count == 64 else { return nil }
        return Data(P256LowS.normalized(bytes))
    }
}

extension JWSSigner {
    /// A compact JWS of `claims` signed by `key` (a hardware key, say): header `alg`, `kid` and `typ`.
    public static func sign(claims: [String: JSONValue], key: any JWSSigningKey, keyID: String, type: String = "JWT") throws -> String {
        try compact(encodedHeader: encodedHeader(algorithm: key.algorithm, keyID: keyID, type: type), claimsJSON: JSONValue.object(claims).serialized()) {
            try key.signature(for: $0)
        }
    }

    /// `header.claims.signature`, the signature made by `sign` over the first two parts (RFC 7515 §7.1).
    static func compact(encodedHeader: String, claimsJSON: [UInt8], sign: ([UInt8]) throws -> Data) rethrows -> String {
        var token = encodedHeader
        token.append(".")
        token.append(Base64URL.encode(claimsJSON))
        let signature = try sign(Array(token.utf8))
        token.append(".")
        token.append(Base64URL.encode(signature))
        return token
    }
}
