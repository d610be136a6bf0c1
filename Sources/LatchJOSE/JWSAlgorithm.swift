/// The JWS algorithms Latch signs and verifies (RFC 7518 §3.1). Anything else — `none` and the HMAC family
/// included — is refused before a key is touched (RFC 8725 §3.1).
public enum JWSAlgorithm: String, Sendable, Hashable, CaseIterable, Codable {
    /// ECDSA P-256 with SHA-256; Latch's default for its own tokens.
    case ES256
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    case RS256
    /// ECDSA P-384 with SHA-384: verified for others' tokens (login issuers, federated issuers, device keys); Latch does
    /// not sign with it.
    case ES384

    /// The algorithms Latch's own signing keys may use.
    public static let signing: [JWSAlgorithm] = [.ES256, .RS256]
}
