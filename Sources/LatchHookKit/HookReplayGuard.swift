import Foundation
import LatchModel

/// Remembers the requests a hook has accepted for as long as their signatures would still verify, so an identical
/// request replayed inside the replay window is refused.
///
/// An entry is kept until its signature's timestamp + `window` (after which ``HookSignature/verify(header:body:secret:now:tolerance:)``
/// refuses it as stale anyway; `window` must be at least the verifier's tolerance) and at least `window` from when
/// it was admitted; at most `capacity` entries are kept. When every slot holds a live entry the
/// guard fails closed: ``Admission/full`` (answer 503, and Latch retries later) rather than forgetting one.
///
/// Keyed by the matched signature and the `Idempotency-Key`: Latch's own retry of a step carries a new attempt
/// number (and so passes even when it is signed in the same second), while the same bytes sent again do not.
/// In-memory and per process: several replicas of a hook each keep their own.
public final class HookReplayGuard: Sendable {
    /// What ``admit(_:signedAt:now:)`` decided.
    public enum Admission: Sendable, Hashable {
        /// Not seen inside the window; remembered now.
        case accepted
        /// Seen already inside the window: refuse it (401).
        case replayed
        /// Every slot holds a live entry: refuse for now (503).
        case full
    }

    public let window: TimeInterval
    public let capacity: Int

    private struct State {
        var expiries: [String: Double] = [:]
        var nextSweep: Double = 0
    }

    private let state = Locked(State())

    /// - Parameters:
    ///   - window: how long past its signature's timestamp an entry is remembered: the verifier's tolerance.
    ///   - capacity: the most entries kept (at least 1).
    public init(window: TimeInterval = HookSignature.defaultTolerance, capacity: Int = 10_000) {
        self.window = max(0, window)
        self.capacity = max(1, capacity)
    }

    /// Admits a verified request once: keyed by its signature and, when given, its `Idempotency-Key`.
    public func admit(_ verified: HookSignature.Verified, idempotencyKey: String?, now: Date = Date()) -> Admission {
        admit("\(verified.signature) \(idempotencyKey ?? "")", signedAt: verified.timestamp, now: now)
    }

    /// Admits `key` once while it is live (until `max(signedAt, now)` + ``window``). Call it after the signature verified.
    public func admit(_ key: String, signedAt: Int64, now: Date = Date()) -> Admission {
        let now = now.timeIntervalSince1970
        // Until the signature goes stale, and at least `window` from now (a verifier with a wider tolerance).
        let expiry = max(Double(signedAt), now) + window
        return state.withLock { state in
            if let known = state.expiries[key], known >= now { return .replayed }
            if state.expiries.count >= capacity || now >= state.nextSweep {
                state.expiries = state.expiries.filter { $0.value >= now }
                state.nextSweep = now + max(1, min(window, 60))
            }
            guard state.expiries.count < capacity else { return .full }
            state.expiries[key] = expiry
            return .accepted
        }
    }

    /// The entries held now (expired ones included until the next sweep); never more than ``capacity``.
    public var count: Int { state.withLock { $0.expiries.count } }
}
