extension CBORValue {
    /// The deterministic encoding (RFC 8949 §4.2.1): shortest arguments, definite lengths, map keys sorted by their
    /// encodings' bytes, floats in the shortest width that keeps their value (§4.2.2).
    public var encoded: [UInt8] {
        var output: [UInt8] = []
        encode(into: &output)
        return output
    }

    func encode(into output: inout [UInt8]) {
        switch self {
        case .unsigned(let value): Self.head(0, value, into: &output)
        case .negative(let value): Self.head(1, value, into: &output)
        case .bytes(let value):
            Self.head(2, UInt64(value.count), into: &output)
            output += value
        case .text(let value):
            Self.head(3, UInt64(value.utf8.count), into: &output)
            output += value.utf8
        case .array(let elements):
            Self.head(4, UInt64(elements.count), into: &output)
            for element in elements { element.encode(into: &output) }
        case .map(let pairs):
            Self.head(5, UInt64(pairs.count), into: &output)
            for (key, value) in pairs.map({ ($0.key.encoded, $0.value) }).sorted(by: { $0.0.lexicographicallyPrecedes($1.0) }) {
                output += key
                value.encode(into: &output)
            }
        case .tagged(let tag, let content):
            Self.head(6, tag, into: &output)
            content.encode(into: &output)
        case .bool(let value): output.append(value ? 0xF5 : 0xF4)
        case .null: output.append(0xF6)
        case .undefined: output.append(0xF7)
        case .simple(let value):
            if value < 24 {
                output.append(0xE0 | value)
            } else {
                output += [0xF8, value]
            }
        case .float(let value): Self.float(value, into: &output)
        }
    }

    static func head(_ major: UInt8, _ argument: UInt64, into output: inout [UInt8]) {
        let type = major << 5
        switch argument {
        case 0..<24: output.append(type | UInt8(argument))
        case 24...0xFF: output += [type | 24, UInt8(argument)]
        case 0x100...0xFFFF: output += [type | 25, UInt8(argument >> 8), UInt8(truncatingIfNeeded: argument)]
        case 0x1_0000...0xFFFF_FFFF:
            output.append(type | 26)
            for shift in stride(from: 24, through: 0, by: -8) { output.append(UInt8(truncatingIfNeeded: argument >> UInt64(shift))) }
        default:
            output.append(type | 27)
            for shift in stride(from: 56, through: 0, by: -8) { output.append(UInt8(truncatingIfNeeded: argument >> UInt64(shift))) }
        }
    }

    static func float(_ value: Double, into output: inout [UInt8]) {
        if value.isNaN {
            output += [0xF9, 0x7E, 0x00]
        } else if let half = halfBits(value) {
            output += [0xF9, UInt8(half >> 8), UInt8(truncatingIfNeeded: half)]
        } else if Double(Float(value)) == value {
            let bits = Float(value).bitPattern
            output.append(0xFA)
            for shift in stride(from: 24, through: 0, by: -8) { output.append(UInt8(truncatingIfNeeded: bits >> UInt32(shift))) }
        } else {
            let bits = value.bitPattern
            output.append(0xFB)
            for shift in stride(from: 56, through: 0, by: -8) { output.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        }
    }

    /// The binary16 bits of `value` when half precision holds it exactly.
    static func halfBits(_ value: Double) -> UInt16? {
        let sign: UInt16 = value.sign == .minus ? 0x8000 : 0
        let magnitude = abs(value)
        if magnitude == 0 { return sign }
        if magnitude.isInfinite { return sign | 0x7C00 }
        // Subnormal halves: multiples of 2^-24 below 2^-14.
        if magnitude < 0x1p-14 {
            let scaled = magnitude * 0x1p24
            guard scaled == scaled.rounded(), scaled < 1024 else { return nil }
            return sign | UInt16(scaled)
        }
        let exponent = Int(magnitude.exponent)
        guard exponent <= 15 else { return nil }
        let mantissa = (magnitude.significand - 1) * 1024
        guard mantissa == mantissa.rounded() else { return nil }
        return sign | UInt16(exponent + 15) << 10 | UInt16(mantissa)
    }
}
