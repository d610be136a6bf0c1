import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

@Suite("Refresh-token grant (RFC 6749 §6, RFC 9700)")
struct RefreshTokenGrantTests {
    func signedIn(_ engines: Engines) async throws -> TokenResponse {
        try await engines.addIssuer()
        _ = try await engines.registration().register(RegistrationRequest(challengeType: .fsso, answer: try engines.federated()))
        return try await engines.signIn(assertion: try engines.federated())
    }

    @Test("Each refresh rotates; the new tokens carry the same session and auth_time")
    func rotates() async throws {
        let engines = try await Engines.make()
        let first = try await signedIn(engines)
        engines.clock.advance(by: 30)
        let second = try await engines.refresh(first.refreshToken)
        #expect(second.refreshToken != first.refreshToken)
        let before = try ParsedJWS(first.idToken).claims
        let after = try ParsedJWS(second.idToken).claims
        #expect(after["sid"] == before["sid"] && after["auth_time"] == before["auth_time"] && after["iat"] == .int(engines.now))
        #expect(second.refreshExpiresIn == first.refreshExpiresIn - 30)
    }

    @Test("A rotated token presented again after its successor was used revokes the family, and the revocation is kept")
    func reuse() async throws {
        let engines = try await Engines.make()
        let first = try await signedIn(engines)
        let second = try await engines.refresh(first.refreshToken)
        _ = try await engines.refresh(second.refreshToken)
        await expectCode(.invalidGrant) { _ = try await engines.refresh(first.refreshToken) }
        let sid = try #require(try ParsedJWS(first.idToken).claims["sid"]?.stringValue)
        #expect(try await engines.store.session(id: sid)?.revokedAt == engines.now)
        await expectCode(.invalidToken) { _ = try await engines.accessTokens.authenticate(accessToken: second.accessToken) }
    }

    @Test("Another client's token, a forged MAC and an unknown session are invalid_grant and change nothing")
    func refusals() async throws {
        let engines = try await Engines.make()
        let first = try await signedIn(engines)
        await expectCode(.invalidGrant) { _ = try await engines.refresh(first.refreshToken, client: "other") }
        let parts = first.refreshToken.split(separator: ".")
        await expectCode(.invalidGrant) { _ = try await engines.refresh(parts[0] + ".5." + parts[2]) }
        await expectCode(.invalidGrant) { _ = try await engines.refresh(engines.refreshTokens.token(sessionID: "ghost", generation: 0)) }
        // Still the live token.
        _ = try await engines.refresh(first.refreshToken)
    }
}
