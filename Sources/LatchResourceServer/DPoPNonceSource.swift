import Crypto
import Foundation
import LatchJOSE
import LatchModel

/// Server nonces for DPoP proofs (RFC 9449 §9) without storage: the nonce of time window `w` (`w` = Unix seconds ÷
/// window length) is base64url of `w` (8 bytes, big-endian) followed by the first 16 bytes of
/// HMAC-SHA256(secret, "latch-dpop-nonce" ‖ `w`). A nonce is accepted during its window and the next one, so a client
/// that just received one has at least one window to use it; replicas sharing the secret accept each other's nonces.
public final class DPoPNonceSource: Sendable {
    /// The window length, seconds.
    public let window: Int64
    let key: SymmetricKey
    let clock: @Sendable () -> Int64
    /// The nonces of the latest window seen and the one before it, made once per window.
    let cached = Locked<(window: Int64, current: String, previous: String)?>(nil)

    /// A source with windows of `window` seconds (at least 1) and MAC key `secret` (a random one when nil); `clock`
    /// gives Unix seconds.
    public init(window: Int64 = 60, secret: SymmetricKey? = nil, clock: @escaping @Sendable () -> Int64) {
        self.window = max(1, window)
        self.key = secret ?? SymmetricKey(size: .bits256)
        self.clock = clock
    }

    /// The nonce to hand out now (`DPoP-Nonce`).
    public func current() -> String { nonces().current }

    /// Whether `nonce` is the nonce of the current window or of the one before.
    public func isValid(_ nonce: String) -> Bool {
        guard nonce.utf8.count == 32 else { return false }
        let (current, previous) = nonces()
        return nonce == current || nonce == previous
    }

    func nonces() -> (current: String, previous: String) {
        let now = clock()
        let index = now >= 0 ? now / window : (now - window + 1) / window
        return cached.withLock { state in
            if let known = state, known.window == index { return (known.current, known.previous) }
            let current = nonce(window: index)
            let previous: String
            if let known = state, known.window == index - 1 { previous = known.current } else { previous = nonce(window: index - 1) }
            state = (index, current, previous)
            return (current, previous)
        }
    }

    /// The nonce of window `index`.
    func nonce(window index: Int64) -> String {
        var message = Array("latch-dpop-nonce".utf8)
        let counter = withUnsafeBytes(of: index.bigEndian) { Array($0) }
        message.append(contentsOf: counter)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: key)
        return Base64URL.encode(counter + Array(mac).prefix(16))
    }
}
