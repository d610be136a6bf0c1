import Foundation
import Hummingbird
import LatchCore
import LatchModel

/// Token buckets per client address: each address may make `perMinute` requests a minute to the guarded
/// endpoints, in bursts of up to `burst`. In memory, per replica; the table is bounded (the oldest entries are
/// dropped past `maximumClients`), so a flood of addresses cannot exhaust memory.
public final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    private let perSecond: Double
    private let burst: Double
    private let maximumClients: Int
    private let now: @Sendable () -> Double
    private let buckets = Locked<[String: Bucket]>([:])

    /// - Parameter perMinute: requests a minute per address; 0 turns limiting off.
    public init(perMinute: Int, burst: Int? = nil, maximumClients: Int = 100_000, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        perSecond = Double(perMinute) / 60
        self.burst = Double(burst ?? max(1, perMinute / 6))
        self.maximumClients = maximumClients
        self.now = now
    }

    /// Whether limiting is on.
    public var isEnabled: Bool { perSecond > 0 }

    /// Whether `client` has no token left (without taking one): nil when it has, else the seconds until it has.
    public func exhausted(_ client: String) -> Int? {
        guard isEnabled else { return nil }
        let time = now()
        return buckets.withLock { buckets in
            guard let bucket = buckets[client] else { return nil }
            let tokens = min(burst, bucket.tokens + (time - bucket.updated) * perSecond)
            return tokens >= 1 ? nil : Int(((1 - tokens) / perSecond).rounded(.up))
        }
    }

    /// Takes one token for `client`; nil when allowed, else the seconds until a token is available.
    public func acquire(_ client: String) -> Int? {
        guard isEnabled else { return nil }
        let time = now()
        return buckets.withLock { buckets in
            var bucket = buckets[client] ?? Bucket(tokens: burst, updated: time)
            bucket.tokens = min(burst, bucket.tokens + (time - bucket.updated) * perSecond)
            bucket.updated = time
            defer {
                if buckets[client] == nil, buckets.count >= maximumClients {
                    // Drop the entries that have been idle longest (a full bucket forgets nothing that matters).
                    let stale = buckets.sorted { $0.value.updated < $1.value.updated }.prefix(maximumClients / 10).map(\.key)
                    for key in stale { buckets[key] = nil }
                }
                buckets[client] = bucket
            }
            guard bucket.tokens >= 1 else { return Int(((1 - bucket.tokens) / perSecond).rounded(.up)) }
            bucket.tokens -= 1
            return nil
        }
    }
}

/// Applies a ``RateLimiter`` by client address; over the limit answers 429 `rate_limited` with `Retry-After`.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = LatchRequestContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let retryAfter = limiter.acquire(context.clientAddress) {
            return ErrorStatus.response(
                code: .rateLimited, message: "too many requests from this address; retry after \(retryAfter) s",
                extraHeaders: [.retryAfter: String(retryAfter)])
        }
        return try await next(request, context)
    }
}
