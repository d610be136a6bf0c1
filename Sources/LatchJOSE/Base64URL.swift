import Foundation

/// Base64url without padding (RFC 4648 §5, RFC 7515 §2).
public enum Base64URL {
    /// Encodes bytes as unpadded base64url.
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

    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Decodes unpadded base64url; `nil` on any character outside the alphabet, padding, a bad length, or
    /// non-zero trailing bits — only the canonical encoding of a byte string is accepted, so a token cannot be
    /// re-spelled (changed in its last character) without changing its bytes.
    public static func decode(_ string: some StringProtocol) -> Data? {
        var base64 = String()
        base64.reserveCapacity(string.utf8.count + 3)
        var last: UInt8 = 0
        for scalar in string.unicodeScalars {
            switch scalar {
            case "A"..."Z": last = UInt8(scalar.value - 65)
            case "a"..."z": last = UInt8(scalar.value - 97 + 26)
            case "0"..."9": last = UInt8(scalar.value - 48 + 52)
            case "-": last = 62
            case "_": last = 63
            default: return nil
            }
            switch scalar {
            case "-": base64.append("+")
            case "_": base64.append("/")
            default: base64.unicodeScalars.append(scalar)
            }
        }
        switch base64.utf8.count % 4 {
        case 0: break
        case 2:
            guard last & 0x0F == 0 else { return nil }
            base64 += "=="
        case 3:
            guard last & 0x03 == 0 else { return nil }
            base64 += "="
        default: return nil
        }
        return Data(base64Encoded: base64)
    }
}
