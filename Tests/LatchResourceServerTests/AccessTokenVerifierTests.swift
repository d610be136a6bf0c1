import Foundation
import LatchJOSE
import LatchModel
import LatchResourceServer
import LatchTesting
import Testing

@Suite("Access tokens (RFC 9068) and Latch's JWKS")
struct AccessTokenVerifierTests {
    @Test("A valid Bearer token is accepted, with every claim read")
    func validBearer() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let verifier = try makeVerifier(base, clock: clock)
            let consumers: JSONValue = [["issuer": "bank", "consumer": "c-9"]]
            let raw = try tokens.mint(now: clock.seconds, ["consumers": consumers])
            let token = try await verifier.authenticate(bearer(raw), requiredScopes: ["orders:read"])
            #expect(token.subject == "user-1")
            #expect(token.clientId == "app-1")
            #expect(token.scopes == ["openid", "orders:read"])
            #expect(token.sessionId == "session-1")
            #expect(token.authTime == clock.now.addingTimeInterval(-10))
            #expect(token.expiresAt == clock.now.addingTimeInterval(300))
            #expect(token.consumers == [.init(issuer: "bank", consumer: "c-9")])
            #expect(token.jkt == nil && !token.isDPoPBound)
            #expect(token.claims["iss"] == .string(Tokens.issuer))
            // The scheme is case-insensitive; `aud` may be an array holding the audience; RS256 keys work too.
            #expect(try await verifier.authenticate(ResourceRequest(method: "GET", path: "/", authorization: ["bEaReR \(raw)"])).subject == "user-1")
            let array = try tokens.mint(now: clock.seconds, ["aud": [.string("https://other.test"), .string(Tokens.audience)]])
            #expect(try await verifier.authenticate(bearer(array)).subject == "user-1")
            let rsa = try Tokens.make(.RS256, kid: "r1")
            standIn.publish([tokens.jwk, rsa.jwk])
            clock.advance(by: 11)
            #expect(try await verifier.authenticate(bearer(try rsa.mint(now: clock.seconds))).subject == "user-1")
        }
    }

    @Test("Each broken token is refused with invalid_token and a Bearer challenge")
    func refusals() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let verifier = try makeVerifier(base, clock: clock) { $0.realm = "api" }
            let now = clock.seconds
            let other = try PrivateKey.generate(.ES256)
            var header: [String: JSONValue] = ["alg": "ES256", "typ": "at+jwt", "kid": "k1"]
            let claims = Tokens.claims(now: now)
            var embedded = header
            embedded["jwk"] = .object(["kty": "EC"])
            let cases: [(String, String)] = [
                ("bad signature", try tokens.mint(now: now, key: other)),
                ("wrong iss", try tokens.mint(now: now, ["iss": "https://evil.test"])),
                ("wrong aud", try tokens.mint(now: now, ["aud": "https://other.test"])),
                ("aud array without ours", try tokens.mint(now: now, ["aud": ["https://other.test"]])),
                ("expired past the skew", try tokens.mint(now: now, ["exp": .int(now - 61)])),
                ("iat in the future past the skew", try tokens.mint(now: now, ["iat": .int(now + 120)])),
                ("nbf in the future", try tokens.mint(now: now, ["nbf": .int(now + 120)])),
                ("typ JWT (an ID token)", try tokens.mint(now: now, type: "JWT")),
                ("no sub", try tokens.mint(now: now, removing: ["sub"])),
                ("no exp", try tokens.mint(now: now, removing: ["exp"])),
                ("exp not an integer", try tokens.mint(now: now, ["exp": .double(Double(now) + 100.5)])),
                ("a cnf that is not jkt", try tokens.mint(now: now, ["cnf": .object(["x5t#S256": "abc"])])),
                ("alg none", try Tokens.raw(header: ["alg": "none", "typ": "at+jwt", "kid": "k1"], claims: claims, key: nil)),
                ("alg HS256", try Tokens.raw(header: ["alg": "HS256", "typ": "at+jwt", "kid": "k1"], claims: claims, key: nil)),
                ("an embedded jwk", try Tokens.raw(header: embedded, claims: claims, key: tokens.key)),
                ("no kid", try Tokens.raw(header: header.filter { $0.key != "kid" }, claims: claims, key: tokens.key)),
                ("not a JWS", "abc.def"),
                ("too long", String(repeating: "a", count: 9000)),
            ]
            for (name, token) in cases {
                let error = await refusal(verifier, bearer(token))
                #expect(error?.code == .invalidToken, "\(name)")
                #expect(error?.status == 401, "\(name)")
                #expect(error?.wwwAuthenticate?.hasPrefix("Bearer realm=\"api\", error=\"invalid_token\", error_description=\"") == true, "\(name)")
                #expect(error?.challenges.count == 1, "\(name)")
            }
            // Inside the skew: accepted.
            #expect(try await verifier.authenticate(bearer(try tokens.mint(now: now, ["exp": .int(now - 30)]))).subject == "user-1")
            #expect(try await verifier.authenticate(bearer(try tokens.mint(now: now, ["iat": .int(now + 30)]))).subject == "user-1")
            // `application/at+jwt` is the same type (RFC 9068 §4).
            header["typ"] = "application/at+jwt"
            #expect(try await verifier.authenticate(bearer(try Tokens.raw(header: header, claims: claims, key: tokens.key))).subject == "user-1")
            // An ES384-only allowlist refuses ES256 tokens.
            let strict = try makeVerifier(base, clock: clock) { $0.algorithms = [.ES384] }
            #expect(await refusal(strict, bearer(try tokens.mint(now: now)))?.code == .invalidToken)
        }
    }

    @Test("No token: 401 with a Bearer and a DPoP challenge and no error code; malformed headers: 400")
    func missingAndMalformed() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let verifier = try makeVerifier(base, clock: clock)
            for authorization in [[], ["Basic dXNlcjpwYXNz"], ["Bearer"]] {
                let error = await refusal(verifier, ResourceRequest(method: "GET", path: "/", authorization: authorization))
                #expect(error?.code == .invalidToken && error?.isMissingCredentials == true, "\(authorization)")
                #expect(error?.challenges == ["Bearer", "DPoP algs=\"ES256 RS256 ES384\""], "\(authorization)")
                #expect(error?.status == 401)
            }
            let twice = await refusal(verifier, ResourceRequest(method: "GET", path: "/", authorization: ["Bearer a.b.c", "Bearer a.b.c"]))
            #expect(twice?.code == .invalidRequest && twice?.status == 400)
            let spaced = await refusal(verifier, ResourceRequest(method: "GET", path: "/", authorization: ["Bearer a b"]))
            #expect(spaced?.code == .invalidRequest && spaced?.challenges.first?.hasPrefix("Bearer error=\"invalid_request\"") == true)
            #expect(standIn.fetches == 0)
            // The JSON body.
            let body = try #require(twice).jsonBody
            #expect(try JSONValue.parse(body) == ["error": "invalid_request", "error_description": "more than one Authorization header"])
        }
    }

    @Test("A missing scope is refused with 403 insufficient_scope naming the scopes needed")
    func missingScope() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let verifier = try makeVerifier(base, clock: clock)
            let error = await refusal(verifier, bearer(try tokens.mint(now: clock.seconds)), requiredScopes: ["orders:read", "orders:write"])
            #expect(error?.code == .insufficientScope && error?.status == 403)
            #expect(error?.requiredScopes == ["orders:read", "orders:write"])
            #expect(error?.wwwAuthenticate?.hasSuffix(", scope=\"orders:read orders:write\"") == true)
            let noScope = await refusal(verifier, bearer(try tokens.mint(now: clock.seconds, removing: ["scope"])), requiredScopes: ["openid"])
            #expect(noScope?.code == .insufficientScope)
        }
    }

    @Test("Keys are cached, fetched again for an unknown kid (at most once per 10 s), and kept when a fetch fails")
    func jwksCache() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let first = try Tokens.make(.ES256, kid: "one")
            let second = try Tokens.make(.RS256, kid: "two")
            standIn.publish([first.jwk])
            let verifier = try makeVerifier(base, clock: clock)
            #expect(try await verifier.authenticate(bearer(try first.mint(now: clock.seconds))).subject == "user-1")
            #expect(try await verifier.authenticate(bearer(try first.mint(now: clock.seconds))).subject == "user-1")
            #expect(standIn.fetches == 1)
            // Latch rotates: an unknown kid fetches again, but not within 10 s of the last fetch.
            standIn.publish([first.jwk, second.jwk])
            #expect(await refusal(verifier, bearer(try second.mint(now: clock.seconds)))?.code == .invalidToken)
            #expect(standIn.fetches == 1)
            clock.advance(by: 11)
            #expect(try await verifier.authenticate(bearer(try second.mint(now: clock.seconds))).subject == "user-1")
            #expect(standIn.fetches == 2)
            // Made-up kids cost at most one fetch per interval.
            for index in 0..<5 {
                #expect(await refusal(verifier, bearer(try second.mint(now: clock.seconds, kid: "made-up-\(index)")))?.code == .invalidToken)
            }
            #expect(standIn.fetches == 2)
            clock.advance(by: 11)
            for index in 0..<5 {
                #expect(await refusal(verifier, bearer(try second.mint(now: clock.seconds, kid: "made-up-\(index)")))?.code == .invalidToken)
            }
            #expect(standIn.fetches == 3)
            // A token of another issuer never costs a fetch.
            clock.advance(by: 11)
            #expect(await refusal(verifier, bearer(try second.mint(now: clock.seconds, ["iss": "https://evil.test"], kid: "x")))?.code == .invalidToken)
            #expect(standIn.fetches == 3)
            // Past the lifetime the keys are fetched again; a failed fetch keeps the cached ones, and is not retried
            // within the interval.
            standIn.fail = true
            clock.advance(by: 301)
            #expect(try await verifier.authenticate(bearer(try first.mint(now: clock.seconds))).subject == "user-1")
            #expect(standIn.fetches == 4)
            #expect(try await verifier.authenticate(bearer(try first.mint(now: clock.seconds))).subject == "user-1")
            #expect(standIn.fetches == 4)
            // Latch is back: the next fetch (after the interval) refreshes the keys; a key Latch dropped is refused.
            standIn.fail = false
            standIn.publish([second.jwk])
            clock.advance(by: 11)
            #expect(try await verifier.authenticate(bearer(try second.mint(now: clock.seconds))).subject == "user-1")
            #expect(standIn.fetches == 5)
            #expect(await refusal(verifier, bearer(try first.mint(now: clock.seconds)))?.code == .invalidToken)
            #expect(standIn.fetches == 5)
        }
    }

    @Test("Concurrent first requests share one fetch; keys never fetched answer 503")
    func jwksConcurrencyAndOutage() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let verifier = try makeVerifier(base, clock: clock)
            let raw = try tokens.mint(now: clock.seconds)
            let subjects = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<8 { group.addTask { try await verifier.authenticate(bearer(raw)).subject } }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(subjects == Array(repeating: "user-1", count: 8))
            #expect(standIn.fetches == 1)

            standIn.fail = true
            let cold = try makeVerifier(base, clock: clock)
            let error = await refusal(cold, bearer(raw))
            #expect(error?.code == .temporarilyUnavailable && error?.status == 503 && error?.challenges.isEmpty == true)
            #expect(error?.headers.contains { $0.name == "Retry-After" } == true)
        }
    }

    @Test("jwksFetchTimeout bounds a fetch: a key set slower than it answers 503; a longer timeout waits for it")
    func jwksFetchTimeout() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let raw = try tokens.mint(now: clock.seconds)
            let impatient = try makeVerifier(base, clock: clock) {
                $0.jwksURL = base + "/slow/jwks.json"
                $0.jwksFetchTimeout = .milliseconds(500)
            }
            // With the default 5 s the 3 s answer would arrive and the token pass.
            let error = await refusal(impatient, bearer(raw))
            #expect(error?.code == .temporarilyUnavailable && error?.status == 503)
            let patient = try makeVerifier(base, clock: clock) {
                $0.jwksURL = base + "/slow/jwks.json"
                $0.jwksFetchTimeout = .seconds(30)
            }
            #expect(try await patient.authenticate(bearer(raw)).subject == "user-1")
        }
    }

    @Test("A fetcher behind the protocol: failures keep keys, and a JWKS's bad members are left out")
    func fetcherProtocol() async throws {
        final class Fetcher: JWKSFetching {
            let body: Locked<[UInt8]?>
            init(_ body: [UInt8]?) { self.body = Locked(body) }
            func fetchJWKS(from url: String) async throws -> [UInt8] {
                guard let body = body.withLock({ $0 }) else { throw HTTPJWKSFetcher.Failure(description: "down") }
                return body
            }
        }
        let clock = TestClock()
        let tokens = try Tokens.make()
        let good = try JSONEncoder().encode(JSONWebKeySet(keys: [tokens.jwk]))
        let fetcher = Fetcher(Array(good))
        var configuration = ResourceServerConfiguration(issuer: Tokens.issuer, audience: Tokens.audience)
        configuration.jwksCacheLifetime = .seconds(60)
        let verifier = try AccessTokenVerifier(configuration: configuration, fetcher: fetcher, clock: { clock.now })
        #expect(verifier.keys.url == "https://latch.test/.well-known/jwks.json")
        #expect(try await verifier.authenticate(bearer(try tokens.mint(now: clock.seconds))).subject == "user-1")
        fetcher.body.withLock { $0 = nil }
        clock.advance(by: 61)
        #expect(try await verifier.authenticate(bearer(try tokens.mint(now: clock.seconds))).subject == "user-1")
        #expect(verifier.keys.fetchAttempts == 2)
        // Members that are private, of another use, without kid, or malformed are skipped.
        let mixed = #"{"keys":[{"kty":"EC","kid":"p","crv":"P-256","x":"AA","y":"AA"},{"kty":"oct","kid":"o","k":"AAAA"},"#
            + #"{"kty":"EC","use":"enc","kid":"e"},{"kid":""}]}"#
        #expect(try JWKSCache.parse(Array(mixed.utf8)).isEmpty)
        #expect(throws: JWKSCache.Unreadable.self) { try JWKSCache.parse(Array("[]".utf8)) }
    }

    @Test("Configuration errors are reported at creation")
    func configuration() throws {
        var configuration = ResourceServerConfiguration(issuer: "https://latch.test/", audience: "a")
        #expect(configuration.jwksURL == "https://latch.test/.well-known/jwks.json")
        configuration.externalBaseURL = "api.test/no-scheme"
        #expect(throws: ResourceServerConfigurationError.self) { try AccessTokenVerifier(configuration: configuration) }
        configuration.externalBaseURL = "https://api.test/?q=1"
        #expect(throws: ResourceServerConfigurationError.self) { try AccessTokenVerifier(configuration: configuration) }
        configuration.externalBaseURL = "https://api.test/prefix/"
        configuration.clockSkew = .seconds(-1)
        #expect(throws: ResourceServerConfigurationError.self) { try AccessTokenVerifier(configuration: configuration) }
        configuration.clockSkew = .seconds(60)
        _ = try AccessTokenVerifier(configuration: configuration)
        #expect(throws: ResourceServerConfigurationError.self) {
            try AccessTokenVerifier(configuration: ResourceServerConfiguration(issuer: "", audience: "a"))
        }
    }
}
