import Crypto
import Foundation
import LatchJOSE
import LatchModel

/// The source of randomness for ids, nonces and tokens. `.system` draws from a CSPRNG seeded by the operating
/// system (below); tests may pass a seeded one.
public struct RandomSource: Sendable {
    private let fill: @Sendable (Int) -> [UInt8]

    public init(_ fill: @escaping @Sendable (Int) -> [UInt8]) { self.fill = fill }

    /// A CSPRNG: BoringSSL's RAND_bytes (through swift-crypto), a DRBG seeded from the operating system. Each call
    /// mixes in fresh input: RDRAND where it is fast, otherwise — without the kernel's fork detection — one
    /// `getrandom` per call (seen on the 2-core VM: about 1 % of a key sign-in's CPU).
    public static let system = RandomSource { count in
        SymmetricKey(size: SymmetricKeySize(bitCount: count * 8)).withUnsafeBytes { Array($0) }
    }

    /// `count` random bytes.
    public func bytes(_ count: Int) -> [UInt8] { fill(count) }

    /// A random token of `byteCount` bytes (default 32 = 256 bits) as unpadded base64url.
    public func token(byteCount: Int = 32) -> String { Base64URL.encode(fill(byteCount)) }

    /// A 16-byte id whose first 6 bytes are the time in milliseconds (big-endian) and the rest random, as
    /// base64url: ids made close in time sort together, so database inserts land on the same index pages
    /// (the layout of UUIDv7, RFC 9562 §5.7). 80 random bits keep them unguessable.
    public func timeOrderedID(now: Date) -> String {
        let milliseconds = UInt64(max(0, now.timeIntervalSince1970 * 1000))
        var bytes = (0..<6).reversed().map { UInt8(truncatingIfNeeded: milliseconds >> (8 * UInt64($0))) }
        bytes += fill(10)
        return Base64URL.encode(bytes)
    }

    /// A random token that sorts by time: the time in milliseconds as 12 lowercase hex digits, then `byteCount`
    /// random bytes as base64url. Hex keeps byte order — base64url's alphabet does not (`z` < `0` in value, not in
    /// ASCII) —, so single-use values made from it (sign-in nonces, registration challenges) are inserted at the
    /// end of `used_jtis`' key instead of on a random page of an ever larger index. The random part alone keeps
    /// them unguessable; the time it shows is no secret (such values carry their expiry in clear).
    public func timeOrderedToken(now: Date, byteCount: Int = 16) -> String {
        let milliseconds = UInt64(max(0, now.timeIntervalSince1970 * 1000)) & 0xFFFF_FFFF_FFFF
        let hex = String(milliseconds, radix: 16)
        return String(repeating: "0", count: 12 - hex.count) + hex + Base64URL.encode(fill(byteCount))
    }

    /// A random RFC 4122 version 4 UUID, lowercase.
    public func uuid() -> String {
        var b = fill(16)
        b[6] = (b[6] & 0x0F) | 0x40
        b[8] = (b[8] & 0x3F) | 0x80
        let uuid = UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
        return uuid.uuidString.lowercased()
    }
}
