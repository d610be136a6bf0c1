@testable import LatchCore
@testable import LatchJOSE
import LatchModel
import LatchTesting
import Testing

@Suite("Access tokens (RFC 9068) at Latch's own endpoints")
struct AccessTokenGateTests {
    @Test("The claims the minter writes are the claims the authenticator reads")
    func roundTrip() async throws {
        let engines = try await Engines.make()
        let tokens = try await engines.registerAndSignIn("bob")
        let caller = try await engines.accessTokens.authenticate(accessToken: tokens.accessToken)
        #expect(caller.user.username == "bob" && caller.claims.sessionID == caller.session.id && caller.claims.clientID == "default")
        #expect(caller.claims.expiresAt == engines.now + 3600 && caller.claims.audience == "https://latch.test")
        #expect(AccessTokenClaims(try ParsedJWS(tokens.accessToken).claims) == caller.claims)
    }

    @Test("An access token whose ES256 signature is respelled (s → n − s) is refused: a token of Latch's has one spelling")
    func malleatedSignature() async throws {
        let engines = try await Engines.make()
        let tokens = try await engines.registerAndSignIn("bob")
        let parts = tokens.accessToken.split(separator: ".").map(String.init)
        let signature = Array(Base64URL.decode(parts[2])!)
        let flipped = Array(signature[..<32]) + P256LowS.negate(Array(signature[32...]))
        let twin = parts[0] + "." + parts[1] + "." + Base64URL.encode(flipped)
        await expectCode(.invalidToken) { _ = try await engines.accessTokens.authenticate(accessToken: twin) }
        _ = try await engines.accessTokens.authenticate(accessToken: tokens.accessToken)
        await expectCode(.invalidToken) { _ = try await engines.accessTokens.authenticate(accessToken: twin) }
    }

    @Test("An ID token, an expired token, a revoked session, a token of another issuer: invalid_token")
    func refusals() async throws {
        let engines = try await Engines.make()
        let tokens = try await engines.registerAndSignIn("bob")
        await expectCode(.invalidToken) { _ = try await engines.accessTokens.authenticate(accessToken: tokens.idToken) }
        await expectCode(.invalidToken) { _ = try await engines.accessTokens.authenticate(accessToken: "x.y.z") }
        let foreign = AccessTokenGate(store: engines.store, keys: engines.keys, issuer: "https://elsewhere", clock: engines.clock.clock)
        await expectCode(.invalidToken) { _ = try await foreign.authenticate(accessToken: tokens.accessToken) }
        let caller = try await engines.accessTokens.authenticate(accessToken: tokens.accessToken)
        _ = try await engines.store.revokeSession(id: caller.session.id, at: engines.now)
        await expectCode(.invalidToken) { _ = try await engines.accessTokens.authenticate(accessToken: tokens.accessToken) }
        engines.clock.advance(by: 3600)
        await expectCode(.invalidToken) { _ = try await engines.accessTokens.authenticate(accessToken: tokens.accessToken) }
    }

    @Test("A verified token is remembered: still refused once expired or its session revoked; a changed byte is verified afresh")
    func cache() async throws {
        let engines = try await Engines.make()
        let tokens = try await engines.registerAndSignIn("bob")
        let authenticator = engines.accessTokens
        _ = try await authenticator.authenticate(accessToken: tokens.accessToken)
        #expect(authenticator.verified?.count == 1)
        _ = try await authenticator.authenticate(accessToken: tokens.accessToken)
        #expect(authenticator.verified?.count == 1)
        // The same claims under a signature one bit off: not the cached string, so verified — and refused.
        var bytes = Array(tokens.accessToken.utf8)
        bytes[bytes.count - 2] = bytes[bytes.count - 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        await expectCode(.invalidToken) { _ = try await authenticator.authenticate(accessToken: String(decoding: bytes, as: UTF8.self)) }
        engines.clock.advance(by: 3600)
        await expectCode(.invalidToken) { _ = try await authenticator.authenticate(accessToken: tokens.accessToken) }
    }

    @Test("The cache is bounded: past its capacity the oldest tokens go")
    func bounded() {
        let cache = VerifiedTokenCache(capacity: 3)
        let claims = AccessTokenClaims(
            issuer: "i", subject: "s", audience: "a", clientID: "c", issuedAt: 0, expiresAt: 1, jwtID: "j", scope: "openid", sessionID: "x", authTime: 0)
        for index in 0..<10 { cache.insert(claims, for: "t\(index)") }
        #expect(cache.count == 3)
        #expect(cache.claims(for: "t9") != nil && cache.claims(for: "t6") == nil)
        cache.insert(claims, for: "t9")
        #expect(cache.count == 3 && cache.claims(for: "t7") != nil)
    }
}
