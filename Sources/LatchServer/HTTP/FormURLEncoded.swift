import LatchModel

/// `application/x-www-form-urlencoded` bodies (WHATWG URL §5.1), as the OAuth endpoints receive them.
enum FormURLEncoded {
    /// Why a body could not be read.
    enum Failure: Error, Equatable {
        /// Bad percent-encoding or invalid UTF-8.
        case malformed
        /// A parameter appears twice (RFC 6749 §3.1: parameters must not be repeated).
        case repeated(String)
    }

    /// Parses the body into name → value; empty names are skipped.
    static func parse(_ bytes: some Collection<UInt8>) throws(Failure) -> [String: String] {
        try parse(bytes, repeatable: []).single
    }

    /// Parses the body into name → value, and name → every value for the names in `repeatable` (in order; those are
    /// not in `single`).
    static func parse(_ bytes: some Collection<UInt8>, repeatable: Set<String>) throws(Failure)
        -> (single: [String: String], repeated: [String: [String]])
    {
        var result: [String: String] = [:]
        var repeated: [String: [String]] = [:]
        for pair in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let name = try decode(parts[0])
            let value = parts.count > 1 ? try decode(parts[1]) : ""
            guard !name.isEmpty else { continue }
            if repeatable.contains(name) {
                repeated[name, default: []].append(value)
                continue
            }
            guard result[name] == nil else { throw .repeated(name) }
            result[name] = value
        }
        return (result, repeated)
    }

    /// Parses a query string the way browsers send it: the first value of each name, and the names that appeared more
    /// than once (an authorization request must not repeat parameters, RFC 6749 §3.1; the endpoint decides what to do).
    static func parseQuery(_ bytes: some Collection<UInt8>) throws(Failure) -> (single: [String: String], repeated: Set<String>) {
        var result: [String: String] = [:]
        var repeated: Set<String> = []
        for pair in bytes.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            let name = try decode(parts[0])
            let value = parts.count > 1 ? try decode(parts[1]) : ""
            guard !name.isEmpty else { continue }
            if result[name] != nil {
                repeated.insert(name)
            } else {
                result[name] = value
            }
        }
        return (result, repeated)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    private static func decode(_ bytes: some Collection<UInt8>) throws(Failure) -> String {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index != bytes.endIndex {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "+"):
                output.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                let first = bytes.index(after: index)
                guard first != bytes.endIndex else { throw .malformed }
                let second = bytes.index(after: first)
                guard second != bytes.endIndex, let high = hexValue(bytes[first]), let low = hexValue(bytes[second]) else {
                    throw .malformed
                }
                output.append(high << 4 | low)
                index = second
            default:
                output.append(byte)
            }
            index = bytes.index(after: index)
        }
        guard let string = String(validatingUTF8: output) else { throw .malformed }
        return string
    }
}
