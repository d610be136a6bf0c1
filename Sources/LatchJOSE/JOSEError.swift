/// Why a JWS or key was refused. The `reason` is stable; `detail` is for logs and error descriptions.
public struct JOSEError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Stable reason codes.
    public enum Reason: String, Sendable, Hashable {
        /// Not three base64url parts, or a part that is not base64url / JSON.
        case malformed
        /// Longer than the caller's limit.
        case tooLarge
        /// `alg` missing, `none`, or not on the allowlist.
        case unsupportedAlgorithm
        /// A header Latch refuses: `jwk`, `jku`, `x5u`, `x5c`, or any `crit`.
        case forbiddenHeader
        /// `kid` missing or not a string.
        case missingKeyID
        /// `alg` differs from the algorithm the key is bound to.
        case algorithmMismatch
        /// The signature does not verify.
        case badSignature
        /// A key could not be read or is not of an accepted type or size.
        case invalidKey
    }

    /// The stable reason.
    public let reason: Reason
    /// A human-readable detail; never contains key material.
    public let detail: String

    public init(_ reason: Reason, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    public var description: String { "\(reason.rawValue): \(detail)" }

    public static func == (lhs: JOSEError, rhs: JOSEError) -> Bool { lhs.reason == rhs.reason }
    public func hash(into hasher: inout Hasher) { hasher.combine(reason) }
}
