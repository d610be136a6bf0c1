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
