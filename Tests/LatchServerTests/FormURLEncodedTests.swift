@testable import LatchServer
import Testing

@Suite("Form encoding")
struct FormURLEncodedTests {
    @Test("Decodes +, percent-escapes and UTF-8; skips empty pairs")
    func decode() throws {
        let parsed = try FormURLEncoded.parse(Array("a=1+2&b=%C3%A9%2B&&c=&d".utf8))
        #expect(parsed == ["a": "1 2", "b": "é+", "c": "", "d": ""])
    }

    @Test("Refuses repeats, bad escapes and invalid UTF-8", arguments: ["a=1&a=2", "a=%2", "a=%zz", "a=%FF"])
    func refuses(body: String) {
        #expect(throws: FormURLEncoded.Failure.self) { try FormURLEncoded.parse(Array(body.utf8)) }
    }
}

@Suite("Form fuzzing")
struct FormFuzzTests {
    @Test("2,000 random byte strings: the form parser answers or refuses, never crashes")
    func randomBodies() {
        var state: UInt64 = 99
        func next() -> UInt64 {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state >> 33
        }
        let alphabet = Array("a=b&%+2F0x\u{FF}".utf8) + [0, 0x80, 0xC3]
        for _ in 0..<2000 {
            let bytes = (0..<Int(next() % 40)).map { _ in alphabet[Int(next() % UInt64(alphabet.count))] }
            _ = try? FormURLEncoded.parse(bytes)
        }
    }
}
