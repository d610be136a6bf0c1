/// A strict JSON (RFC 8259) reader for JOSE headers.
///
/// Why not `JSONSerialization` / `JSONDecoder`: both silently accept duplicate member names (the last one wins),
/// and RFC 7516 §4 requires that a header with duplicate names be rejected (or parsed so that only a lexically
/// last one counts — which is the ambiguity that lets two parsers read one header differently). Detecting
/// duplicates needs a tokenizer anyway, so this reader parses the whole text itself:
///
/// - the input must be valid UTF-8, with no byte order mark;
/// - the grammar is RFC 8259's, nothing more: no comments, no trailing commas, no single quotes, no leading
///   zeros, no bare control characters in strings, only the six whitespace-free escapes plus `\uXXXX`, and a
///   `\u` escape of a surrogate must be a complete high+low pair;
/// - member names are compared after unescaping, byte for byte on their UTF-8 (so `"alg"` and `"\u0061lg"` are
///   duplicates, while canonically-equivalent but differently-encoded names are not merged);
/// - nesting is limited to ``maximumDepth`` so hostile input cannot exhaust the stack.
///
/// Numbers are checked against the grammar and kept as their text; a JOSE header has no use for their value.
enum JWEHeaderJSON {
    /// A parsed value.
    indirect enum Value: Equatable, Sendable {
        case object([Member])
        case array([Value])
        case string(String)
        case number(String)
        case bool(Bool)
        case null
    }

    /// One object member, in document order.
    struct Member: Equatable, Sendable {
        let name: String
        let value: Value
    }

    /// Why the text was refused (for the `detail` of a ``JWEError``).
    struct Failure: Error, Equatable, Sendable {
        let message: String
        let offset: Int
    }

    static let maximumDepth = 32

    /// Parses exactly one JSON value surrounded by optional whitespace.
    static func parse(_ bytes: [UInt8]) throws(Failure) -> Value {
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw Failure(message: "not valid UTF-8", offset: 0)
        }
        var reader = Reader(bytes: bytes)
        reader.skipWhitespace()
        let value = try reader.readValue(depth: 0)
        reader.skipWhitespace()
        guard reader.position == bytes.count else { throw reader.failure("unexpected bytes after the value") }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func failure(_ message: String) -> Failure { Failure(message: message, offset: position) }

        var current: UInt8? { position < bytes.count ? bytes[position] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { position += 1 }
        }

        mutating func expect(_ literal: String) throws(Failure) {
            let count = literal.utf8.count
            guard position + count <= bytes.count, bytes[position ..< position + count].elementsEqual(literal.utf8) else {
                throw failure("invalid literal")
            }
            position += count
        }

        mutating func readValue(depth: Int) throws(Failure) -> Value {
            guard depth < JWEHeaderJSON.maximumDepth else { throw failure("nested too deeply") }
            guard let byte = current else { throw failure("unexpected end of input") }
            switch byte {
            case UInt8(ascii: "{"): return try readObject(depth: depth)
            case UInt8(ascii: "["): return try readArray(depth: depth)
            case UInt8(ascii: "\""): return .string(try readString())
            case UInt8(ascii: "t"):
                try expect("true")
                return .bool(true)
            case UInt8(ascii: "f"):
                try expect("false")
                return .bool(false)
            case UInt8(ascii: "n"):
                try expect("null")
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0") ... UInt8(ascii: "9"): return .number(try readNumber())
            default: throw failure("unexpected byte")
            }
        }

        mutating func readObject(depth: Int) throws(Failure) -> Value {
            position += 1  // {
            var members: [Member] = []
            var seen = Set<[UInt8]>()
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                position += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw failure("expected a member name") }
                let nameOffset = position
                let name = try readString()
                guard seen.insert(Array(name.utf8)).inserted else {
                    throw Failure(message: "duplicate member name", offset: nameOffset)
                }
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { throw failure("expected ':'") }
                position += 1
                skipWhitespace()
                let value = try readValue(depth: depth + 1)
                members.append(Member(name: name, value: value))
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "}"):
                    position += 1
                    return .object(members)
                default: throw failure("expected ',' or '}'")
                }
            }
        }

        mutating func readArray(depth: Int) throws(Failure) -> Value {
            position += 1  // [
            var elements: [Value] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                position += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try readValue(depth: depth + 1))
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "]"):
                    position += 1
                    return .array(elements)
                default: throw failure("expected ',' or ']'")
                }
            }
        }

        /// Reads a string starting at its opening quote; returns it unescaped.
        mutating func readString() throws(Failure) -> String {
            position += 1  // "
            var scalars = String.UnicodeScalarView()
            var run = position  // start of the current run of unescaped bytes
            func flush(_ end: Int) {
                // The whole input is valid UTF-8 and a run never splits a sequence (it stops only at ASCII).
                scalars.append(contentsOf: String(decoding: bytes[run ..< end], as: UTF8.self).unicodeScalars)
            }
            while true {
                guard let byte = current else { throw failure("unterminated string") }
                switch byte {
                case UInt8(ascii: "\""):
                    flush(position)
                    position += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    flush(position)
                    position += 1
                    scalars.append(try readEscape())
                    run = position
                case 0x00 ..< 0x20:
                    throw failure("control character in a string")
                default:
                    position += 1
                }
            }
        }

        /// Reads the escape after a backslash.
        mutating func readEscape() throws(Failure) -> Unicode.Scalar {
            guard let byte = current else { throw failure("unterminated escape") }
            position += 1
            switch byte {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                let first = try readHex4()
                switch first {
                case 0xD800 ... 0xDBFF:
                    guard current == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u")
                    else { throw failure("unpaired high surrogate") }
                    position += 2
                    let second = try readHex4()
                    guard (0xDC00 ... 0xDFFF).contains(second) else { throw failure("unpaired high surrogate") }
                    let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                    guard let scalar = Unicode.Scalar(value) else { throw failure("invalid surrogate pair") }
                    return scalar
                case 0xDC00 ... 0xDFFF:
                    throw failure("unpaired low surrogate")
                default:
                    guard let scalar = Unicode.Scalar(first) else { throw failure("invalid escape") }
                    return scalar
                }
            default:
                throw failure("invalid escape")
            }
        }

        mutating func readHex4() throws(Failure) -> UInt32 {
            guard position + 4 <= bytes.count else { throw failure("short \\u escape") }
            var value: UInt32 = 0
            for _ in 0 ..< 4 {
                let byte = bytes[position]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0") ... UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a") ... UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A") ... UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw failure("invalid hex digit in \\u escape")
                }
                value = value << 4 | UInt32(digit)
                position += 1
            }
            return value
        }

        /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
        mutating func readNumber() throws(Failure) -> String {
            let start = position
            if current == UInt8(ascii: "-") { position += 1 }
            switch current {
            case UInt8(ascii: "0"): position += 1
            case let digit? where digit >= UInt8(ascii: "1") && digit <= UInt8(ascii: "9"): skipDigits()
            default: throw failure("invalid number")
            }
            if current == UInt8(ascii: ".") {
                position += 1
                guard isDigit(current) else { throw failure("invalid number fraction") }
                skipDigits()
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                position += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
                guard isDigit(current) else { throw failure("invalid number exponent") }
                skipDigits()
            }
            return String(decoding: bytes[start ..< position], as: UTF8.self)
        }

        func isDigit(_ byte: UInt8?) -> Bool {
            guard let byte else { return false }
            return byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
        }

        mutating func skipDigits() {
            while isDigit(current) { position += 1 }
        }
    }
}

extension JWEHeaderJSON.Value {
    /// The members of an object, `nil` for any other value.
    var members: [JWEHeaderJSON.Member]? {
        if case .object(let members) = self { return members }
        return nil
    }
}

extension Array where Element == JWEHeaderJSON.Member {
    /// The value of the member whose name is exactly `name` (compared on Unicode scalars, not canonical
    /// equivalence); names are unique, so there is at most one.
    subscript(member name: String) -> JWEHeaderJSON.Value? {
        first { $0.name.unicodeScalars.elementsEqual(name.unicodeScalars) }?.value
    }
}
