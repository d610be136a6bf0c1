import Crypto
import Foundation
import LatchJOSE

/// Refresh tokens: `lrt_<session id>.<generation>.<MAC>`, where MAC = HMAC-SHA256(key, "lrt1|sid|generation").
///
/// Nothing derived from a token is stored: the server recomputes the MAC, and the session row keeps only the
/// live generation. A database leak therefore yields no usable token (the key comes from the deployment's
/// key-encryption key, which is never in the database), and a rotation changes one row instead of inserting
/// one. Because only the server can produce a valid MAC, an *older* generation that verifies is proof of
/// reuse (RFC 9700 §4.14.2), while a forged one is merely invalid — knowing a session id is not enough to
/// revoke somebody's session.
public struct RefreshTokenCodec: Sendable {
    private let format: MACToken

    /// The recognisable prefix (secret scanners can find leaked tokens).
    public static let prefix = "lrt_"

    public init(key: SymmetricKey) { format = MACToken(prefix: Self.prefix, domain: "lrt1", maximumLength: 256, key: key) }

    /// The token of `generation` in session `sessionID`.
    public func token(sessionID: String, generation: Int64) -> String {
        format.seal([sessionID, String(generation)])
    }

    /// The session and generation of a genuine token; nil for anything malformed or not made by this key.
    public func parse(_ token: String) -> (sessionID: String, generation: Int64)? {
        // Canonical decimal only: "007" or "+7" would be another spelling of the same token.
        guard let fields = format.open(token, fieldCount: 2), !fields[0].isEmpty, let generation = MACToken.integer(fields[1]), generation >= 0
        else { return nil }
        return (String(fields[0]), generation)
    }
}

extension KeySealer {
    /// A key for one purpose, derived (HKDF-SHA256) from the key-encryption key.
    public static func derivedKey(from keyEncryptionKey: some ContiguousBytes, purpose: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: keyEncryptionKey), info: Array("latch \(purpose)".utf8), outputByteCount: 32)
    }
}
