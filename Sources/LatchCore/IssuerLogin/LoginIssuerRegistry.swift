import Foundation
import LatchJOSE
import LatchModel
import Logging

/// Fetches a login issuer's JWK Set (RFC 7517 §5). The deployment's implementation makes the HTTP call (bounded in
/// time and size, no redirects); tests may serve a real JWKS over loopback.
public protocol JWKSFetcher: Sendable {
    /// The body of `GET url`, or a thrown error.
    func fetchJWKS(_ url: String) async throws -> [UInt8]
}

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
///   make Latch hammer the issuer. A failed fetch keeps the keys it had.
public final class LoginIssuerRegistry: Sendable {
    struct JWKSEntry {
        /// The URL the keys came from: a re-added issuer with another URL starts afresh.
        var url: String?
        var keys: [String: PublicKey] = [:]
        var fetchedAt: Int64?
        var attemptedAt: Int64?
    }

    struct State {
        var issuers: [String: ResolvedLoginIssuer] = [:]
        var loadedAt: Int64?
        var jwks: [String: JWKSEntry] = [:]
    }

    let store: any IssuerLoginStore
    let fetcher: (any JWKSFetcher)?
    let clock: LatchClock
    let logger: Logger
    let state = Locked(State())
    /// Seconds a loaded issuer list is used before it is read again.
    public let snapshotLifetime: Int64 = 5
    /// Seconds a fetched JWKS is used before it is fetched again.
    public let jwksLifetime: Int64 = 300
    /// Least seconds between two fetches of one issuer's JWKS.
    public let jwksRefetchInterval: Int64 = 10
    /// Largest JWKS accepted, bytes, and most keys read from one.
    static let maximumJWKSBytes = 64 * 1024
    static let maximumJWKSKeys = 32

    public init(store: any IssuerLoginStore, fetcher: (any JWKSFetcher)?, clock: LatchClock, logger: Logger = Logger(label: "latch.issuer-login")) {
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
            state.jwks = state.jwks.filter { entry in entry.value.url != nil && resolved[entry.key]?.issuer.jwksURL == entry.value.url }
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
        let now = clock.seconds()
        let cached: (key: PublicKey?, fresh: Bool, mayFetch: Bool) = state.withLock { state in
            var entry = state.jwks[issuer.issuer.id] ?? JWKSEntry()
            if entry.url != url { entry = JWKSEntry(url: url) }
            let fresh = entry.fetchedAt.map { now - $0 < jwksLifetime } ?? false
            let mayFetch = entry.attemptedAt.map { now - $0 >= jwksRefetchInterval } ?? true
            return (entry.keys[kid], fresh, mayFetch)
        }
        if let key = cached.key, cached.fresh { return key }
        guard cached.mayFetch, let fetcher else { return cached.key }
        state.withLock { state in
            if state.jwks[issuer.issuer.id]?.url != url { state.jwks[issuer.issuer.id] = JWKSEntry(url: url) }
            state.jwks[issuer.issuer.id]?.attemptedAt = now
        }
        do {
            let body = try await fetcher.fetchJWKS(url)
            let keys = try Self.parseJWKS(body)
            state.withLock { state in
                state.jwks[issuer.issuer.id] = JWKSEntry(url: url, keys: keys, fetchedAt: now, attemptedAt: now)
            }
            logger.info("login issuer JWKS fetched", metadata: ["issuer": "\(issuer.issuer.id)", "keys": "\(keys.count)"])
            return keys[kid]
        } catch {
            logger.warning("login issuer JWKS fetch failed", metadata: ["issuer": "\(issuer.issuer.id)", "error": "\(error)"])
            return cached.key
        }
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
            return try PublicKey.signingKeys(ofJWKS: body, maximumBytes: maximumJWKSBytes, maximumKeys: maximumJWKSKeys)
        } catch {
            throw LatchError.invalidInput(error.detail)
        }
    }
}
