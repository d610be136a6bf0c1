import Foundation
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// The one JWKS cache every verifier in Latch uses (resource servers, login issuers, upstream identity providers, the
/// SDK): its rules on a stopped clock, against a fetcher that serves real JWK Sets and counts its calls.
@Suite("JWKS cache")
struct JWKSCacheTests {
    /// Serves the JWK Set of `keys` (kid → key), or fails when `down`; counts fetches; an optional gate holds each
    /// fetch until opened (to make lookups overlap).
    final class Publisher: JWKSFetching {
        struct Down: Error {}
        let keys = Locked<[String: PrivateKey]>([:])
        let down = Locked(false)
        let fetches = Locked(0)
        let gate = Locked<AsyncStream<Void>?>(nil)

        func fetchJWKS(from url: String) async throws -> [UInt8] {
            fetches.withLock { $0 += 1 }
            if let gate = gate.withLock({ $0 }) {
                for await _ in gate { break }
            }
            if down.withLock({ $0 }) { throw Down() }
            let members = keys.withLock { $0 }.sorted { $0.key < $1.key }.map { kid, key in try! JSONValue.parse(JSONEncoder().encode(key.publicKey.jwk(kid: kid))) }
            return JSONValue.object(["keys": .array(members)]).serialized()
        }
    }

    final class Clock: Sendable {
        let now = Locked<Int64>(1_000_000)
        func advance(_ seconds: Int64) { now.withLock { $0 += seconds } }
    }

    let publisher = Publisher()
    let clock = Clock()

    func cache(lifetime: Int64 = 300, refetchInterval: Int64 = 10) -> JWKSCache {
        JWKSCache(
            url: "https://issuer.test/jwks", fetcher: publisher, lifetime: lifetime, refetchInterval: refetchInterval,
            clock: { [clock] in clock.now.withLock { $0 } })
    }

    func kid(_ lookup: JWKSCache.Lookup) -> String {
        switch lookup {
        case .key(let key): key.thumbprint == TestKeys.p256.publicKey.thumbprint ? "a" : key.thumbprint == TestKeys.p256b.publicKey.thumbprint ? "b" : "other"
        case .unknownKeyID: "unknown"
        case .unavailable: "unavailable"
        }
    }

    @Test("Fetched at first use and kept for its lifetime; then fetched again")
    func lifetime() async {
        publisher.keys.withLock { $0 = ["a": TestKeys.p256] }
        let cache = cache()
        #expect(kid(await cache.key("a")) == "a")
        clock.advance(299)
        #expect(kid(await cache.key("a")) == "a")
        #expect(publisher.fetches.withLock { $0 } == 1)
        clock.advance(1)
        #expect(kid(await cache.key("a")) == "a")
        #expect(publisher.fetches.withLock { $0 } == 2)
    }

    @Test("An unknown kid fetches again at once, but at most once per refetch interval (made-up kids cost one fetch)")
    func unknownKeyID() async {
        publisher.keys.withLock { $0 = ["a": TestKeys.p256] }
        let cache = cache()
        #expect(kid(await cache.key("a")) == "a")
        clock.advance(10)
        publisher.keys.withLock { $0["b"] = TestKeys.p256b }  // the publisher rotates
        #expect(kid(await cache.key("b")) == "b")
        #expect(publisher.fetches.withLock { $0 } == 2)
        for n in 0..<20 { #expect(kid(await cache.key("forged-\(n)")) == "unknown") }
        #expect(publisher.fetches.withLock { $0 } == 2, "a made-up kid within the interval must not fetch")
        clock.advance(10)
        #expect(kid(await cache.key("forged")) == "unknown")
        #expect(publisher.fetches.withLock { $0 } == 3)
    }

    @Test("A failed fetch keeps the keys it had; before any success the lookup is unavailable, with the failure")
    func failures() async {
        publisher.keys.withLock { $0 = ["a": TestKeys.p256] }
        publisher.down.withLock { $0 = true }
        let cache = cache()
        #expect(kid(await cache.key("a")) == "unavailable")
        #expect(cache.lastFailure is Publisher.Down)
        clock.advance(10)
        publisher.down.withLock { $0 = false }
        #expect(kid(await cache.key("a")) == "a")
        #expect(cache.lastFailure == nil)
        clock.advance(400)  // stale, and the publisher is down: the stale key still verifies
        publisher.down.withLock { $0 = true }
        #expect(kid(await cache.key("a")) == "a")
        #expect(kid(await cache.key("b")) == "unknown")
        #expect(publisher.fetches.withLock { $0 } == 3)
    }

    @Test("Concurrent lookups that need a fetch share one")
    func singleFlight() async {
        publisher.keys.withLock { $0 = ["a": TestKeys.p256] }
        let (gate, open) = AsyncStream<Void>.makeStream()
        publisher.gate.withLock { $0 = gate }
        let cache = cache()
        let found = await withTaskGroup(of: String.self) { group in
            for _ in 0..<16 { group.addTask { kid(await cache.key("a")) } }
            // Every lookup is waiting on the one fetch (bounded wait), then the fetch may answer.
            for _ in 0..<200 where publisher.fetches.withLock({ $0 }) == 0 { try? await Task.sleep(for: .milliseconds(10)) }
            try? await Task.sleep(for: .milliseconds(50))
            open.yield()
            open.finish()
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(found == Array(repeating: "a", count: 16))
        #expect(publisher.fetches.withLock { $0 } == 1)
        #expect(cache.fetchAttempts == 1)
    }

    @Test("A body that is not a JWK Set is refused; members Latch cannot use are left out")
    func parse() throws {
        #expect(throws: JWKSCache.Unreadable.self) { try JWKSCache.parse(Array("[]".utf8)) }
        #expect(throws: JWKSCache.Unreadable.self) { try JWKSCache.parse([UInt8](repeating: 0x20, count: JWKSCache.maximumJWKSBytes + 1)) }
        let mixed = #"{"keys":[{"kty":"oct","kid":"h","k":"c2VjcmV0"},{"kty":"EC","crv":"P-256","kid":"x"}]}"#
        #expect(try JWKSCache.parse(Array(mixed.utf8)).isEmpty)
    }
}
