import LatchCore
import LatchPostgres
import LatchSQLite
import Logging
import ServiceLifecycle

/// The store a configuration names — PostgreSQL for `database.url`, else SQLite in the data folder — with the
/// service that keeps it open while Latch runs.
public struct OpenedStore: Sendable {
    public let store: any LatchStore
    /// Runs for as long as the store is used: PostgreSQL's connection pool; for SQLite, the close at shutdown.
    let service: any Service
    /// Readies the store once its service runs (PostgreSQL: reachability check and migrations).
    let prepare: @Sendable () async throws -> Void

    /// Opens the store. SQLite is opened (and migrated) at once; PostgreSQL only parses its URL here.
    public static func open(_ configuration: LatchConfiguration, logger: Logger) throws -> OpenedStore {
        if let url = configuration.databaseURL {
            let store = try PostgresStore(
                url: url, poolSize: configuration.databasePoolSize, operationTimeout: .seconds(configuration.databaseTimeout), logger: logger)
            return OpenedStore(store: store, service: PostgresPool(store: store), prepare: { try await store.prepare() })
        }
        let store = try SQLiteStore(directory: configuration.dataDirectory, logger: logger)
        return OpenedStore(store: store, service: SQLiteCloser(store: store), prepare: {})
    }

    /// Runs the store around `body` (for commands that use it briefly, such as `latch keys`).
    public func whileRunning<T: Sendable>(_ body: @Sendable (any LatchStore) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [service] in try await service.run() }
            defer { group.cancelAll() }
            try await prepare()
            return try await body(store)
        }
    }
}

/// PostgreSQL's connection pool as a service.
struct PostgresPool: Service {
    let store: PostgresStore
    func run() async throws { await store.run() }
}

/// Closes the SQLite store at shutdown, after the services that use it have stopped (a service group stops its
/// services in reverse order).
struct SQLiteCloser: Service {
    let store: SQLiteStore
    func run() async throws {
        try? await gracefulShutdown()
        store.close()
    }
}
