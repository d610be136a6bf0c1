/// The names of Latch's schema migrations, in order. Every store applies migrations with exactly these names
/// in this order (each in its own SQL dialect), so a deployment can move between backends and a newer schema
/// is recognised by any of them.
public enum SchemaMigrations {
    public static let names = ["0001_core"]
}

/// A store that owns connections or threads and must be shut down.
public protocol StoreLifecycle: Sendable {
    /// Finishes queued work and releases connections.
    func shutdown() async
}
