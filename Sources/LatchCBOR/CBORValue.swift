/// One CBOR data item (RFC 8949 §3).
///
/// Maps keep their pairs in the order they were decoded (or given); ``CBORValue/subscript(_:)`` looks a key up.
/// Integers are kept as their major type and argument, so every value CBOR can carry — up to 2⁶⁴ − 1 and down to
/// −2⁶⁴ — is represented exactly.
public indirect enum CBORValue: Sendable, Hashable {
    /// Major type 0: an unsigned integer.
    case unsigned(UInt64)
    /// Major type 1: the integer −1 − `n`.
    case negative(UInt64)
    /// Major type 2.
    case bytes([UInt8])
    /// Major type 3 (valid UTF-8).
    case text(String)
    /// Major type 4.
    case array([CBORValue])
    /// Major type 5, pairs in order.
    case map([Pair])
    /// Major type 6: a tag number and its content.
    case tagged(UInt64, CBORValue)
    /// Major type 7: `false`, `true`.
    case bool(Bool)
    case null
    case undefined
    /// Major type 7: another simple value (0–19, 32–255).
    case simple(UInt8)
    /// Major type 7: a half-, single- or double-precision float, widened.
    case float(Double)

    /// One key and value of a map.
    public struct Pair: Sendable, Hashable {
        public var key: CBORValue
        public var value: CBORValue
        public init(_ key: CBORValue, _ value: CBORValue) {
            self.key = key
            self.value = value
        }
    }

    /// An integer as a `CBORValue`.
    public static func int(_ value: Int64) -> CBORValue {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// The integer, when it fits in `Int64`.
    public var intValue: Int64? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int64.max) ? Int64(value) : nil
        case .negative(let value): value <= UInt64(Int64.max) ? -1 - Int64(value) : nil
        default: nil
        }
    }

    public var bytesValue: [UInt8]? { if case .bytes(let value) = self { value } else { nil } }
    public var textValue: String? { if case .text(let value) = self { value } else { nil } }
    public var arrayValue: [CBORValue]? { if case .array(let value) = self { value } else { nil } }
    public var mapValue: [Pair]? { if case .map(let value) = self { value } else { nil } }

    /// The value of `key` in a map (nil for other items or a missing key).
    public subscript(_ key: CBORValue) -> CBORValue? {
        mapValue?.first { $0.key == key }?.value
    }

    /// The value of text key `key` in a map.
    public subscript(_ key: String) -> CBORValue? { self[.text(key)] }
}
