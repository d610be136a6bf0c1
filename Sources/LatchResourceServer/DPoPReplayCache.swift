import Crypto
import LatchModel

/// The DPoP proof `jti`s seen recently (RFC 9449 §11.1), so that a proof is accepted once.
///
/// Each `jti` is remembered until the proof could no longer be accepted anyway (its `iat` + the accepted age + the
/// clock skew: ``LatchJOSE/DPoP/Proof/rememberUntil``). Memory is bounded: at most ``capacity`` entries of 16 bytes of
/// hash plus the expiry; expired entries are dropped oldest-expiry first as new ones arrive (a min-heap, so dropping
/// costs O(log n) per entry and never a scan). When every entry is still live the cache is **full** and refuses —
/// failing closed, since forgetting a live `jti` would let its proof be replayed.
public final class DPoPReplayCache: Sendable {
    /// What ``admit(jti:until:now:)`` decided.
    public enum Admission: Sendable, Hashable {
        /// Not seen while remembered; remembered now.
        case accepted
        /// Seen already: refuse the proof.
        case replayed
        /// Every slot holds a live entry: refuse for now (503).
        case full
    }

    /// 16 bytes of SHA-256 of a `jti`: fixed size whatever the `jti`'s length, and no allocation per entry.
    struct Key: Hashable {
        let high: UInt64
        let low: UInt64

        init(_ jti: String) {
            var hasher = SHA256()
            var jti = jti
            jti.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            let digest = hasher.finalize()
            (high, low) = digest.withUnsafeBytes { bytes in
                (bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            }
        }
    }

    struct Entry {
        var until: Int64
        var key: Key
    }

    struct State {
        var expiries: [Key: Int64] = [:]
        /// Min-heap on `until`: the entry to forget next at the root.
        var heap: [Entry] = []
    }

    /// Most entries held at once.
    public let capacity: Int
    let state: Locked<State>

    /// A cache of at most `capacity` (≥ 1) entries.
    public init(capacity: Int = 500_000) {
        self.capacity = max(1, capacity)
        state = Locked(State())
    }

    /// Entries held now (expired ones included until an admission drops them).
    public var count: Int { state.withLock { $0.expiries.count } }

    /// Admits `jti` once: remembered until `until` (Unix seconds); `now` is the verifier's clock.
    public func admit(jti: String, until: Int64, now: Int64) -> Admission {
        let key = Key(jti)
        return state.withLock { state in
            // Forget what expired: each pass removes one entry, so this runs at most `heap.count` times.
            while let root = state.heap.first, root.until <= now {
                Self.popRoot(&state.heap)
                if state.expiries[root.key] == root.until { state.expiries[root.key] = nil }
            }
            if let known = state.expiries[key], known > now { return .replayed }
            guard state.expiries.count < capacity else { return .full }
            state.expiries[key] = until
            Self.push(Entry(until: until, key: key), onto: &state.heap)
            return .accepted
        }
    }

    static func push(_ entry: Entry, onto heap: inout [Entry]) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].until < heap[parent].until else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    static func popRoot(_ heap: inout [Entry]) {
        guard let last = heap.popLast() else { return }
        guard !heap.isEmpty else { return }
        heap[0] = last
        var parent = 0
        // The index at least doubles each pass: at most log2(count) passes.
        while 2 * parent + 1 < heap.count {
            let left = 2 * parent + 1
            let right = left + 1
            let smaller = right < heap.count && heap[right].until < heap[left].until ? right : left
            guard heap[smaller].until < heap[parent].until else { break }
            heap.swapAt(smaller, parent)
            parent = smaller
        }
    }
}
