import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

@Suite("JWT-bearer grant (RFC 7523): federated and device-key sign-in")
struct JWTBearerGrantTests {
    @Test("Federated: a registered user signs in; the session is opened with amr fed and the issuer's kept claims")
    func federated() async throws {
        let engines = try await Engines.make()
        try await engines.addIssuer()
        _ = try await engines.registration().register(RegistrationRequest(challengeType: .fsso, answer: try engines.federated()))
        let tokens = try await engines.signIn(assertion: try engines.federated(tier: "platinum"))
        let claims = try ParsedJWS(tokens.idToken).claims
        #expect(claims["amr"] == ["fed"] && claims["username"] == "alice" && claims["tier"] == "platinum")
        // The changed claim was written with the session.
        #expect(try await engines.store.federatedUser(issuer: "acme", subject: "alice")?.claims == ["tier": "platinum"])
        #expect(engines.store.count(.sessions) == 1)
    }

    @Test("Federated: an unregistered subject, a replayed jti, a foreign key: invalid_grant, and nothing is written")
    func federatedRefusals() async throws {
        let engines = try await Engines.make()
        try await engines.addIssuer()
        await expectCode(.invalidGrant) { _ = try await engines.signIn(assertion: try engines.federated("nobody")) }
        _ = try await engines.registration().register(RegistrationRequest(challengeType: .fsso, answer: try engines.federated()))
        let assertion = try engines.federated(jti: "once")
        _ = try await engines.signIn(assertion: assertion)
        let before = engines.rowCounts
        await expectCode(.invalidGrant) { _ = try await engines.signIn(assertion: assertion) }
        let forged = try Assertions.federated(issuer: "acme", keyID: "k1", subject: "alice", now: engines.now).sign(with: TestKeys.rsa2)
        await expectCode(.invalidGrant) { _ = try await engines.signIn(assertion: forged) }
        #expect(engines.rowCounts == before)
    }

    @Test("Device key: the nonce Latch issued marks the assertion; it is spent once; sub must equal iss")
    func deviceKey() async throws {
        let engines = try await Engines.make()
        try await engines.registerDevice("bob")
        let challenge = try await engines.nonces.issue(SignInChallengeRequest(username: "bob"))
        #expect(challenge.nonce.hasPrefix(SignInNonces.prefix))
        let assertion = try Assertions.device(username: "bob", keyID: "device-1", nonce: challenge.nonce, now: engines.now).sign(with: TestKeys.p256)
        let tokens = try await engines.signIn(assertion: assertion)
        #expect(try ParsedJWS(tokens.idToken).claims["amr"] == ["pop"])
        await expectCode(.invalidGrant) { _ = try await engines.signIn(assertion: assertion) }

        let second = try await engines.nonces.issue(SignInChallengeRequest(username: "bob"))
        var mismatched = Assertions.device(username: "bob", keyID: "device-1", nonce: second.nonce, now: engines.now)
        mismatched.claims["sub"] = "mallory"
        await expectCode(.invalidGrant) { _ = try await engines.signIn(assertion: try mismatched.sign(with: TestKeys.p256)) }
        // Signed by another key under the device's kid.
        let forged = try Assertions.device(username: "bob", keyID: "device-1", nonce: second.nonce, now: engines.now).sign(with: TestKeys.p256b)
        await expectCode(.invalidGrant) { _ = try await engines.signIn(assertion: forged) }
        // The refused attempts left the nonce for the genuine one.
        _ = try await engines.signIn(
            assertion: try Assertions.device(username: "bob", keyID: "device-1", nonce: second.nonce, now: engines.now).sign(with: TestKeys.p256))
    }

    @Test("Lifetimes and skew at Int64.max (settings made in code, past the configuration's ranges) saturate instead of trapping")
    func hugeLifetimes() async throws {
        let engines = try await Engines.make(
            assertions: { $0.nonceLifetime = .max; $0.clockSkew = .max },
            { $0.accessTokenLifetime = .max; $0.idTokenLifetime = .max; $0.refreshFamilyLifetime = .max })
        let tokens = try await engines.registerAndSignIn("bob")
        #expect(tokens.expiresIn > 0)
        _ = try await engines.refresh(tokens.refreshToken)
    }

    @Test("Device key: a nonce issued for another user, an unknown user, or an expired nonce are refused")
    func deviceKeyNonces() async throws {
        let engines = try await Engines.make()
        try await engines.registerDevice("bob")
        try await engines.registerDevice("carol")
        let carols = try await engines.nonces.issue(SignInChallengeRequest(username: "carol"))
        await expectCode(.invalidGrant) {
            _ = try await engines.signIn(
                assertion: try Assertions.device(username: "bob", keyID: "device-1", nonce: carols.nonce, now: engines.now).sign(with: TestKeys.p256))
        }
        // A nonce for an unknown username is well-formed, and issuing it writes nothing.
        let rows = engines.rowCounts
        let ghost = try await engines.nonces.issue(SignInChallengeRequest(username: "ghost"))
        #expect(ghost.nonce.hasPrefix(SignInNonces.prefix) && engines.rowCounts == rows)
        // Nonces Latch did not issue: made up, or with the expiry pushed out.
        let parts = carols.nonce.split(separator: ".")
        for forged in ["lsn_" + String(repeating: "A", count: 22), parts[0] + ".99999999999." + parts[2], carols.nonce + "x"] {
            await expectCode(.invalidGrant) {
                _ = try await engines.signIn(
                    assertion: try Assertions.device(username: "carol", keyID: "device-1", nonce: forged, now: engines.now).sign(with: TestKeys.p256))
            }
        }
        let bobs = try await engines.nonces.issue(SignInChallengeRequest(username: "bob"))
        engines.clock.advance(by: 301)
        await expectCode(.invalidGrant) {
            _ = try await engines.signIn(
                assertion: try Assertions.device(username: "bob", keyID: "device-1", nonce: bobs.nonce, now: engines.now).sign(with: TestKeys.p256))
        }
    }

    @Test("Asking for many nonces for a username cannot push out the one a device holds (nothing is stored to evict)")
    func nonceFlood() async throws {
        let engines = try await Engines.make()
        try await engines.registerDevice("bob")
        let held = try await engines.nonces.issue(SignInChallengeRequest(username: "bob"))
        for _ in 0..<200 { _ = try await engines.nonces.issue(SignInChallengeRequest(username: "bob")) }
        _ = try await engines.signIn(
            assertion: try Assertions.device(username: "bob", keyID: "device-1", nonce: held.nonce, now: engines.now).sign(with: TestKeys.p256))
    }

    @Test("An assertion whose jti is not a sign-in nonce is taken as federated, whatever its iss")
    func methodByJTI() async throws {
        let engines = try await Engines.make()
        try await engines.registerDevice("bob")
        // A device-shaped assertion without a Latch nonce: no issuer "bob" exists, so no key matches.
        let assertion = try Assertions.device(username: "bob", keyID: "device-1", nonce: "not-a-nonce", now: engines.now).sign(with: TestKeys.p256)
        await expectCode(.invalidGrant) { _ = try await engines.signIn(assertion: assertion) }
        #expect(engines.store.count(.sessions) == 0)
    }

    @Test("A user deleted between verification and the session's unit of work gets invalid_grant, not a session")
    func deletedUser() async throws {
        let engines = try await Engines.make()
        try await engines.addIssuer()
        let created = try await engines.registration().register(RegistrationRequest(challengeType: .fsso, answer: try engines.federated()))
        let user = try #require(try await engines.store.user(id: created.userId))
        _ = try await engines.store.deleteUser(id: user.id)
        let signIn = VerifiedSignIn(user: user, amr: ["fed"], consumes: .jti("j", issuer: "acme", until: engines.now + 60))
        let before = engines.rowCounts
        await expectCode(.invalidGrant) {
            _ = try await engines.sessionOpener.open(signIn, client: Client(id: "default", name: "", createdAt: 0), scope: "openid", now: engines.now)
        }
        #expect(engines.rowCounts == before, "the jti was spent by a refused sign-in")
    }
}
