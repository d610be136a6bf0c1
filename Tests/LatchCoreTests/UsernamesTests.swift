@testable import LatchCore
import LatchTesting
import Testing

@Suite("Usernames: RFC 8265 UsernameCaseMapped for Latch's own, NFC and visible for federated subjects")
struct UsernamesTests {
    @Test("Look-alike spellings are one name", arguments: [
        ("Alice", "alice"), ("ALICE", "alice"), ("\u{FF21}\u{FF4C}\u{FF49}\u{FF43}\u{FF45}", "alice"),
        ("Jose\u{301}", "jos\u{E9}"), ("jos\u{E9}", "jos\u{E9}"), ("user@example.com", "user@example.com"),
        ("STRASSE", "strasse"), ("stra\u{DF}e", "stra\u{DF}e"), ("\u{41C}\u{430}\u{448}\u{430}", "\u{43C}\u{430}\u{448}\u{430}"),
        ("\u{5C0F}\u{6797}", "\u{5C0F}\u{6797}"), ("\u{D55C}\u{AE00}", "\u{D55C}\u{AE00}"),
    ])
    func normalised(raw: String, expected: String) throws {
        #expect(try Usernames.native(raw) == expected)
    }

    @Test("Invisible, spacing, control, bidi and compatibility characters are refused", arguments: [
        "ali\u{200B}ce", "\u{202E}ecila", "\u{FEFF}alice", "ali\u{2028}ce", "ali\u{A0}ce", " alice", "alice ", "   ", "",
        "ali ce", "ali\tce", "ali\u{200D}ce", "\u{FB01}le", "alice\u{E000}", "\u{2460}", "ali\u{0378}ce", "a\u{0661}\u{06F1}",
        String(repeating: "a", count: 256), "\u{1100}\u{1161}\u{11A8}x\u{1100}",
    ])
    func refused(raw: String) {
        #expect(throws: Usernames.Refusal.self, "\(raw.unicodeScalars.map { String($0.value, radix: 16) })") { try Usernames.native(raw) }
    }

    @Test("Federated subjects are kept exactly, but must be NFC and visible", arguments: [
        ("auth0|5f7c8ec7c33c6c004bbafe82", true), ("Alice Smith", true), ("jos\u{E9}", true), ("Jose\u{301}", false),
        ("ali\u{200B}ce", false), ("\u{202E}x", false), (" alice", false), ("alice ", false), ("a\u{A0}b", false), ("a\u{2028}b", false),
        ("", false),
    ])
    func federated(subject: String, accepted: Bool) {
        #expect((Usernames.federatedProblem(subject) == nil) == accepted, "\(subject.unicodeScalars.map { String($0.value, radix: 16) })")
    }

    @Test("Printable ASCII takes a short path that answers exactly as the general rules do")
    func asciiShortPath() {
        // Mostly ASCII (printable, space, controls, DEL), now and then a fullwidth letter, an accent or a digit of
        // another script, so both paths and the border between them are exercised; lengths around the 255-byte limit.
        let extra: [Unicode.Scalar] = ["\u{FF21}", "\u{301}", "\u{E9}", "\u{661}", "\u{200B}", "\u{3000}"]
        var random = SplitMix(seed: 8265)
        var shortPathTaken = 0
        for round in 0..<3_000 {
            let length = round % 10 == 0 ? Int.random(in: 250...260, using: &random) : Int.random(in: 1...24, using: &random)
            var scalars = String.UnicodeScalarView()
            for _ in 0..<length {
                if Int.random(in: 0..<40, using: &random) == 0 {
                    scalars.append(extra.randomElement(using: &random)!)
                } else if Int.random(in: 0..<20, using: &random) == 0 {
                    scalars.append(Unicode.Scalar(UInt8.random(in: 0...0x20, using: &random)))
                } else {
                    scalars.append(Unicode.Scalar(UInt8.random(in: 0x21...0x7F, using: &random)))
                }
            }
            let raw = String(scalars)
            if Usernames.printableASCIILowercased(raw) != nil { shortPathTaken += 1 }
            let short = Result { () throws(Usernames.Refusal) -> String in try Usernames.native(raw) }
            let general = Result { () throws(Usernames.Refusal) -> String in try Usernames.caseMapped(raw) }
            #expect(short == general, "\(raw.unicodeScalars.map { String($0.value, radix: 16) })")
        }
        #expect(shortPathTaken > 500, "the short path was taken \(shortPathTaken) times")
    }

    @Test("An ASCII federated subject is NFC without asking Foundation; a decomposed one still is not")
    func federatedASCII() {
        #expect(Usernames.federatedProblem("auth0|5f7c8ec7") == nil)
        #expect(Usernames.federatedProblem("e\u{301}") != nil)
    }
}
