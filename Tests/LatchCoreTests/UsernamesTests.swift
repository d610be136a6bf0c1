import LatchCore
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
}
