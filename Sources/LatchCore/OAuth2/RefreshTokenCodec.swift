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
    private let key: SymmetricKey

    /// The recognisable prefix (secret scanners can find leaked tokens).
    public static let prefix = "lrt_"

    public init(key: SymmetricKey) { self.key = key }

    /// The token of `generation` in session `sessionID`.
    public func token(sessionID: String, generation: Int64) -> String {
        Self.prefix + sessionID + "." + String(generation) + "." + Base64URL.encode(Data(mac(sessionID, generation)))
    }

    /// The session and generation of a genuine token; nil for anything malformed or not made by this key.
    public func parse(_ token: String) -> (sessionID: String, generation: Int64)? {
        guard token.utf8.count <= 256, token.hasPrefix(Self.prefix) else { return nil }
        let body = token.utf8.dropFirst(Self.prefix.utf8.count)
        guard let firstDot = body.firstIndex(of: UInt8(ascii: ".")),
            let secondDot = body[body.index(after: firstDot)...].firstIndex(of: UInt8(ascii: ".")),
            firstDot > body.startIndex
        else { return nil }
        let sessionID = String(Substring(body[..<firstDot]))
        let generationText = Substring(body[body.index(after: firstDot)..<secondDot])
        // Canonical decimal only: "007" or "+7" would be another spelling of the same token.
        guard let generation = Int64(generationText), generation >= 0, String(generation) == generationText,
            let presented = Base64URL.decode(Substring(body[body.index(after: secondDot)...]))
        else { return nil }
        guard Secrets.constantTimeEquals(presented, Data(mac(sessionID, generation))) else { return nil }
        return (sessionID, generation)
    }

    private func mac(_ sessionID: String, _ generation: Int64) -> HMAC<SHA256>.MAC {
        HMAC<SHA256>.authenticationCode(for: Array("lrt1|\(sessionID)|\(generation)".utf8), using: key)
    }
}

extension KeySealer {
    /// A key for one purpose, derived (HKDF-SHA256) from the key-encryption key.
    public static func derivedKey(from keyEncryptionKey: some ContiguousBytes, purpose: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: keyEncryptionKey), info: Array("latch \(purpose)".utf8), outputByteCount: 32)
    }
}
