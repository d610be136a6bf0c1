import Foundation
import LatchCore
import LatchModel
import Testing

@Suite("Assertion claims (RFC 7523 §3)")
struct AssertionClaimsTests {
    let now: Int64 = 1_790_000_000

    func claims(_ edit: (inout [String: JSONValue]) -> Void = { _ in }) -> [String: JSONValue] {
        var claims: [String: JSONValue] = ["iss": "acme", "sub": "alice", "aud": "identity-service", "jti": "j1", "iat": .int(now), "exp": .int(now + 300)]
        edit(&claims)
        return claims
    }

    func check(_ claims: [String: JSONValue]) throws -> AssertionClaims {
        try AssertionClaims.check(claims, audience: "identity-service", now: now, skew: 60, maxLifetime: 3600, code: .invalidGrant)
    }

    @Test("Good claims pass and are read")
    func good() throws {
        let checked = try check(claims())
        #expect(checked.issuer == "acme" && checked.subject == "alice" && checked.jwtID == "j1" && checked.expiresAt == now + 300)
    }

    @Test("aud may be an array naming us; fractional seconds are accepted and floored")
    func lenientForms() throws {
        #expect(try check(claims { $0["aud"] = ["other", "identity-service"] }).audience.count == 2)
        #expect(try check(claims { $0["iat"] = .double(Double(now) + 0.7) }).issuedAt == now)
    }

    @Test("Skew is allowed on both ends")
    func skew() throws {
        _ = try check(claims { $0["iat"] = .int(now + 60); $0["exp"] = .int(now + 120) })
        _ = try check(claims { $0["iat"] = .int(now - 400); $0["exp"] = .int(now - 59) })
    }

    static let brokenClaims: [(String, @Sendable (inout [String: JSONValue]) -> Void)] = [
        ("no iss", { $0["iss"] = nil }), ("empty sub", { $0["sub"] = "" }), ("long jti", { $0["jti"] = .string(String(repeating: "j", count: 256)) }),
        ("control character in sub", { $0["sub"] = "a\u{0}b" }), ("aud elsewhere", { $0["aud"] = "x" }), ("empty aud array", { $0["aud"] = [] }),
        ("milliseconds", { $0["iat"] = 1_790_000_000_000; $0["exp"] = 1_790_000_300_000 }), ("negative iat", { $0["iat"] = -5 }),
        ("iat string", { $0["iat"] = "1790000000" }), ("iat bool", { $0["iat"] = true }), ("future iat", { $0["iat"] = 1_790_000_061 }),
        ("expired", { $0["iat"] = 1_789_999_000; $0["exp"] = 1_789_999_940 }), ("exp before iat", { $0["exp"] = 1_789_999_999 }),
        ("too long-lived", { $0["exp"] = 1_790_003_601 }), ("nbf ahead", { $0["nbf"] = 1_790_000_061 }), ("NaN-ish exp", { $0["exp"] = .double(1e300) }),
    ]

    @Test("Each broken claim is refused with the caller's code", arguments: 0..<brokenClaims.count)
    func failures(index: Int) {
        let (name, edit) = Self.brokenClaims[index]
        var broken = claims()
        edit(&broken)
        #expect(throws: LatchError(.invalidGrant, ""), "\(name)") { try check(broken) }
        #expect(throws: LatchError(.invalidProof, "")) {
            try AssertionClaims.check(broken, audience: "identity-service", now: now, skew: 60, maxLifetime: 3600, code: .invalidProof)
        }
    }
}

@Suite("Support")
struct SupportTests {
    @Test("UUIDs are version 4, lowercase")
    func uuid() {
        let uuid = RandomSource.system.uuid()
        #expect(uuid.count == 36 && uuid == uuid.lowercased() && Array(uuid)[14] == "4")
    }

    @Test("Tokens are 256-bit base64url by default and do not repeat")
    func tokens() {
        let tokens = Set((0..<100).map { _ in RandomSource.system.token() })
        #expect(tokens.count == 100 && tokens.allSatisfy { $0.count == 43 })
    }

    @Test("Constant-time comparison compares whole values")
    func constantTime() {
        #expect(Secrets.constantTimeEquals(Data([1, 2, 3]), Data([1, 2, 3])))
        #expect(!Secrets.constantTimeEquals(Data([1, 2, 3]), Data([1, 2, 4])))
        #expect(!Secrets.constantTimeEquals(Data([1, 2]), Data([1, 2, 3])))
    }

    @Test("Sealed keys open only with the same key-encryption key and key id")
    func sealing() throws {
        let sealer = try KeySealer(keyEncryptionKey: [UInt8](repeating: 1, count: 32))
        let sealed = try sealer.seal(Data("secret".utf8), keyID: "k1")
        #expect(try sealer.open(sealed, keyID: "k1") == Data("secret".utf8))
        #expect(throws: LatchError.self) { try sealer.open(sealed, keyID: "k2") }
        #expect(throws: LatchError.self) { try KeySealer(keyEncryptionKey: [UInt8](repeating: 2, count: 32)).open(sealed, keyID: "k1") }
        #expect(throws: LatchError.self) { try KeySealer(keyEncryptionKey: [UInt8](repeating: 2, count: 16)) }
    }
}
