import Foundation
import Testing

@testable import LatchJOSE

@Suite struct JWEBase64URLTests {
    @Test func rfc4648Vectors() {
        // RFC 4648 §10, in the URL alphabet without padding.
        let vectors: [(String, String)] = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(JWEBase64URL.encode(Array(plain.utf8)) == encoded)
            #expect(JWEBase64URL.decode(Array(encoded.utf8)) == Array(plain.utf8))
        }
        #expect(JWEBase64URL.encode([0xFB, 0xFF, 0xBF]) == "-_-_")
        #expect(JWEBase64URL.decode(Array("-_-_".utf8)) == [0xFB, 0xFF, 0xBF])
    }

    @Test func agreesWithFoundationOnRandomBytes() {
        var generator = JWESplitMix64(seed: 7)
        for length in 0 ..< 200 {
            let bytes = (0 ..< length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
            let encoded = JWEBase64URL.encode(bytes)
            #expect(encoded == b64url(bytes))
            #expect(JWEBase64URL.decode(Array(encoded.utf8)) == bytes)
        }
    }

    @Test(arguments: ["A", "AAAAA", "Zg=", "Zg==", "Zm9v=", "Zh", "Zm9", "Zm+v", "Zm/v", "Zm9v ", " Zm9v", "Zm\n9v", "Zm9\u{0}", "Zm9é"])
    func refused(text: String) {
        #expect(JWEBase64URL.decode(Array(text.utf8)) == nil)
    }

    @Test func everyNonCanonicalLastCharacterIsRefused() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        for (value, character) in alphabet.enumerated() {
            // Two characters carry 12 bits for 1 byte: the low 4 bits of the second must be zero.
            #expect((JWEBase64URL.decode([UInt8(ascii: "A"), character]) != nil) == (value & 0x0F == 0))
            // Three characters carry 18 bits for 2 bytes: the low 2 bits of the third must be zero.
            #expect((JWEBase64URL.decode([UInt8(ascii: "A"), UInt8(ascii: "A"), character]) != nil) == (value & 0x03 == 0))
        }
    }
}

@Suite struct JWEHeaderJSONTests {
    typealias Value = JWEHeaderJSON.Value

    func parse(_ text: String) -> Value? { try? JWEHeaderJSON.parse(Array(text.utf8)) }

    @Test func parsesAllValueKinds() throws {
        let value = try JWEHeaderJSON.parse(Array(#" { "a" : [1, -0, 2.5e+10, 0.0E-1, true, false, null, "s", {}, []] } "#.utf8))
        #expect(value == .object([
            .init(name: "a", value: .array([
                .number("1"), .number("-0"), .number("2.5e+10"), .number("0.0E-1"), .bool(true), .bool(false), .null,
                .string("s"), .object([]), .array([]),
            ])),
        ]))
    }

    @Test func escapes() throws {
        let value = try JWEHeaderJSON.parse(Array(#"["\"\\\/\b\f\n\r\t", "\u0041\u00e9\u20AC", "\ud83d\ude00", "é€😀", "a\u0000b"]"#.utf8))
        #expect(value == .array([
            .string("\"\\/\u{08}\u{0C}\n\r\t"), .string("Aé€"), .string("😀"), .string("é€😀"), .string("a\u{0}b"),
        ]))
    }

    @Test func membersKeepOrderAndLookUpExactly() throws {
        let members = try #require(try JWEHeaderJSON.parse(Array(#"{"b":1,"a":"x","\u212Aid":"kelvin"}"#.utf8)).members)
        #expect(members.map(\.name) == ["b", "a", "\u{212A}id"])
        #expect(members[member: "a"] == .string("x"))
        #expect(members[member: "c"] == nil)
        // "\u{212A}id" is canonically equivalent to "Kid" in Swift's String ==, but is a different name in JSON.
        #expect(members[member: "Kid"] == nil)
        #expect(parse(#"{"Kid":1,"\u212Aid":2}"#) != nil)
    }

    @Test(arguments: [
        "", " ", "{", "}", "[", "[1,]", "[,1]", "{,}", #"{"a"}"#, #"{"a":}"#, #"{"a" 1}"#, #"{"a":1,}"#, #"{"a":1 "b":2}"#,
        "{1:2}", "{a:1}", "{'a':1}", "tru", "nul", "True", "NULL", "01", "-", "+1", "1.", ".5", "1e", "1e+", "--1", "0x10",
        "NaN", "Infinity", #""abc"#, #""\x41""#, #""\u12""#, #""\u12G4""#, #""\ud800""#, #""\ude00""#, #""\ud800\u0041""#,
        #""\ud800x""#, "\"a\tb\"", "\"a\nb\"", "[1]]", "{}{}", "{} x", "\u{FEFF}{}", "\u{0C}{}", "\u{A0}{}", "{}\u{0}",
        "//\n{}", "/* */{}",
    ])
    func refused(text: String) {
        #expect(parse(text) == nil, "\(text.debugDescription)")
    }

    @Test(arguments: [
        #"{"a":1,"a":1}"#, #"{"a":1,"b":2,"a":3}"#, #"{"a":1,"\u0061":2}"#, #"{"\u00e9":1,"é":2}"#, #"{"x":{"a":1,"a":1}}"#,
        #"[{"a":1,"a":2}]"#, #"{"":1,"":2}"#,
    ])
    func duplicateNamesRefused(text: String) {
        #expect(parse(text) == nil, "\(text)")
    }

    @Test func distinctButCanonicallyEquivalentNamesAreNotDuplicates() {
        // "é" precomposed (U+00E9) and decomposed (e + U+0301) differ as JSON names.
        #expect(parse("{\"\u{00E9}\":1,\"e\u{0301}\":2}") != nil)
    }

    @Test func invalidUTF8Refused() {
        let cases: [[UInt8]] = [
            [0x22, 0xC3, 0x28, 0x22],  // bad continuation
            [0x22, 0xC0, 0xAF, 0x22],  // overlong
            [0x22, 0xED, 0xA0, 0x80, 0x22],  // an encoded surrogate
            [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],  // above U+10FFFF
            [0x22, 0xE2, 0x82, 0x22],  // truncated
            [0x22, 0xFF, 0x22],
        ]
        for bytes in cases {
            #expect((try? JWEHeaderJSON.parse(bytes)) == nil, "\(bytes)")
        }
        #expect((try? JWEHeaderJSON.parse([0x22, 0xE2, 0x82, 0xAC, 0x22])) == .string("€"))
    }

    @Test func depthLimit() {
        let limit = JWEHeaderJSON.maximumDepth
        #expect(parse(String(repeating: "[", count: limit) + String(repeating: "]", count: limit)) != nil)
        #expect(parse(String(repeating: "[", count: limit + 1) + String(repeating: "]", count: limit + 1)) == nil)
        // Far deeper than the stack could take if unlimited: refused promptly.
        #expect(parse(String(repeating: "[", count: 100_000)) == nil)
        #expect(parse(String(repeating: #"{"a":"#, count: 10_000)) == nil)
    }

    @Test func agreesWithJSONSerializationOnValidHeaders() throws {
        let headers = [
            #"{"alg":"A256KW","enc":"A256GCM"}"#,
            #"{"enc": "A256GCM", "alg": "A256KW", "kid": "play-console", "cty": "JWT"}"#,
            #"{"a":"\u00e9\ud83d\ude00\n","b":[1,2,{"c":null}],"d":true}"#,
        ]
        for header in headers {
            let ours = try #require(parse(header)?.members)
            let theirs = try #require(try JSONSerialization.jsonObject(with: Data(header.utf8)) as? [String: Any])
            #expect(ours.count == theirs.count)
            for member in ours {
                if case .string(let text) = member.value { #expect(theirs[member.name] as? String == text) }
            }
        }
    }
}
