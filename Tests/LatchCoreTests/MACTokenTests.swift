import Crypto
import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// The one sealed stateless value behind registration challenges, sign-in nonces, FIDO ceremony ids and refresh
/// tokens: its rules, and the wire form each of the four had before it existed (tokens issued by an older Latch must
/// keep working after an upgrade — a refresh token lives for weeks).
@Suite("MAC'd stateless tokens")
struct MACTokenTests {
    let key = SymmetricKey(data: [UInt8](repeating: 7, count: 32))

    /// The MAC each format used before MACToken, written out by hand: HMAC-SHA-256 over `domain|field|…`.
    func legacyMAC(_ message: String) -> String {
        Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: Array(message.utf8), using: key)))
    }

    @Test("Sealed fields open with the same key, shape and bound values; anything else is refused")
    func roundTrip() throws {
        let format = MACToken(prefix: "ltk_", domain: "ltk1", maximumLength: 128, key: key)
        let token = format.seal(["abc", "42"], bound: ["alice"])
        #expect(token.hasPrefix("ltk_abc.42."))
        #expect(format.open(token, fieldCount: 2, bound: ["alice"]) == ["abc", "42"])
        #expect(format.open(token, fieldCount: 2, bound: ["bob"]) == nil, "bound to another value")
        #expect(format.open(token, fieldCount: 2) == nil, "the bound value is part of the MAC")
        #expect(format.open(token, fieldCount: 3, bound: ["alice"]) == nil, "another shape")
        #expect(format.open(token.replacingOccurrences(of: ".42.", with: ".43."), fieldCount: 2, bound: ["alice"]) == nil, "a changed field")
        #expect(format.open("x" + token, fieldCount: 2, bound: ["alice"]) == nil, "another prefix")
        let other = MACToken(prefix: "ltk_", domain: "ltk1", maximumLength: 128, key: SymmetricKey(data: [UInt8](repeating: 8, count: 32)))
        #expect(other.open(token, fieldCount: 2, bound: ["alice"]) == nil, "another key")
        let otherDomain = MACToken(prefix: "ltk_", domain: "ltk2", maximumLength: 128, key: key)
        #expect(otherDomain.open(token, fieldCount: 2, bound: ["alice"]) == nil, "another format under the same key")
        let long = format.seal([String(repeating: "a", count: 200), "1"])
        #expect(format.open(long, fieldCount: 2) == nil, "longer than the format's maximum")
        #expect(MACToken.integer("42") == 42 && MACToken.integer("042") == nil && MACToken.integer("+42") == nil && MACToken.integer("") == nil)
    }

    @Test("A refresh token in the form Latch issued before (lrt_sid.generation.MAC over lrt1|sid|generation) still parses")
    func refreshTokenWireForm() throws {
        let codec = RefreshTokenCodec(key: key)
        let legacy = "lrt_AaIbSession01.7." + legacyMAC("lrt1|AaIbSession01|7")
        #expect(codec.parse(legacy)?.sessionID == "AaIbSession01" && codec.parse(legacy)?.generation == 7)
        #expect(codec.token(sessionID: "AaIbSession01", generation: 7) == legacy)
        #expect(codec.parse("lrt_AaIbSession01.07." + legacyMAC("lrt1|AaIbSession01|07")) == nil, "a non-canonical generation")
        #expect(codec.parse("lrt_.7." + legacyMAC("lrt1||7")) == nil, "an empty session id")
        #expect(codec.parse("lrt_AaIbSession01.-1." + legacyMAC("lrt1|AaIbSession01|-1")) == nil, "a negative generation")
    }

    @Test("Sign-in nonces, registration challenges and FIDO ceremony ids in their earlier wire form still open")
    func otherWireForms() throws {
        let nonces = SignInNonceCodec(key: key)
        let nonce = "lsn_r4nd0m.2000000000." + legacyMAC("lsn1|r4nd0m|2000000000|alice")
        #expect(nonces.expiry(of: nonce, username: "alice", now: 1_000) == 2_000_000_000)
        #expect(nonces.expiry(of: nonce, username: "bob", now: 1_000) == nil)
        #expect(nonces.expiry(of: nonce, username: "alice", now: 2_000_000_000) == nil, "expired")

        let challenges = RegistrationChallenges(key: key, lifetime: 300, clock: TestClock().clock, random: .seeded(1))
        let challenge = "lrc_r4nd0m.2000000000." + legacyMAC("lrc1|r4nd0m|2000000000|APP_ATTEST")
        #expect(throws: Never.self) { _ = try challenges.check(challenge, for: .appAttest, now: 1_000) }
        #expect(throws: LatchError.self) { try challenges.check(challenge, for: .androidKey, now: 1_000) }

        let ceremonies = FidoCeremonies(key: key, lifetime: 300)
        let encoded = Base64URL.encode(Data(repeating: 1, count: 32))
        let id = "lfc_\(encoded).2000000000.auth.user-1." + legacyMAC("lfc1|\(encoded)|2000000000|auth|user-1")
        let ceremony = try ceremonies.check(id, .authentication, now: 1_000)
        #expect(ceremony.userID == "user-1" && ceremony.challenge == [UInt8](repeating: 1, count: 32))
        #expect(throws: LatchError.self) { try ceremonies.check(id, .registration, now: 1_000) }
    }

    @Test("A token of one format is refused by the others, even under one key (domains differ)")
    func domainSeparation() throws {
        let refresh = RefreshTokenCodec(key: key).token(sessionID: "r4nd0m", generation: 2_000_000_000)
        let asNonce = "lsn_" + refresh.dropFirst(4)
        #expect(SignInNonceCodec(key: key).expiry(of: asNonce, username: "", now: 1_000) == nil)
        let asRefresh = "lrt_r4nd0m.2000000000." + legacyMAC("lsn1|r4nd0m|2000000000")
        #expect(RefreshTokenCodec(key: key).parse(asRefresh) == nil)
    }
}

extension MACTokenTests {
    @Test("Mutated tokens never open and never crash: flipped, cut, lengthened, dotted, non-ASCII (bounded fuzz)")
    func mutations() throws {
        let format = MACToken(prefix: "ltk_", domain: "ltk1", maximumLength: 128, key: key)
        let token = format.seal(["AaIbSession01", "7", ""], bound: ["alice"])
        #expect(format.open(token, fieldCount: 3, bound: ["alice"]) == ["AaIbSession01", "7", ""])
        let original = Array(token.utf8)
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("AZaz09-_.|=+/ é\u{0}".utf8) + [0xFF]
        for _ in 0..<3_000 {
            var bytes = original
            switch Int.random(in: 0..<4, using: &random) {
            case 0: bytes[Int.random(in: 0..<bytes.count, using: &random)] = alphabet.randomElement(using: &random)!
            case 1: bytes.removeLast(Int.random(in: 1...bytes.count, using: &random))
            case 2: bytes.insert(alphabet.randomElement(using: &random)!, at: Int.random(in: 0...bytes.count, using: &random))
            default: bytes.removeFirst(Int.random(in: 1...bytes.count, using: &random))
            }
            let mutated = String(decoding: bytes, as: UTF8.self)
            guard mutated != token else { continue }
            #expect(format.open(mutated, fieldCount: 3, bound: ["alice"]) == nil, "\(mutated)")
        }
        // Fields that are not ASCII seal and open to the same text.
        let accented = format.seal(["é", "ü"])
        #expect(format.open(accented, fieldCount: 2) == ["é", "ü"])
    }

    @Test("Time-ordered tokens sort by time as text (where base64url would not), and sign-in nonces and registration challenges use them")
    func timeOrdered() async throws {
        let random = RandomSource.seeded(7)
        // Milliseconds around the places where base64url's alphabet breaks ASCII order (z → 0, 9 → -, - → _).
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var previous = ""
        for step in 0..<5_000 {
            let token = random.timeOrderedToken(now: start.addingTimeInterval(Double(step) / 1000 + 0.0004))  // mid-millisecond
            #expect(token.count == 12 + 22)
            #expect(previous < token, "\(previous) then \(token)")
            previous = token
        }
        // The control: base64url time prefixes (the 16-byte ids of sessions and audit records) do not sort as text.
        let ids = (0..<5_000).map { random.timeOrderedID(now: start.addingTimeInterval(Double($0) / 1000 + 0.0004)) }
        #expect(ids != ids.sorted())
        // Distinct within one millisecond.
        #expect(Set((0..<100).map { _ in random.timeOrderedToken(now: start) }).count == 100)

        let clock = TestClock(start: Date(timeIntervalSince1970: 1_800_000_000))
        let nonces = SignInNonces(codec: SignInNonceCodec(key: key), settings: AssertionSettings(), clock: clock.clock, random: random)
        let challenges = RegistrationChallenges(key: key, lifetime: 300, clock: clock.clock, random: random)
        var issued: [(nonce: String, challenge: String)] = []
        for _ in 0..<3 {
            let nonce = try await nonces.issue(SignInChallengeRequest(username: "alice")).nonce
            let challenge = try challenges.issue(RegistrationChallengeRequest(challengeType: .appAttest), accepted: [.appAttest]).challenge
            issued.append((nonce, challenge))
            clock.advance(by: 0.001)
        }
        #expect(issued.map(\.nonce) == issued.map(\.nonce).sorted() && issued.map(\.challenge) == issued.map(\.challenge).sorted(), "\(issued)")
    }
}

