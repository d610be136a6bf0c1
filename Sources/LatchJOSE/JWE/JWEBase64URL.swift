/// Unpadded base64url (RFC 4648 §5, as RFC 7515 §2 uses it), strict in both directions.
///
/// Decoding accepts only the canonical spelling of a byte string: characters from `A–Z a–z 0–9 - _`, no `=`,
/// no whitespace, a length that is not 1 mod 4, and zero bits in whatever the last character carries beyond
/// the final byte. So one byte string has exactly one accepted spelling and a token cannot be re-spelled.
enum JWEBase64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte's 6-bit value, or 0x40 for a byte outside the alphabet.
    private static let sextets: [UInt8] = {
        var table = [UInt8](repeating: 0x40, count: 256)
        for index in alphabet.indices { table[Int(alphabet[index])] = UInt8(index) }
        return table
    }()

    /// Encodes bytes without padding.
    static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                out.append(alphabet[Int(accumulator >> UInt32(bits) & 0x3F)])
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 {
            out.append(alphabet[Int(accumulator << UInt32(6 - bits) & 0x3F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes the canonical unpadded spelling; `nil` for anything else.
    static func decode(_ text: some Collection<UInt8>) -> [UInt8]? {
        let leftover = text.count % 4
        if leftover == 1 { return nil }
        var out = [UInt8]()
        out.reserveCapacity(text.count / 4 * 3 + 2)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text {
            let value = sextets[Int(character)]
            if value > 0x3F { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // 2 or 4 bits left over (leftover 3 or 2); they must be zero for the spelling to be canonical.
        if accumulator != 0 { return nil }
        return out
    }
}
