/// A small, allocation-light JSON writer: the token hot path builds claim sets with it instead of
/// going through `JSONEncoder`.
///
/// Strings are escaped per RFC 8259 §7; object members keep the order they are written in.
public struct JSONWriter: Sendable {
    /// The UTF-8 text written so far.
    public private(set) var bytes: [UInt8] = []
    private var needsComma: [Bool] = []

    /// An empty writer.
    public init(reservingCapacity capacity: Int = 256) {
        bytes.reserveCapacity(capacity)
    }

    /// Opens an object (`{`).
    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma.append(false)
    }

    /// Closes the innermost object (`}`).
    public mutating func endObject() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "}"))
    }

    /// Opens an array (`[`).
    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma.append(false)
    }

    /// Closes the innermost array (`]`).
    public mutating func endArray() {
        needsComma.removeLast()
        bytes.append(UInt8(ascii: "]"))
    }

    /// Writes an object member's name; the next value written is its value.
    public mutating func key(_ name: String) {
        separate()
        appendString(name)
        bytes.append(UInt8(ascii: ":"))
        afterKey = true
    }

    /// The next value is a member's value: no comma before it.
    private var afterKey = false

    /// Writes a string value.
    public mutating func value(_ string: String) {
        separate()
        appendString(string)
    }

    /// Writes an integer value.
    public mutating func value(_ int: Int64) {
        separate()
        bytes.append(contentsOf: String(int).utf8)
    }

    /// Writes a boolean value.
    public mutating func value(_ bool: Bool) {
        separate()
        bytes.append(contentsOf: (bool ? "true" : "false").utf8)
    }

    /// Writes a member `name: string`.
    public mutating func member(_ name: String, _ string: String) {
        key(name)
        value(string)
    }

    /// Writes a member `name: int`.
    public mutating func member(_ name: String, _ int: Int64) {
        key(name)
        value(int)
    }

    /// Writes a member `name: [strings]`.
    public mutating func member(_ name: String, _ strings: [String]) {
        key(name)
        beginArray()
        for string in strings { value(string) }
        endArray()
    }

    /// Writes any JSON value; object members in key order.
    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null:
            separate()
            bytes.append(contentsOf: "null".utf8)
        case .bool(let bool): self.value(bool)
        case .int(let int): self.value(int)
        case .double(let double):
            separate()
            if double.isFinite {
                if double == double.rounded(), abs(double) < 9.0e15 {
                    bytes.append(contentsOf: String(Int64(double)).utf8)
                } else {
                    bytes.append(contentsOf: String(double).utf8)
                }
            } else {
                bytes.append(contentsOf: "null".utf8)
            }
        case .string(let string): self.value(string)
        case .array(let array):
            beginArray()
            for element in array { write(element) }
            endArray()
        case .object(let object):
            beginObject()
            for name in object.keys.sorted() {
                key(name)
                write(object[name]!)
            }
            endObject()
        }
    }

    private mutating func separate() {
        if afterKey {
            afterKey = false
            return
        }
        guard let last = needsComma.indices.last else { return }
        if needsComma[last] {
            bytes.append(UInt8(ascii: ","))
        } else {
            needsComma[last] = true
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// `string` quoted and escaped. Runs of bytes that need no escape (all of a token, most of any text) are copied
    /// in one append each: this writes every token response.
    private mutating func appendString(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var run = utf8.startIndex
            for index in utf8.indices {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<index]))
                appendEscape(byte)
                run = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// The escape of a quote, a backslash or a control character (RFC 8259 §7).
    private mutating func appendEscape(_ byte: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        case 0x0A: bytes.append(UInt8(ascii: "n"))
        case 0x0D: bytes.append(UInt8(ascii: "r"))
        case 0x09: bytes.append(UInt8(ascii: "t"))
        default:
            bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), Self.hex[Int(byte >> 4)], Self.hex[Int(byte & 0xF)]])
        }
    }
}
