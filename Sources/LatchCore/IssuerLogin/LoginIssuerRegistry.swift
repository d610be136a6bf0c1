import Foundation
import LatchJOSE
import LatchModel
import Logging

/// A login issuer with its keys read: what a login checks tokens against.
public struct ResolvedLoginIssuer: Sendable {
    public var issuer: LoginIssuer
    /// Static keys by `kid` (empty when the issuer publishes a JWKS).
    public var keys: [String: PublicKey]
}

/// One static key of a login issuer as it is stored (`LoginIssuer.keysJSON`) and shown.
public struct LoginIssuerKeyForm: Codable, Sendable, Hashable {
    public var kid: String
    public var algorithm: String
    /// SPKI PEM.
    public var publicKey: String

    public init(kid: String, algorithm: String, publicKey: String) {
        self.kid = kid
        self.algorithm = algorithm
        self.publicKey = publicKey
    }
}

/// The login issuers and their keys, cached in memory: a login resolves an issuer and a key without a query.
///
/// - The issuer list is reloaded at once after an admin change on this replica, at most `snapshotLifetime` seconds
///   after one on another replica, and when a token names an issuer it does not know (at most once a second).
/// - A JWKS is fetched at first use, kept `jwksLifetime` seconds, and fetched again at once when a token names an
///   unknown `kid` — at most once every `jwksRefetchInterval` seconds per issuer, so tokens with made-up `kid`s cannot
///   make Latch hammer the issuer. A failed fetch keeps the keys it had. (One ``JWKSCache`` per issuer.)
public final class LoginIssuerRegistry: Sendable {
    struct State {
        var issuers: [String: ResolvedLoginIssuer] = [:]
        var loadedAt: Int64?
        /// Each JWKS issuer's keys, by issuer id; a re-added issuer with another URL starts afresh.
        var jwks: [String: JWKSCache] = [:]
    }

    let store: any IssuerLoginStore
    let fetcher: (any JWKSFetching)?
    let clock: LatchClock
    let logger: Logger
    let state = Locked(State())
    /// Seconds a loaded issuer list is used before it is read again.
    public let snapshotLifetime: Int64 = 5
    /// Seconds a fetched JWKS is used before it is fetched again.
    public let jwksLifetime: Int64 = 300
    /// Least seconds between two fetches of one issuer's JWKS.
    public let jwksRefetchInterval: Int64 = 10
    public init(store: any IssuerLoginStore, fetcher: (any JWKSFetching)?, clock: LatchClock, logger: Logger = Logger(label: "latch.issuer-login")) {
        self.store = store
        self.fetcher = fetcher
        self.clock = clock
        self.logger = logger
    }

    /// Reads the issuer list again (after an admin change).
    public func reload() async throws {
        let loaded = try await store.loginIssuers()
        let now = clock.seconds()
        var resolved: [String: ResolvedLoginIssuer] = [:]
        for issuer in loaded {
            resolved[issuer.id] = ResolvedLoginIssuer(issuer: issuer, keys: Self.staticKeys(issuer))
        }
        state.withLock { state in
            state.issuers = resolved
            state.loadedAt = now
            // Keys of a deleted issuer, or of one whose URL changed, are forgotten.
            state.jwks = state.jwks.filter { entry in resolved[entry.key]?.issuer.jwksURL == entry.value.url }
        }
    }

    /// The issuer named `id`, from the cache (reloaded when stale, or when `id` is unknown and the last load is a
    /// second old).
    public func issuer(_ id: String) async throws -> ResolvedLoginIssuer? {
        let now = clock.seconds()
        let (found, loadedAt) = state.withLock { ($0.issuers[id], $0.loadedAt) }
        let stale = loadedAt.map { now - $0 >= snapshotLifetime } ?? true
        if let found, !stale { return found }
        if found == nil, let loadedAt, !stale, now - loadedAt < 1 { return nil }
        try await reload()
        return state.withLock { $0.issuers[id] }
    }

    /// The key `kid` of `issuer`: a static key, or one from its JWKS (fetched when needed).
    public func key(_ kid: String, of issuer: ResolvedLoginIssuer) async -> PublicKey? {
        guard let url = issuer.issuer.jwksURL else { return issuer.keys[kid] }
        guard let fetcher else { return nil }
        let id = issuer.issuer.id
        let cache = state.withLock { state -> JWKSCache in
            if let cache = state.jwks[id], cache.url == url { return cache }
            let cache = JWKSCache(
                url: url, fetcher: fetcher, lifetime: jwksLifetime, refetchInterval: jwksRefetchInterval, clock: { [clock] in clock.seconds() },
                events: { [logger] event in
                    switch event {
                    case .fetched(_, let count): logger.info("login issuer JWKS fetched", metadata: ["issuer": "\(id)", "keys": "\(count)"])
                    case .failed(_, let error): logger.warning("login issuer JWKS fetch failed", metadata: ["issuer": "\(id)", "error": "\(error)"])
                    }
                })
            state.jwks[id] = cache
            return cache
        }
        guard case .key(let key) = await cache.key(kid) else { return nil }
        return key
    }

    /// The static keys of an issuer as stored; a key that no longer reads is left out (it was checked when added).
    static func staticKeys(_ issuer: LoginIssuer) -> [String: PublicKey] {
        guard let forms = try? JSONDecoder().decode([LoginIssuerKeyForm].self, from: Data(issuer.keysJSON.utf8)) else { return [:] }
        var keys: [String: PublicKey] = [:]
        for form in forms {
            guard let algorithm = JWSAlgorithm(rawValue: form.algorithm),
                let key = try? PublicKey(pemOrBase64DER: form.publicKey, algorithm: algorithm)
            else { continue }
            keys[form.kid] = key
        }
        return keys
    }

    /// The signing keys of a JWK Set: members with a `kid`, `use` absent or `sig`, of a supported type. A key whose `alg`
    /// does not match its type is left out.
    public static func parseJWKS(_ body: [UInt8]) throws -> [String: PublicKey] {
        do {
            return try JWKSCache.parse(body)
        } catch {
            throw LatchError.invalidInput(error.description)
        }
    }
}
