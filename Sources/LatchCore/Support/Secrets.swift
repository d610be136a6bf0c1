import Crypto
import Foundation

/// Hashing and comparison of bearer secrets (refresh tokens, admin tokens).
///
/// These secrets are 256-bit random values, so a single SHA-256 is a sound at-rest form: there is nothing to
/// brute-force. Only the hash is ever stored.
public enum Secrets {
    /// SHA-256 of the secret's UTF-8 bytes.
    public static func hash(_ secret: some StringProtocol) -> Data {
        Data(SHA256.hash(data: Array(secret.utf8)))
    }

    /// Compares two byte strings in time independent of where they differ.
    public static func constantTimeEquals(_ lhs: some DataProtocol, _ rhs: some DataProtocol) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(lhs, rhs) { difference |= a ^ b }
        return difference == 0
    }

    /// Compares two strings' UTF-8 bytes in time independent of where they differ.
    public static func constantTimeEquals(_ lhs: String, _ rhs: String) -> Bool {
        constantTimeEquals(Array(lhs.utf8), Array(rhs.utf8))
    }
}

extension StringProtocol {
    /// Whether any scalar is a C0 or C1 control character (cheaper than a general-category lookup).
    public var containsControlCharacters: Bool {
        unicodeScalars.contains { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }
    }
}
