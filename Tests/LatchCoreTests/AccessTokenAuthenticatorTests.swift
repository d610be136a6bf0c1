import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

@Suite("Access tokens (RFC 9068) at Latch's own endpoints")
struct AccessTokenAuthenticatorTests {
    @Test("The claims the minter writes are the claims the authenticator reads")
    func roundTrip() async throws {
        let engines = try await Engines.make()
        try await engines.registerDevice("bob")
        let challenge = try await engines.nonces.issue(SignInChallengeRequest(username: "bob"))
        let tokens = try await engines.signIn(
            assertion: try Assertions.device(username: "bob", keyID: "device-1", nonce: challenge.nonce, now: engines.now).sign(with: TestKeys.p256))
        let caller = try await engines.accessTokens.authenticate(accessToken: tokens.accessToken)
        #expect(caller.user.username == "bob" && caller.claims.sessionID == caller.session.id && caller.claims.clientID == "default")
        #expect(caller.claims.expiresAt == engines.now + 3600 && caller.claims.audience == "https://latch.test")
        #expect(AccessTokenClaims(try ParsedJWS(tokens.accessToken).claims) == caller.claims)
    }

    @Test("An ID token, an expired token, a revoked session, a token of another issuer: invalid_token")
    func refusals() async throws {
        let engines = try await Engines.make()
        try await engines.registerDevice("bob")
        let challenge = try await engines.nonces.issue(SignInChallengeRequest(username: "bob"))
        let tokens = try await engines.signIn(
            assertion: try Assertions.device(username: "bob", keyID: "device-1", nonce: challenge.nonce, now: engines.now).sign(with: TestKeys.p256))
        await expectCode(.invalidToken) { _ = try await engines.accessTokens.authenticate(accessToken: tokens.idToken) }
        await expectCode(.invalidToken) { _ = try await engines.accessTokens.authenticate(accessToken: "x.y.z") }
        let foreign = AccessTokenAuthenticator(store: engines.store, keys: engines.keys, issuer: "https://elsewhere", clock: engines.clock.clock)
        await expectCode(.invalidToken) { _ = try await foreign.authenticate(accessToken: tokens.accessToken) }
        let caller = try await engines.accessTokens.authenticate(accessToken: tokens.accessToken)
        _ = try await engines.store.revokeSession(id: caller.session.id, at: engines.now)
        await expectCode(.invalidToken) { _ = try await engines.accessTokens.authenticate(accessToken: tokens.accessToken) }
        engines.clock.advance(by: 3600)
        await expectCode(.invalidToken) { _ = try await engines.accessTokens.authenticate(accessToken: tokens.accessToken) }
    }
}
