/// ECDSA signatures are malleable: if (r, s) is valid, so is (r, n − s). Latch writes the "low-S" form
/// (s ≤ n/2, as Bitcoin's BIP 62 and libsecp256k1 do) and, for its own tokens, accepts only that form, so each
/// token has exactly one valid spelling.
enum P256LowS {
    /// The order n of the P-256 group (FIPS 186-4 / SEC 2), big-endian.
    static let order: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
    ]

    /// ⌊n / 2⌋, big-endian.
    static let halfOrder: [UInt8] = {
        var half = [UInt8](repeating: 0, count: 32)
        var carry: UInt8 = 0
        for index in 0..<32 {
            half[index] = (order[index] >> 1) | (carry << 7)
            carry = order[index] & 1
        }
        return half
    }()

    /// Whether the 32-byte big-endian `s` is at most n/2.
    static func isLow(_ s: some Collection<UInt8>) -> Bool {
        for (a, b) in zip(s, halfOrder) where a != b { return a < b }
        return true
    }

    /// n − s for a 32-byte big-endian `s` with 0 < s < n.
    static func negate(_ s: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in stride(from: 31, through: 0, by: -1) {
            var difference = Int(order[index]) - Int(s[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            result[index] = UInt8(difference)
        }
        return result
    }

    /// The raw R || S signature with S in low form.
    static func normalized(_ signature: [UInt8]) -> [UInt8] {
        guard signature.count == 64 else { return signature }
        let s = Array(signature[32...])
        return isLow(s) ? signature : Array(signature[..<32]) + negate(s)
    }
}
