import Foundation
import LatchModel
import LatchTesting
import Testing

@Suite("JSON parser")
struct JSONParserTests {
    @Test(
        "Agrees with Foundation on valid documents",
        arguments: [
            #"{"a":1,"b":[true,false,null],"c":{"d":"e"},"f":-0.5,"g":1e3,"h":"\u00e9\ud83d\ude00\n\"\\\/"}"#,
            #"  [ 1 , -2 , 3.25 , "x" ]  "#, #""plain""#, "0", "-0", "9223372036854775807", "1.5E-7", "[]", "{}",
            #"{"iat":1790000000,"exp":1790000300.5}"#,
        ])
    func agreesWithFoundation(text: String) throws {
        let ours = try JSONParser.parse(Array(text.utf8))
        let theirs = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(ours == theirs)
    }

    @Test(
        "Refuses malformed documents",
        arguments: [
            "", " ", "{", "}", "[1,]", "{\"a\":1,}", "{'a':1}", "{\"a\" 1}", "01", "1.", ".5", "-", "1e", "+1", "NaN", "Infinity",
            "tru", "nul", "\"abc", "\"\u{01}\"", "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\udc00\"", "[1] x", "1 2",
            "{\"a\":1,\"a\":2}", "1e999", "\"\\ud800\\u0041\"",
        ])
    func refuses(text: String) {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(text.utf8)) }
    }

    @Test("Refuses invalid UTF-8 and excessive nesting, without crashing")
    func limits() {
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22, 0xFF, 0x22]) }
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(deep.utf8)) }
        let ok = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        #expect(throws: Never.self) { try JSONParser.parse(Array(ok.utf8)) }
    }

    @Test("Bounded fuzz: random mutations of a JWT payload never crash (1,000 cases)")
    func fuzz() {
        var generator = SplitMix(seed: 42)
        let seed = Array(#"{"iss":"acme","sub":"alice","aud":["identity-service"],"iat":1790000000,"exp":1790000300,"x":{"y":[1,2.5,null]}}"#.utf8)
        for _ in 0..<1000 {
            var bytes = seed
            for _ in 0..<Int(generator.next() % 4 + 1) {
                let position = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[position] = UInt8(truncatingIfNeeded: generator.next())
                case 1: bytes.remove(at: position)
                default: bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: position)
                }
            }
            _ = try? JSONParser.parse(bytes)
        }
    }
}
