import LatchModel

/// Why bytes are not an acceptable CBOR item: where, and what.
public struct CBORError: Error, Equatable, CustomStringConvertible {
    /// Byte offset of the problem.
    public let offset: Int
    public let reason: String
    public var description: String { "invalid CBOR at byte \(offset): \(reason)" }
}

/// A strict decoder of untrusted CBOR (RFC 8949): what attestation objects, authenticator data and COSE keys use.
///
/// Beyond well-formedness (§3, Appendix C) it refuses what those formats never need and an attacker could use:
/// indefinite lengths, integers, lengths and tags not in their shortest form (§4.2.1 — so a given item has one
/// spelling), duplicate map keys (§5.6), text that is not UTF-8, nesting deeper than ``Limits/maximumDepth`` and
/// more than ``Limits/maximumItems`` items. A length is checked against the bytes left before anything is
/// allocated, so a claimed length of 2⁶⁴ − 1 costs nothing. Floats are taken in any width.
public struct CBORDecoder {
    /// Bounds on one decoded item.
    public struct Limits: Sendable {
        public var maximumDepth = 16
        public var maximumItems = 65_536
        public init() {}
    }

    private let bytes: [UInt8]
    private let limits: Limits
    private var index: Int
    private var items = 0

    /// Decodes exactly one item filling `input`.
    public static func decode(_ input: some Collection<UInt8>, limits: Limits = Limits()) throws(CBORError) -> CBORValue {
        let (value, end) = try decodePrefix(input, limits: limits)
        guard end == input.count else { throw CBORError(offset: end, reason: "bytes after the item") }
        return value
    }

    /// Decodes the item at the start of `input`; returns it and the offset just past it (authenticator data holds
    /// a COSE key followed by more bytes).
    public static func decodePrefix(_ input: some Collection<UInt8>, limits: Limits = Limits()) throws(CBORError) -> (CBORValue, Int) {
        var decoder = CBORDecoder(bytes: Array(input), limits: limits)
        let value = try decoder.item(depth: 0)
        return (value, decoder.index)
    }

    private init(bytes: [UInt8], limits: Limits) {
        self.bytes = bytes
        self.limits = limits
        index = 0
    }

    private func failure(_ reason: String, at offset: Int? = nil) -> CBORError { CBORError(offset: offset ?? index, reason: reason) }

    private mutating func byte() throws(CBORError) -> UInt8 {
        guard index < bytes.count else { throw failure("unexpected end") }
        defer { index += 1 }
        return bytes[index]
    }

    /// The argument of a head with additional information `info` (§3), in its shortest form.
    private mutating func argument(_ info: UInt8, start: Int) throws(CBORError) -> UInt64 {
        switch info {
        case 0..<24:
            return UInt64(info)
        case 24, 25, 26, 27:
            let count = 1 << Int(info - 24)
            guard bytes.count - index >= count else { throw failure("unexpected end") }
            var value: UInt64 = 0
            for _ in 0..<count { value = value << 8 | UInt64(bytes[index]); index += 1 }
            let smallest: UInt64 = switch info {
            case 24: 24
            case 25: 0x100
            case 26: 0x1_0000
            default: 0x1_0000_0000
            }
            guard value >= smallest else { throw failure("the argument is not in its shortest form", at: start) }
            return value
        case 31:
            throw failure("indefinite-length items are not accepted", at: start)
        default:
            throw failure("reserved additional information \(info)", at: start)
        }
    }

    /// A length that the remaining bytes can hold (each element needs at least `unit` bytes).
    private func length(_ argument: UInt64, unit: Int, start: Int) throws(CBORError) -> Int {
        guard argument <= UInt64(bytes.count - index) / UInt64(unit) else {
            throw failure("a length of \(argument) runs past the end", at: start)
        }
        return Int(argument)
    }

    private mutating func item(depth: Int) throws(CBORError) -> CBORValue {
        let start = index
        items += 1
        guard items <= limits.maximumItems else { throw failure("more than \(limits.maximumItems) items") }
        let initial = try byte()
        let major = initial >> 5
        let info = initial & 0x1F
        if major == 7 { return try simpleOrFloat(info, start: start) }
        let argument = try argument(info, start: start)
        switch major {
        case 0:
            return .unsigned(argument)
        case 1:
            return .negative(argument)
        case 2, 3:
            let count = try length(argument, unit: 1, start: start)
            let content = Array(bytes[index..<(index + count)])
            index += count
            if major == 2 { return .bytes(content) }
            guard let text = String(validatingUTF8: content) else { throw failure("a text string is not UTF-8", at: start) }
            return .text(text)
        case 4:
            guard depth < limits.maximumDepth else { throw failure("nested deeper than \(limits.maximumDepth)", at: start) }
            let count = try length(argument, unit: 1, start: start)
            var elements: [CBORValue] = []
            elements.reserveCapacity(count)
            for _ in 0..<count { elements.append(try item(depth: depth + 1)) }
            return .array(elements)
        case 5:
            guard depth < limits.maximumDepth else { throw failure("nested deeper than \(limits.maximumDepth)", at: start) }
            let count = try length(argument, unit: 2, start: start)
            var pairs: [CBORValue.Pair] = []
            pairs.reserveCapacity(count)
            var seen = Set<CBORValue>()
            for _ in 0..<count {
                let keyStart = index
                let key = try item(depth: depth + 1)
                guard seen.insert(key).inserted else { throw failure("a map key is repeated", at: keyStart) }
                pairs.append(CBORValue.Pair(key, try item(depth: depth + 1)))
            }
            return .map(pairs)
        default:  // 6
            guard depth < limits.maximumDepth else { throw failure("nested deeper than \(limits.maximumDepth)", at: start) }
            return .tagged(argument, try item(depth: depth + 1))
        }
    }

    private mutating func simpleOrFloat(_ info: UInt8, start: Int) throws(CBORError) -> CBORValue {
        switch info {
        case 20: return .bool(false)
        case 21: return .bool(true)
        case 22: return .null
        case 23: return .undefined
        case 0..<20: return .simple(info)
        case 24:
            let value = try byte()
            // §3.3: simple values below 32 are written in the initial byte; the two-byte form is not well-formed.
            guard value >= 32 else { throw failure("simple value \(value) in the two-byte form", at: start) }
            return .simple(value)
        case 25, 26, 27:
            let count = 1 << Int(info - 24)
            guard bytes.count - index >= count else { throw failure("unexpected end") }
            var raw: UInt64 = 0
            for _ in 0..<count { raw = raw << 8 | UInt64(bytes[index]); index += 1 }
            switch info {
            case 25: return .float(Self.halfToDouble(UInt16(raw)))
            case 26: return .float(Double(Float(bitPattern: UInt32(raw))))
            default: return .float(Double(bitPattern: raw))
            }
        case 31:
            throw failure("a break outside an indefinite-length item", at: start)
        default:
            throw failure("reserved additional information \(info)", at: start)
        }
    }

    /// IEEE 754 binary16 to Double (RFC 8949 Appendix D).
    static func halfToDouble(_ half: UInt16) -> Double {
        let exponent = Int(half >> 10) & 0x1F
        let mantissa = Double(half & 0x3FF)
        let magnitude: Double = switch exponent {
        case 0: mantissa * 0x1p-24
        case 31: mantissa == 0 ? .infinity : .nan
        default: (mantissa + 1024) * Double(sign: .plus, exponent: exponent - 25, significand: 1)
        }
        return half & 0x8000 != 0 ? -magnitude : magnitude
    }
}
