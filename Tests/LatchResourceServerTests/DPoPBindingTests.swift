import Crypto
import Foundation
import LatchJOSE
import LatchModel
import LatchResourceServer
import LatchTesting
import Testing

@Suite("DPoP-bound access tokens (RFC 9449)")
struct DPoPBindingTests {
    @Test("A bound token with a good proof is accepted once; replays, other keys, other requests and wrong schemes are refused")
    func binding() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let verifier = try makeVerifier(base, clock: clock)
            let dpopKey = try PrivateKey.generate(.ES256)
            let token = try tokens.bound(to: dpopKey, now: clock.seconds)

            // Good.
            let good = try proof(dpopKey, token: token, clock: clock)
            let verified = try await verifier.authenticate(dpop(token, proofs: [good]), requiredScopes: ["orders:read"])
            #expect(verified.jkt == dpopKey.publicKey.thumbprint && verified.isDPoPBound)
            // RSA proof keys too, and a URL written differently that normalises the same (case, default port, query).
            let rsaKey = try PrivateKey.generate(.RS256)
            let rsaToken = try tokens.bound(to: rsaKey, now: clock.seconds)
            let rsaProof = try proof(rsaKey, token: rsaToken, clock: clock, url: "HTTPS://API.test:443/hello?page=2")
            #expect(try await verifier.authenticate(dpop(rsaToken, proofs: [rsaProof])).jkt == rsaKey.publicKey.thumbprint)

            func refused(_ request: ResourceRequest, _ code: ResourceServerError.Code, _ name: String) async {
                let error = await refusal(verifier, request)
                #expect(error?.code == code, "\(name): \(String(describing: error))")
                #expect(error?.status == 401, "\(name)")
                #expect(error?.challenges.count == 1, "\(name)")
                #expect(error?.wwwAuthenticate?.hasPrefix("DPoP error=\"\(code.rawValue)\"") == true, "\(name): \(error?.wwwAuthenticate ?? "")")
            }
            // Replayed.
            await refused(dpop(token, proofs: [good]), .invalidDPoPProof, "replayed proof")
            // Another key's proof (a thief's).
            let thief = try PrivateKey.generate(.ES256)
            await refused(dpop(token, proofs: [try proof(thief, token: token, clock: clock)]), .invalidDPoPProof, "another key")
            // The bound token as Bearer (a downgrade), with or without a proof.
            await refused(bearer(token), .invalidToken, "bound token as Bearer")
            await refused(
                ResourceRequest(method: "GET", path: "/hello", authorization: ["Bearer \(token)"], dpop: [try proof(dpopKey, token: token, clock: clock)]),
                .invalidToken, "bound token as Bearer with a proof")
            // An unbound token with the DPoP scheme (its challenge is Bearer's: the scheme that token needs).
            let unbound = try tokens.mint(now: clock.seconds)
            let schemeError = await refusal(verifier, dpop(unbound, proofs: [try proof(dpopKey, token: unbound, clock: clock)]))
            #expect(schemeError?.code == .invalidToken && schemeError?.wwwAuthenticate?.hasPrefix("Bearer error=\"invalid_token\"") == true)
            // Wrong ath (a proof for another token), htu, htm; no proof; two proofs; an old proof; a proof without ath.
            await refused(dpop(token, proofs: [try proof(dpopKey, token: unbound, clock: clock)]), .invalidDPoPProof, "wrong ath")
            await refused(dpop(token, proofs: [try proof(dpopKey, token: nil, clock: clock)]), .invalidDPoPProof, "no ath")
            await refused(
                dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock, url: "https://api.test/other")]), .invalidDPoPProof, "wrong htu")
            await refused(
                dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock, url: "https://evil.test/hello")]), .invalidDPoPProof,
                "another host")
            await refused(
                dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock, method: "POST")]), .invalidDPoPProof, "wrong htm")
            await refused(dpop(token, proofs: []), .invalidDPoPProof, "no proof")
            await refused(
                dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock), try proof(dpopKey, token: token, clock: clock)]),
                .invalidDPoPProof, "two DPoP headers")
            await refused(dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock, age: 120)]), .invalidDPoPProof, "an old proof")
            await refused(dpop(token, proofs: ["not.a.proof"]), .invalidDPoPProof, "garbage")
            // The request's own URL, when given, takes the place of the external base URL.
            let direct = try proof(dpopKey, token: token, clock: clock, url: "http://127.0.0.1:9/direct")
            let request = ResourceRequest(method: "GET", url: "http://127.0.0.1:9/direct", authorization: ["DPoP \(token)"], dpop: [direct])
            #expect(try await verifier.authenticate(request).subject == "user-1")
        }
    }

    @Test("Without an external base URL, bound tokens are refused; a base URL with a path prefix is honoured")
    func externalBaseURL() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let dpopKey = try PrivateKey.generate(.ES256)
            let token = try tokens.bound(to: dpopKey, now: clock.seconds)
            let none = try makeVerifier(base, clock: clock) { $0.externalBaseURL = nil }
            #expect(await refusal(none, dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock)]))?.code == .invalidDPoPProof)
            // Bearer tokens need no base URL.
            #expect(try await none.authenticate(bearer(try tokens.mint(now: clock.seconds))).subject == "user-1")
            let prefixed = try makeVerifier(base, clock: clock) { $0.externalBaseURL = "https://gateway.test/api/" }
            let good = try proof(dpopKey, token: token, clock: clock, url: "https://gateway.test/api/hello")
            #expect(try await prefixed.authenticate(dpop(token, proofs: [good], path: "/hello")).subject == "user-1")
        }
    }

    @Test("Server nonces: a proof without one gets use_dpop_nonce and a DPoP-Nonce; with it, accepted; stale nonces refused")
    func nonces() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let verifier = try makeVerifier(base, clock: clock) { $0.dpop.nonces = DPoPNonceOptions(window: .seconds(60)) }
            let dpopKey = try PrivateKey.generate(.ES256)
            let token = try tokens.bound(to: dpopKey, now: clock.seconds)

            let first = await refusal(verifier, dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock)]))
            #expect(first?.code == .useDPoPNonce && first?.status == 401)
            #expect(first?.wwwAuthenticate?.hasPrefix("DPoP error=\"use_dpop_nonce\"") == true)
            let nonce = try #require(first?.dpopNonce)
            #expect(first?.headers.contains { $0.name == "DPoP-Nonce" && $0.value == nonce } == true)
            #expect(nonce == verifier.currentDPoPNonce())

            let withNonce = try proof(dpopKey, token: token, clock: clock, nonce: nonce)
            #expect(try await verifier.authenticate(dpop(token, proofs: [withNonce])).subject == "user-1")
            // A made-up nonce.
            let madeUp = try proof(dpopKey, token: token, clock: clock, nonce: String(repeating: "A", count: 32))
            #expect(await refusal(verifier, dpop(token, proofs: [madeUp]))?.code == .useDPoPNonce)
            // The next window still accepts it, and hands out a new one; two windows on, it is refused.
            clock.advance(by: 60)
            #expect(verifier.currentDPoPNonce() != nonce)
            #expect(try await verifier.authenticate(dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock, nonce: nonce)])).subject == "user-1")
            clock.advance(by: 60)
            let stale = await refusal(verifier, dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock, nonce: nonce)]))
            #expect(stale?.code == .useDPoPNonce && stale?.dpopNonce == verifier.currentDPoPNonce())
            // Replicas sharing the secret accept each other's nonces.
            let secret = SymmetricKeyFixture.shared
            let one = try makeVerifier(base, clock: clock) { $0.dpop.nonces = DPoPNonceOptions(secret: secret) }
            let two = try makeVerifier(base, clock: clock) { $0.dpop.nonces = DPoPNonceOptions(secret: secret) }
            #expect(one.currentDPoPNonce() == two.currentDPoPNonce())
            let other = try makeVerifier(base, clock: clock) { $0.dpop.nonces = DPoPNonceOptions() }
            #expect(one.currentDPoPNonce() != other.currentDPoPNonce())
        }
    }

    @Test("The replay cache is bounded: full of live entries it refuses (503); expired entries make room")
    func replayCacheBound() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let verifier = try makeVerifier(base, clock: clock) { $0.dpop.replayCacheCapacity = 2 }
            let dpopKey = try PrivateKey.generate(.ES256)
            let token = try tokens.bound(to: dpopKey, now: clock.seconds)
            for _ in 0..<2 {
                #expect(try await verifier.authenticate(dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock)])).subject == "user-1")
            }
            let full = await refusal(verifier, dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock)]))
            #expect(full?.code == .temporarilyUnavailable && full?.status == 503)
            // Remembered for the proof age (60 s) plus the skew (60 s).
            clock.advance(by: 121)
            #expect(try await verifier.authenticate(dpop(token, proofs: [try proof(dpopKey, token: token, clock: clock)])).subject == "user-1")
            #expect(verifier.replayCache.count == 1)
        }
    }

    @Test("DPoPReplayCache forgets entries in expiry order, whatever the order they came in")
    func replayCacheOrder() {
        let cache = DPoPReplayCache(capacity: 100)
        for index in 0..<50 { #expect(cache.admit(jti: "j\(index)", until: 1000 + Int64((index * 37) % 50), now: 0) == .accepted) }
        #expect(cache.admit(jti: "j7", until: 2000, now: 0) == .replayed)
        #expect(cache.count == 50)
        // At 1025, the 26 entries with until ≤ 1025 are gone; the rest are still refused.
        #expect(cache.admit(jti: "new", until: 2000, now: 1025) == .accepted)
        #expect(cache.count == 25)
        var replayed = 0
        for index in 0..<50 where cache.admit(jti: "j\(index)", until: 3000, now: 1025) == .replayed { replayed += 1 }
        #expect(replayed == 24)
    }
}

enum SymmetricKeyFixture {
    static let shared = SymmetricKey(size: .bits256)
}
