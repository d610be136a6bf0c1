import LatchCore
import Testing

@Suite("Email domains (allowed-email-domain rule)")
struct EmailDomainTests {
    @Test("The domain after the one unquoted @, lower-cased", arguments: [
        ("alice@corp.example", "corp.example"),
        ("Alice.Liddell+tag@Corp.Example", "corp.example"),
        (#""mallory@evil.example"@corp.example"#, "corp.example"),
        (#""a\"b"@corp.example"#, "corp.example"),
        ("user@xn--bcher-kva.example", "xn--bcher-kva.example"),
        ("jörg@corp.example", "corp.example"),
    ])
    func domains(address: String, domain: String) {
        #expect(EmailDomain.of(address) == domain)
    }

    @Test("No domain: two unquoted @, empty parts, address literals, non-ASCII domains, bad labels, bad quoting", arguments: [
        "mallory@evil.example@corp.example", "mallory@corp.example@", "@corp.example", "alice@", "alice", "", "alice@@corp.example",
        "alice@[192.0.2.1]", "alice@bücher.example", "alice@corp.example.", "alice@.corp.example", "alice@corp..example",
        "alice@-corp.example", "alice@corp-.example", "alice@corp example", "alice@corp.example\n", ".alice@corp.example",
        "alice.@corp.example", "al..ice@corp.example", #""unterminated@corp.example"#, #""x"y@corp.example"#, #"""@corp.example"#,
        "al ice@corp.example", "alice@" + String(repeating: "a", count: 64) + ".example", String(repeating: "a", count: 65) + "@corp.example",
    ])
    func noDomain(address: String) {
        #expect(EmailDomain.of(address) == nil)
    }

    @Test("Allowed domains: ASCII names lower-cased; U-labels, @, trailing dots and empty labels refused")
    func allowedDomains() {
        #expect(EmailDomain.normalized("Corp.Example") == "corp.example")
        #expect(EmailDomain.normalized("localhost") == "localhost")
        for refused in ["bücher.example", "evil.example@corp.example", "corp.example.", "", "corp..example", "*.corp.example"] {
            #expect(EmailDomain.normalized(refused) == nil, "\(refused)")
        }
    }
}
