import Synchronization

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
    private let current = Mutex<(any StoreObserver)?>(nil)

    public init() {}

    public func set(_ observer: (any StoreObserver)?) { current.withLock { $0 = observer } }

    public var observer: (any StoreObserver)? { current.withLock { $0 } }
}

/// A store that reports its commits.
public protocol ObservableStore {
    var observers: StoreObservers { get }
}
