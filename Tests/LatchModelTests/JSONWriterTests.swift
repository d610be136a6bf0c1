import Foundation
import LatchModel
import LatchTesting
import Testing

@Suite("JSON writer")
struct JSONWriterTests {
    /// The escape RFC 8259 §7 asks of each byte, written out byte by byte (the writer copies runs).
    static func escapedByteByByte(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    static func written(_ string: String) -> String {
        var writer = JSONWriter()
        writer.value(string)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    @Test(
        "Strings: quotes, backslashes and control characters escaped, everything else copied as it is",
        arguments: ["", "plain", "\"", "\\", "a\"b\\c", "\n\r\t\u{0}\u{1f}", "é😀\u{7f}", "eyJhbGciOiJFUzI1NiJ9.e30.sig", "end\\"])
    func strings(_ string: String) throws {
        #expect(Self.written(string) == Self.escapedByteByByte(string))
        #expect(try JSONParser.parse(Array(Self.written(string).utf8)) == .string(string))
    }

    @Test("Bounded fuzz: 2,000 random strings (controls, quotes, backslashes, non-ASCII) read back as written, by us and by Foundation")
    func fuzz() throws {
        var generator = SplitMix(seed: 7)
        let alphabet: [Character] = ["a", "Z", "0", ".", "-", "_", "\"", "\\", "\n", "\r", "\t", "\u{0}", "\u{1b}", "\u{1f}", " ", "é", "€", "😀", "/"]
        for _ in 0..<2_000 {
            let string = String((0..<Int(generator.next() % 40)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
            let text = Self.written(string)
            #expect(text == Self.escapedByteByByte(string))
            #expect(try JSONParser.parse(Array(text.utf8)) == .string(string))
            #expect(try JSONDecoder().decode(String.self, from: Data(text.utf8)) == string)
        }
    }
}
