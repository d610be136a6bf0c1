import Foundation
import LatchModel

/// A compact-serialized JWS (RFC 7515 §7.1), parsed but **not yet verified**.
///
/// Parsing checks the shape only: three base64url parts, a JSON object header with a string `alg`, and a
/// payload that is a JSON object. ``verify(with:)`` then applies Latch's header policy (RFC 8725) and the
/// signature check, returning ``VerifiedJWS``.
public struct ParsedJWS: Sendable {
    /// The decoded protected header.
    public let header: [String: JSONValue]
    /// The decoded payload (JWT claims set).
    public let claims: [String: JSONValue]
    /// The header's `alg`, as written.
    public let algorithmName: String
    /// The header's `kid`, when it is a string.
    public let keyID: String?
    let signingInput: [UInt8]
    let signature: Data

    /// Default cap on a token's size (8 KiB).
    public static let defaultMaximumLength = 8 * 1024

    /// Parses `token`; refuses anything longer than `maximumLength` bytes.
    public init(_ token: some StringProtocol, maximumLength: Int = ParsedJWS.defaultMaximumLength) throws(JOSEError) {
        guard token.utf8.count <= maximumLength else {
            throw JOSEError(.tooLarge, "the token exceeds \(maximumLength) bytes")
        }
        var string = String(token)
        // Work on the UTF-8 bytes: splitting and decoding Characters costs more than verifying the signature.
        let parts = string.withUTF8 { bytes -> Parts? in
            guard let first = bytes.firstIndex(of: UInt8(ascii: ".")),
                let second = bytes[(first + 1)...].firstIndex(of: UInt8(ascii: ".")),
                !bytes[(second + 1)...].contains(UInt8(ascii: ".")),
                first > 0, second > first + 1, second + 1 < bytes.count
            else { return nil }
            func decoded(_ range: Range<Int>) -> [UInt8]? { Base64URL.decodeBytes(UnsafeBufferPointer(rebasing: bytes[range])) }
            return Parts(
                header: decoded(0..<first), payload: decoded((first + 1)..<second), signature: decoded((second + 1)..<bytes.count),
                signingInput: Array(bytes[0..<second]))
        }
        guard let parts else { throw JOSEError(.malformed, "a JWS in compact form has three non-empty parts") }
        guard let headerBytes = parts.header, case .object(let header)? = try? JSONValue.parse(headerBytes) else {
            throw JOSEError(.malformed, "the header is not a base64url JSON object")
        }
        guard let payloadBytes = parts.payload, case .object(let claims)? = try? JSONValue.parse(payloadBytes) else {
            throw JOSEError(.malformed, "the payload is not a base64url JSON object")
        }
        guard let signature = parts.signature else { throw JOSEError(.malformed, "the signature is not base64url") }
        guard case .string(let alg)? = header["alg"] else {
            throw JOSEError(.unsupportedAlgorithm, "the header has no alg")
        }
        self.header = header
        self.claims = claims
        self.algorithmName = alg
        self.keyID = header["kid"]?.stringValue
        self.signature = Data(signature)
        self.signingInput = parts.signingInput
    }

    /// The three parts of a compact JWS, decoded (nil where not base64url), and the bytes the signature covers.
    private struct Parts {
        let header: [UInt8]?
        let payload: [UInt8]?
        let signature: [UInt8]?
        let signingInput: [UInt8]
    }

    /// The algorithm, if it is one Latch supports; `none`, HS*, and everything else are refused.
    public func algorithm() throws(JOSEError) -> JWSAlgorithm {
        guard let algorithm = JWSAlgorithm(rawValue: algorithmName) else {
            throw JOSEError(.unsupportedAlgorithm, "alg \(algorithmName.prefix(16)) is not accepted (ES256, ES384, RS256)")
        }
        return algorithm
    }

    /// Header members that would let the token choose its own key or change processing rules.
    static let forbiddenHeaders = ["jwk", "jku", "x5u", "x5c", "crit"]

    /// Applies the header policy and checks the signature with `key`.
    ///
    /// - Step 1. `alg` is on the allowlist and equals the key's one algorithm (RFC 8725 §3.1).
    /// - Step 2. No `jwk`/`jku`/`x5u`/`x5c` (the key never comes from the token), no `crit` (Latch
    ///   understands no extensions, so any critical one must be refused, RFC 7515 §4.1.11).
    /// - Step 3. The signature verifies — with `canonical`, in the one form Latch writes (low-S ECDSA), for
    ///   tokens Latch signed itself.
    public func verify(with key: PublicKey, canonical: Bool = false) throws(JOSEError) -> VerifiedJWS {
        // Step 1.
        let algorithm = try algorithm()
        guard algorithm == key.algorithm else {
            throw JOSEError(.algorithmMismatch, "alg \(algorithm.rawValue) is not the key's algorithm")
        }
        // Step 2.
        try checkHeaderPolicy()
        // Step 3.
        guard key.isValidSignature(signature, for: signingInput, canonical: canonical) else {
            throw JOSEError(.badSignature, "the signature does not verify")
        }
        return VerifiedJWS(header: header, claims: claims, algorithm: algorithm)
    }

    /// Checks the signature with `key`, the key of an `x5c` certificate chain the caller has validated against its own
    /// trust anchors (a FIDO Metadata Service BLOB is signed so): `alg` must be the key's; `x5c` is expected, and
    /// `jwk`, `jku`, `x5u` and `crit` are still refused.
    public func verify(withCertifiedKey key: PublicKey) throws(JOSEError) -> VerifiedJWS {
        let algorithm = try algorithm()
        guard algorithm == key.algorithm else {
            throw JOSEError(.algorithmMismatch, "alg \(algorithm.rawValue) is not the certificate key's algorithm")
        }
        for name in Self.forbiddenHeaders where name != "x5c" && header[name] != nil {
            throw JOSEError(.forbiddenHeader, "the \(name) header is not accepted")
        }
        guard key.isValidSignature(signature, for: signingInput) else {
            throw JOSEError(.badSignature, "the signature does not verify")
        }
        return VerifiedJWS(header: header, claims: claims, algorithm: algorithm)
    }

    /// Refuses forbidden header members (step 2 of ``verify(with:)``), for callers that check before looking up a key.
    public func checkHeaderPolicy() throws(JOSEError) {
        for name in Self.forbiddenHeaders where header[name] != nil {
            throw JOSEError(.forbiddenHeader, "the \(name) header is not accepted")
        }
    }
}

/// A JWS whose header policy and signature were checked. Claims still need checking by the caller.
public struct VerifiedJWS: Sendable {
    /// The protected header.
    public let header: [String: JSONValue]
    /// The claims set.
    public let claims: [String: JSONValue]
    /// The algorithm that verified.
    public let algorithm: JWSAlgorithm
}

/// Signs compact JWS tokens with one key.
public struct JWSSigner: Sendable {
    /// The private key.
    public let key: PrivateKey
    /// The `kid` written into every header.
    public let keyID: String

    /// Encoded headers for the common types, made once.
    private let encodedHeaders: [String: String]

    public init(key: PrivateKey, keyID: String) {
        self.key = key
        self.keyID = keyID
        encodedHeaders = Self.commonHeaders(algorithm: key.algorithm, keyID: keyID)
    }

    // A separate function: building this dictionary inline in `init` crashes the Swift 6.3.1 optimizer
    // (CopyPropagation) in release builds.
    static func commonHeaders(algorithm: JWSAlgorithm, keyID: String) -> [String: String] {
        Dictionary(uniqueKeysWithValues: ["JWT", "at+jwt"].map { ($0, encodedHeader(algorithm: algorithm, keyID: keyID, type: $0)) })
    }

    static func encodedHeader(algorithm: JWSAlgorithm, keyID: String, type: String) -> String {
        var header = JSONWriter(reservingCapacity: 96)
        header.beginObject()
        header.member("alg", algorithm.rawValue)
        header.member("kid", keyID)
        header.member("typ", type)
        header.endObject()
        return Base64URL.encode(header.bytes)
    }

    /// Signs a claims set written as JSON bytes; `type` goes into the `typ` header (e.g. `JWT`, `at+jwt`).
    public func sign(claimsJSON: [UInt8], type: String = "JWT") throws -> String {
        try Self.compact(
            encodedHeader: encodedHeaders[type] ?? Self.encodedHeader(algorithm: key.algorithm, keyID: keyID, type: type), claimsJSON: claimsJSON
        ) { try key.signature(for: $0) }
    }

    /// Signs a claims set given as a JSON object.
    public func sign(claims: [String: JSONValue], type: String = "JWT") throws -> String {
        try sign(claimsJSON: JSONValue.object(claims).serialized(), type: type)
    }
}
