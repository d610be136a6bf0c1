import Foundation

/// Base64url without padding (RFC 4648 §5, RFC 7515 §2).
///
/// The generic entry points are `@inlinable`: LatchJOSE encodes every token's three parts with them from another
/// module, where an unspecialised generic call read the bytes one protocol witness at a time (refresh lost ~13 % of
/// its CPU per request when this type moved here from LatchJOSE).
public enum Base64URL {
    /// Encodes bytes as unpadded base64url.
    @inlinable
    public static func encode(_ bytes: some DataProtocol) -> String {
        let input = Array(bytes)
        let outputCount = (input.count * 4 + 2) / 3
        return String(unsafeUninitializedCapacity: outputCount) { output in
            var o = 0
            var i = 0
            while i + 3 <= input.count {
                let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                output[o] = alphabet[Int(n >> 18)]
                output[o + 1] = alphabet[Int(n >> 12 & 63)]
                output[o + 2] = alphabet[Int(n >> 6 & 63)]
                output[o + 3] = alphabet[Int(n & 63)]
                i += 3
                o += 4
            }
            switch input.count - i {
            case 1:
                let n = UInt32(input[i]) << 16
                output[o] = alphabet[Int(n >> 18)]
                output[o + 1] = alphabet[Int(n >> 12 & 63)]
                o += 2
            case 2:
                let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
                output[o] = alphabet[Int(n >> 18)]
                output[o + 1] = alphabet[Int(n >> 12 & 63)]
                output[o + 2] = alphabet[Int(n >> 6 & 63)]
                o += 3
            default: break
            }
            return o
        }
    }

    @usableFromInline
    static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Decodes unpadded base64url; `nil` on any character outside the alphabet, padding, a bad length, or
    /// non-zero trailing bits — only the canonical encoding of a byte string is accepted, so a token cannot be
    /// re-spelled (changed in its last character) without changing its bytes.
    @inlinable
    public static func decode(_ string: some StringProtocol) -> Data? {
        var text = String(string)
        return text.withUTF8 { decodeBytes($0) }.map { Data($0) }
    }

    /// ``decode(_:)`` over UTF-8 bytes, to bytes.
    public static func decodeBytes(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let count = input.count
        let remainder = count % 4
        guard remainder != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(count / 4 * 3 + 2)
        var i = 0
        while i + 4 <= count {
            let a = values[Int(input[i])], b = values[Int(input[i + 1])], c = values[Int(input[i + 2])], d = values[Int(input[i + 3])]
            guard a | b | c | d < 64 else { return nil }
            let n = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
            output.append(UInt8(truncatingIfNeeded: n >> 16))
            output.append(UInt8(truncatingIfNeeded: n >> 8))
            output.append(UInt8(truncatingIfNeeded: n))
            i += 4
        }
        switch remainder {
        case 2:
            let a = values[Int(input[i])], b = values[Int(input[i + 1])]
            // The unused low 4 bits of the last character must be zero (canonical form).
            guard a | b < 64, b & 0x0F == 0 else { return nil }
            output.append(a << 2 | b >> 4)
        case 3:
            let a = values[Int(input[i])], b = values[Int(input[i + 1])], c = values[Int(input[i + 2])]
            guard a | b | c < 64, c & 0x03 == 0 else { return nil }
            output.append(a << 2 | b >> 4)
            output.append(b << 4 | c >> 2)
        default: break
        }
        return output
    }

    /// The 6-bit value of each byte, 0xFF for bytes outside the alphabet.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()
}
