/// Why a compact JWE was refused. The `reason` is stable (its `rawValue` is the code to log or match on);
/// `detail` is for logs and error descriptions and never contains key material or plaintext.
///
/// Equality compares the reason only, so a test can write `#expect(throws: JWEError(.malformed))`.
public struct JWEError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable reason codes.
    public enum Reason: String, Sendable, Hashable, CaseIterable {
        /// Longer than ``JWECompact/maximumInputLength`` (checked before anything is decoded).
        case tooLarge = "too_large"
        /// Not five parts, a part that is not strict unpadded base64url, a header that is not a strict JSON
        /// object (UTF-8, no duplicate names), `alg`/`enc` missing or not strings, or an encrypted key, IV or tag
        /// of the wrong length.
        case malformed = "malformed"
        /// `alg` is a string other than `A256KW`.
        case unsupportedAlgorithm = "unsupported_algorithm"
        /// `enc` is a string other than `A256GCM`.
        case unsupportedEncryption = "unsupported_encryption"
        /// A `zip` header parameter is present (whatever its value): compression is refused.
        case unsupportedCompression = "unsupported_compression"
        /// A `crit` header parameter is present (whatever its value, even `[]`): no extensions are understood.
        case unsupportedCritical = "unsupported_critical"
        /// The key-encryption key given by the caller is not a 256-bit AES key.
        case invalidKey = "invalid_key"
        /// AES Key Wrap's integrity check failed: a wrong key-encryption key or a tampered encrypted key.
        case keyUnwrapFailed = "key_unwrap_failed"
        /// AES-GCM authentication failed: a tampered header, IV, ciphertext or tag (or a CEK that is not the
        /// one the content was encrypted with).
        case decryptionFailed = "decryption_failed"
    }

    /// The stable reason.
    public let reason: Reason
    /// A human-readable detail.
    public let detail: String

    public init(_ reason: Reason, _ detail: String = "") {
        self.reason = reason
        self.detail = detail
    }

    /// The stable reason code, e.g. `"key_unwrap_failed"`.
    public var code: String { reason.rawValue }

    public var description: String { detail.isEmpty ? reason.rawValue : "\(reason.rawValue): \(detail)" }

    public static func == (lhs: JWEError, rhs: JWEError) -> Bool { lhs.reason == rhs.reason }
    public func hash(into hasher: inout Hasher) { hasher.combine(reason) }
}
