import LatchModel

/// What a store reports about its own work, for metrics. Called on store threads (SQLite's writer) or tasks: it must
/// be quick and must not block.
public protocol StoreObserver: Sendable {
    /// A durable commit of `units` units of work — SQLite: one group commit; PostgreSQL: one unit's transaction —
    /// that took `nanoseconds` from its first statement to the commit's return.
    func committed(units: Int, nanoseconds: Int64)
    /// The store could not do `operation` (`commit`, `write`): it answered ``StoreUnavailableError``.
    func failed(_ operation: String)
    /// A read took `nanoseconds`, waiting for a connection included (SQLite: a reader of the pool; PostgreSQL: a
    /// pooled connection).
    func read(nanoseconds: Int64)
}

extension StoreObserver {
    public func read(nanoseconds: Int64) {}
}

extension Duration {
    /// Whole nanoseconds, for observers.
    public var nanoseconds: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}

/// The observer a store reports to, set once the deployment is assembled (the store opens before it).
public final class StoreObservers: Sendable {
    private let current = Locked<(any StoreObserver)?>(nil)

    public init() {}

    public func set(_ observer: (any StoreObserver)?) { current.withLock { $0 = observer } }

    public var observer: (any StoreObserver)? { current.withLock { $0 } }
}

/// A store that reports its commits — every store does: it is part of ``LatchStore``, so a deployment's metrics never
/// depend on a cast.
public protocol ObservableStore {
    var observers: StoreObservers { get }
    /// The connection pool whose use the store reports (PostgreSQL), or nil for a store without one.
    var connectionPool: (any PooledStore)? { get }
}

/// A connection pool's use at one moment, and its busiest moment since the last sample.
public struct PoolSample: Sendable, Hashable {
    /// The most connections the pool opens.
    public var size: Int
    /// Operations holding a connection now.
    public var inUse: Int
    /// Operations waiting for one now.
    public var waiting: Int
    /// The most operations holding or waiting for a connection at once since the previous sample.
    public var peak: Int

    public init(size: Int, inUse: Int, waiting: Int, peak: Int) {
        self.size = size
        self.inUse = inUse
        self.waiting = waiting
        self.peak = peak
    }
}

/// A store with a connection pool that reports its use (PostgreSQL).
public protocol PooledStore: Sendable {
    /// The pool's use now; the peak restarts from the current use.
    func poolSample() -> PoolSample
}

/// Counts operations holding or waiting for a pooled connection, each of which leases one connection at a time —
/// so the connections in use are `min(operations, size)` and the rest wait.
public final class PoolGauge: Sendable {
    public let size: Int
    private let state = Locked<(current: Int, peak: Int)>((0, 0))

    public init(size: Int) { self.size = max(1, size) }

    /// Runs `body` counted as one operation.
    public func counting<T>(_ body: () async throws -> T) async rethrows -> T {
        state.withLock { state in
            state.current += 1
            state.peak = max(state.peak, state.current)
        }
        defer { state.withLock { $0.current -= 1 } }
        return try await body()
    }

    public func sample() -> PoolSample {
        state.withLock { state in
            let sample = PoolSample(size: size, inUse: min(state.current, size), waiting: max(0, state.current - size), peak: state.peak)
            state.peak = state.current
            return sample
        }
    }
}
