import AsyncHTTPClient
import LatchJOSE
import LatchModel
import Logging
import NIOCore
import NIOHTTP1

/// Fetches Latch's JWK Set (RFC 7517 §5). ``HTTPJWKSFetcher`` makes the HTTP call; tests may count or fail fetches.
///
/// A fetch must end (or throw) in bounded time: while one runs, lookups that need it wait for it.
public protocol JWKSFetching: Sendable {
    /// The body of `GET url`, or a thrown error (any answer but 200 is an error).
    func fetchJWKS(from url: String) async throws -> [UInt8]
}

/// Fetches a JWK Set over HTTP(S) with AsyncHTTPClient: `GET`, bounded in time and size, no redirects.
public struct HTTPJWKSFetcher: JWKSFetching {
    /// Why a fetch failed.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    let client: HTTPClient
    let timeout: TimeAmount
    let maximumBytes: Int

    /// - Parameters:
    ///   - client: the client to use; nil uses one of this library's that never follows redirects (it lives as long as
    ///     the process).
    ///   - timeout: the longest a fetch may take.
    ///   - maximumBytes: the largest body read.
    public init(client: HTTPClient? = nil, timeout: TimeAmount = .seconds(5), maximumBytes: Int = JWKSCache.maximumJWKSBytes) {
        self.client = client ?? .latchResourceServer
        self.timeout = timeout
        self.maximumBytes = maximumBytes
    }

    public func fetchJWKS(from url: String) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        request.headers.add(name: "Accept", value: "application/jwk-set+json, application/json")
        let response = try await client.execute(request, timeout: timeout)
        guard response.status.code == 200 else { throw Failure(description: "the JWKS URL answered HTTP \(response.status.code)") }
        return Array(try await response.body.collect(upTo: maximumBytes).readableBytesView)
    }
}

extension HTTPClient {
    /// This library's client for Latch's JWKS and introspection: it never follows redirects (a 3xx is a failure) and
    /// does not retry a refused connection until the deadline. One for the process; it lives as long as the process.
    static let latchResourceServer: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()
}

/// Latch's signing keys, cached in memory.
///
/// - The key set is fetched at first use and kept ``lifetime`` seconds.
/// - A token naming a `kid` not in the cache fetches the set again at once, but at most once every ``refetchInterval``
///   seconds, so tokens with made-up `kid`s cost Latch at most one fetch per interval.
/// - A failed fetch keeps the keys the cache had (and is retried after ``refetchInterval``).
/// - Concurrent lookups that need a fetch share one.
public final class JWKSCache: Sendable {
    /// What a lookup found.
    public enum Lookup: Sendable {
        /// The key.
        case key(PublicKey)
        /// The key set is known and has no such `kid`.
        case unknownKeyID
        /// No key set was ever fetched (Latch unreachable since the start).
        case unavailable
    }

    struct State {
        var keys: [String: PublicKey] = [:]
        var fetchedAt: Int64?
        var attemptedAt: Int64?
        var inFlight: Task<Void, Never>?
        var fetches = 0
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
    let logger: Logger
    let state = Locked(State())

    /// A cache of the keys at `url`; `clock` gives Unix seconds.
    public init(
        url: String, fetcher: any JWKSFetching, lifetime: Int64 = 300, refetchInterval: Int64 = 10, clock: @escaping @Sendable () -> Int64,
        logger: Logger = Logger(label: "latch.resource-server")
    ) {
        self.url = url
        self.fetcher = fetcher
        self.lifetime = max(0, lifetime)
        self.refetchInterval = max(0, refetchInterval)
        self.clock = clock
        self.logger = logger
    }

    /// Fetches the key set attempted so far (for tests and metrics).
    public var fetchAttempts: Int { state.withLock { $0.fetches } }

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
            if case .success(let keys) = result {
                state.keys = keys
                state.fetchedAt = now
            }
        }
        switch result {
        case .success(let keys): logger.debug("Latch JWKS fetched", metadata: ["url": "\(url)", "keys": "\(keys.count)"])
        case .failure(let error): logger.warning("Latch JWKS fetch failed; the cached keys stay in use", metadata: ["url": "\(url)", "error": "\(error)"])
        }
    }

    /// The signing keys of a JWK Set: members with a `kid`, `use` absent or `sig`, no private part, of a supported type
    /// and size. A key whose `alg` does not match its type is left out.
    public static func parse(_ body: [UInt8]) throws(HTTPJWKSFetcher.Failure) -> [String: PublicKey] {
        do {
            return try PublicKey.signingKeys(ofJWKS: body, maximumBytes: maximumJWKSBytes, maximumKeys: maximumJWKSKeys)
        } catch {
            throw HTTPJWKSFetcher.Failure(description: error.detail)
        }
    }
}
