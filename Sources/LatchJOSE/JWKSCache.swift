import LatchModel

/// Where a JWK Set (RFC 7517 §5) comes from: the body of `GET url`, or a thrown error (any answer but 200 is one).
///
/// A fetch must end (or throw) in bounded time: while one runs, lookups that need it wait for it.
public protocol JWKSFetching: Sendable {
    func fetchJWKS(from url: String) async throws -> [UInt8]
}

/// The signing keys published at one JWKS URL, cached in memory, for every verifier of signed tokens in Latch: the
/// resource-server library (Latch's keys), login issuers and upstream identity providers (the server), and the SDK's
/// ID-token check.
///
/// - The key set is fetched at first use and kept ``lifetime`` seconds.
/// - A token naming a `kid` not in the cache fetches the set again at once, but at most once every ``refetchInterval``
///   seconds, so tokens with made-up `kid`s cost the publisher at most one fetch per interval.
/// - A failed fetch keeps the keys the cache had (and is retried after ``refetchInterval``).
/// - Concurrent lookups that need a fetch share one.
public final class JWKSCache: Sendable {
    /// What a lookup found.
    public enum Lookup: Sendable {
        /// The key.
        case key(PublicKey)
        /// The key set is known and has no such `kid`.
        case unknownKeyID
        /// No key set was ever fetched (the publisher unreachable, or its answer unreadable, since the start);
        /// ``lastFailure`` says why.
        case unavailable
    }

    /// What happened to a fetch, for the owner's logs and metrics.
    public enum Event: Sendable {
        /// A fetch read this many keys.
        case fetched(url: String, keys: Int)
        /// A fetch failed; the cached keys (if any) stay in use.
        case failed(url: String, error: any Error)
    }

    /// A body that is not a JWK Set Latch reads (too large, not JSON, no `keys` array).
    public struct Unreadable: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    struct State {
        var keys: [String: PublicKey] = [:]
        var fetchedAt: Int64?
        var attemptedAt: Int64?
        var inFlight: Task<Void, Never>?
        var fetches = 0
        var lastFailure: (any Error)?
    }

    /// Largest JWK Set read, bytes, and most keys taken from one.
    public static let maximumJWKSBytes = 64 * 1024
    public static let maximumJWKSKeys = 32

    /// The key set's URL.
    public let url: String
    /// Seconds fetched keys are used before they are fetched again.
    public let lifetime: Int64
    /// Least seconds between two fetches.
    public let refetchInterval: Int64
    let fetcher: any JWKSFetching
    let clock: @Sendable () -> Int64
    let events: @Sendable (Event) -> Void
    let state = Locked(State())

    /// A cache of the keys at `url`; `clock` gives Unix seconds; `events` hears of every fetch.
    public init(
        url: String, fetcher: any JWKSFetching, lifetime: Int64 = 300, refetchInterval: Int64 = 10, clock: @escaping @Sendable () -> Int64,
        events: @escaping @Sendable (Event) -> Void = { _ in }
    ) {
        self.url = url
        self.fetcher = fetcher
        self.lifetime = max(0, lifetime)
        self.refetchInterval = max(0, refetchInterval)
        self.clock = clock
        self.events = events
    }

    /// Fetches attempted so far (for tests and metrics).
    public var fetchAttempts: Int { state.withLock { $0.fetches } }

    /// Why the last fetch failed; nil once one succeeded after it (or before any failed).
    public var lastFailure: (any Error)? { state.withLock { $0.lastFailure } }

    /// The key `kid`: from the cache when it is fresh, otherwise after a fetch (when one may be made now).
    public func key(_ kid: String) async -> Lookup {
        enum Step {
            case found(PublicKey)
            case wait(Task<Void, Never>)
            case done(Lookup)
        }
        var waited = false
        // One wait for a fetch (started here or by a concurrent lookup), then an answer from what the cache holds.
        for _ in 0..<2 {
            let now = clock()
            let step: Step = state.withLock { state in
                let fresh = state.fetchedAt.map { now - $0 < lifetime } ?? false
                if let key = state.keys[kid], fresh { return .found(key) }
                if !waited {
                    if let inFlight = state.inFlight { return .wait(inFlight) }
                    if state.attemptedAt.map({ now - $0 >= refetchInterval || now < $0 }) ?? true {
                        state.attemptedAt = now
                        state.fetches += 1
                        let task = Task { await self.refresh(at: now) }
                        state.inFlight = task
                        return .wait(task)
                    }
                }
                // No fetch now: the keys held, even stale (a failed fetch keeps them).
                if let key = state.keys[kid] { return .found(key) }
                return .done(state.fetchedAt == nil ? .unavailable : .unknownKeyID)
            }
            switch step {
            case .found(let key): return .key(key)
            case .done(let lookup): return lookup
            case .wait(let task):
                await task.value
                waited = true
            }
        }
        return state.withLock { state in
            if let key = state.keys[kid] { return .key(key) }
            return state.fetchedAt == nil ? .unavailable : .unknownKeyID
        }
    }

    /// One fetch: on success the keys replace the cached ones; on failure the cached ones stay.
    func refresh(at now: Int64) async {
        let result: Result<[String: PublicKey], any Error>
        do {
            result = .success(try Self.parse(try await fetcher.fetchJWKS(from: url)))
        } catch {
            result = .failure(error)
        }
        state.withLock { state in
            state.inFlight = nil
            switch result {
            case .success(let keys):
                state.keys = keys
                state.fetchedAt = now
                state.lastFailure = nil
            case .failure(let error):
                state.lastFailure = error
            }
        }
        switch result {
        case .success(let keys): events(.fetched(url: url, keys: keys.count))
        case .failure(let error): events(.failed(url: url, error: error))
        }
    }

    /// The signing keys of a JWK Set: members with a `kid`, `use` absent or `sig`, no private part, of a supported type
    /// and size. A key whose `alg` does not match its type is left out.
    public static func parse(_ body: [UInt8]) throws(Unreadable) -> [String: PublicKey] {
        do {
            return try PublicKey.signingKeys(ofJWKS: body, maximumBytes: maximumJWKSBytes, maximumKeys: maximumJWKSKeys)
        } catch {
            throw Unreadable(description: error.detail)
        }
    }
}
