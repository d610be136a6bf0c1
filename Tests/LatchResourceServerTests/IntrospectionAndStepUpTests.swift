import Foundation
import LatchJOSE
import LatchModel
import LatchResourceServer
import LatchTesting
import Testing

@Suite("Introspection (RFC 7662) and step-up (RFC 9470)")
struct IntrospectionAndStepUpTests {
    @Test("Over HTTP with a Basic credential: active tokens pass, revoked ones are refused at once")
    func httpIntrospection() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let verifier = try makeVerifier(base, clock: clock) {
                $0.introspection = IntrospectionOptions(
                    url: base + "/oauth2/introspect", clientID: LatchStandIn.introspectionClientID, clientSecret: LatchStandIn.introspectionSecret)
            }
            let jti = "token-\(UUID().uuidString)"
            let raw = try tokens.mint(now: clock.seconds, ["jti": .string(jti)])
            #expect(try await verifier.authenticate(bearer(raw)).subject == "user-1")
            #expect(try await verifier.authenticate(bearer(raw)).subject == "user-1")
            #expect(standIn.introspections == 2)
            standIn.revoke(jti: jti)
            let error = await refusal(verifier, bearer(raw))
            #expect(error?.code == .invalidToken && error?.message.contains("no longer active") == true)
            #expect(standIn.introspections == 3)
            // A wrong credential: Latch answers 401, so the token cannot be checked (503, fail closed).
            let wrong = try makeVerifier(base, clock: clock) {
                $0.introspection = IntrospectionOptions(url: base + "/oauth2/introspect", clientID: "rs-1", clientSecret: "wrong")
            }
            #expect(await refusal(wrong, bearer(try tokens.mint(now: clock.seconds)))?.code == .temporarilyUnavailable)
            // The default URL is the issuer's.
            #expect(IntrospectionOptions(issuer: "https://latch.test/", clientID: "a", clientSecret: "b").url == "https://latch.test/oauth2/introspect")
        }
    }

    @Test("Active answers are cached for the configured time and never past the token's exp; inactive ones never")
    func introspectionCache() async throws {
        final class Introspector: TokenIntrospecting {
            let state = Locked<(calls: Int, active: Bool, fail: Bool)>((0, true, false))
            func introspect(token: String) async throws -> [String: JSONValue] {
                let (active, fail) = state.withLock { state in
                    state.calls += 1
                    return (state.active, state.fail)
                }
                if fail { throw HTTPTokenIntrospector.Failure(description: "down") }
                return ["active": .bool(active)]
            }
            var calls: Int { state.withLock { $0.calls } }
        }
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let introspector = Introspector()
            let verifier = try makeVerifier(base, clock: clock, introspector: introspector) {
                var options = IntrospectionOptions(issuer: Tokens.issuer, clientID: "x", clientSecret: "y")
                options.cacheLifetime = .seconds(5)
                $0.introspection = options
            }
            let raw = try tokens.mint(now: clock.seconds)
            #expect(try await verifier.authenticate(bearer(raw)).subject == "user-1")
            #expect(try await verifier.authenticate(bearer(raw)).subject == "user-1")
            #expect(introspector.calls == 1)
            // Revoked at Latch: still accepted from the cache for the rest of its 5 s, then refused.
            introspector.state.withLock { $0.active = false }
            clock.advance(by: 4)
            #expect(try await verifier.authenticate(bearer(raw)).subject == "user-1")
            clock.advance(by: 2)
            #expect(await refusal(verifier, bearer(raw))?.code == .invalidToken)
            #expect(await refusal(verifier, bearer(raw))?.code == .invalidToken)
            #expect(introspector.calls == 3)
            // Latch unreachable: fail closed.
            introspector.state.withLock { $0.fail = true }
            #expect(await refusal(verifier, bearer(try tokens.mint(now: clock.seconds)))?.code == .temporarilyUnavailable)
            // With no cache lifetime, every request asks.
            introspector.state.withLock { $0 = (0, true, false) }
            let uncached = try makeVerifier(base, clock: clock, introspector: introspector)
            let other = try tokens.mint(now: clock.seconds)
            for _ in 0..<3 { #expect(try await uncached.authenticate(bearer(other)).subject == "user-1") }
            #expect(introspector.calls == 3)
        }
    }

    @Test("requireRecentAuthentication: insufficient_user_authentication with max_age, in the token's scheme")
    func stepUp() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let verifier = try makeVerifier(base, clock: clock)
            let token = try await verifier.authenticate(bearer(try tokens.mint(now: clock.seconds, ["auth_time": .int(clock.seconds - 600)])))
            try token.requireRecentAuthentication(maxAge: .seconds(600))
            do throws(ResourceServerError) {
                try token.requireRecentAuthentication(maxAge: .seconds(300))
                Issue.record("a sign-in 600 s old passed a 300 s step-up")
            } catch {
                #expect(error.code == .insufficientUserAuthentication && error.status == 401 && error.maxAge == 300)
                #expect(
                    error.wwwAuthenticate
                        == "Bearer error=\"insufficient_user_authentication\", error_description=\"a more recent sign-in is required for this operation\", max_age=300")
            }
            let dpopKey = try PrivateKey.generate(.ES256)
            let bound = try tokens.bound(to: dpopKey, now: clock.seconds, ["auth_time": .int(clock.seconds - 600)])
            let boundToken = try await verifier.authenticate(dpop(bound, proofs: [try proof(dpopKey, token: bound, clock: clock)]))
            #expect(throws: ResourceServerError.self) { try boundToken.requireRecentAuthentication(maxAge: .seconds(60)) }
            do throws(ResourceServerError) {
                try boundToken.requireRecentAuthentication(maxAge: .seconds(60))
            } catch {
                #expect(error.wwwAuthenticate?.hasPrefix("DPoP error=\"insufficient_user_authentication\"") == true)
                #expect(error.wwwAuthenticate?.contains("max_age=60") == true)
            }
            // Measured from the verifier's clock when the token was checked.
            let fresh = try await verifier.authenticate(bearer(try tokens.mint(now: clock.seconds)))
            try fresh.requireRecentAuthentication(maxAge: .seconds(10))
        }
    }
}
