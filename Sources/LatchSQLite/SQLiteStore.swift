import Foundation
import LatchCore
import Logging
import Tracing

/// Latch's embedded store: one SQLite file in WAL mode with `synchronous=FULL`.
///
/// Writes go through one writer thread that commits in groups (see `SQLiteExecutor`), so no cooperative-pool
/// thread ever waits for a lock, a commit or an fsync; reads check a connection out of a small pool, waiting
/// for one asynchronously when all are busy (see `SQLiteReaderPool`). Every acknowledged write has been
/// flushed to disk.
public final class SQLiteStore: Sendable {
    let writer: SQLiteExecutor
    let readers: SQLiteReaderPool
    let checkpointer: SQLiteCheckpointer
    let logger: Logger
    /// The database file.
    public let path: String
    /// Chains the audit records this store writes.
    public let auditChain: AuditChain
    /// Seals the records a batch writes as it inserts them (nil: the sealer links every record).
    let auditHead: SQLiteAuditHead?

    /// Opens (creating when needed) the database at `path` and applies migrations.
    ///
    /// - Parameters:
    ///   - readers: reader connections.
    ///   - maximumBatch: most writes committed together.
    ///   - sealsAtCommit: seal the audit records a group commit writes as it inserts them (``SQLiteAuditHead``);
    ///     otherwise only the sealer's passes link them (the shared conformance checks of the sealer use this).
    public init(
        path: String, readers: Int = 4, maximumBatch: Int = 256, sealsAtCommit: Bool = true, logger: Logger = Logger(label: "latch.sqlite")
    ) throws {
        self.path = path
        self.logger = logger
        let chain = AuditChain()
        auditChain = chain
        let auditHead = sealsAtCommit ? SQLiteAuditHead(chain: chain) : nil
        self.auditHead = auditHead
        let now = Int64(Date().timeIntervalSince1970)
        // Linux thread names hold 15 characters.
        writer = try SQLiteExecutor(maximumBatch: maximumBatch, name: "latch-db-writer", hooks: auditHead) {
            let handle = try SQLiteHandle(path: path, create: true)
            try handle.execute(
                """
                PRAGMA page_size = 1024;
                PRAGMA journal_mode = WAL;
                PRAGMA synchronous = FULL;
                PRAGMA foreign_keys = ON;
                PRAGMA busy_timeout = 5000;
                PRAGMA wal_autocheckpoint = 0;
                """)
            let applied = try Migrations.apply(on: handle, now: now)
            if !applied.isEmpty { logger.info("applied migrations", metadata: ["migrations": "\(applied)"]) }
            return handle
        }
        do {
            self.readers = try SQLiteReaderPool(count: max(1, readers)) {
                let handle = try SQLiteHandle(path: path, create: false)
                try handle.execute("PRAGMA busy_timeout = 5000; PRAGMA query_only = 1;")
                return handle
            }
        } catch {
            writer.shutdown()
            throw error
        }
        do {
            checkpointer = try SQLiteCheckpointer(path: path, interval: 0.1, logger: logger)
        } catch {
            writer.shutdown()
            self.readers.close()
            throw error
        }
    }

    /// Opens `latch.sqlite` inside `directory`, creating the directory (mode 0700) when needed.
    public convenience init(directory: String, sealsAtCommit: Bool = true, logger: Logger = Logger(label: "latch.sqlite")) throws {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = (directory as NSString).appendingPathComponent("latch.sqlite")
        // Created 0600 before SQLite opens it: its -wal and -shm files take the same mode.
        if !FileManager.default.fileExists(atPath: path) {
            _ = FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600])
        }
        try self.init(path: path, sealsAtCommit: sealsAtCommit, logger: logger)
    }

    /// Finishes queued work and closes every connection.
    public func close() {
        writer.shutdown()
        checkpointer.shutdown()
        readers.close()
    }

    /// Runs a job on the writer's connection, in the next group commit.
    func job<T>(_ body: @escaping (SQLiteHandle) throws -> T) async throws -> T {
        try await unavailableOnSQLiteError("write") { try await writer.run(body) }
    }

    /// Runs a read on a free reader connection (waiting for one asynchronously).
    func read<T>(_ body: (SQLiteHandle) throws -> T) async throws -> T {
        try await LatchTracing.span("store.read", ofKind: .client) { _ in
            guard let observer = observers.observer else { return try await unavailableOnSQLiteError("read") { try await readers.read(body) } }
            let started = ContinuousClock.now
            defer { observer.read(nanoseconds: (ContinuousClock.now - started).nanoseconds) }
            return try await unavailableOnSQLiteError("read") { try await readers.read(body) }
        }
    }

    /// A SQLite failure is the store being unavailable (503), logged with its detail.
    private func unavailableOnSQLiteError<T>(_ operation: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as SQLiteError {
            logger.error("\(operation) failed", metadata: ["error": "\(error)"])
            throw StoreUnavailableError(error.description)
        }
    }
}

extension SQLiteStore: UnitOfWork {
    /// A unit of work is one job of the writer: its body records the writes in the caller's task, and they run on the
    /// writer's thread, inside the job's savepoint; a refusal or a SQLite error rolls the savepoint back and fails
    /// this unit alone.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) -> T) async throws -> T {
        // The span covers the wait for the group commit that makes the unit durable.
        try await LatchTracing.span("store.write", ofKind: .client) { _ in
            // The body runs here and records the writes; the writer only runs them.
            let transaction = SQLiteTransaction(chain: auditChain, head: auditHead)
            let result = body(transaction)
            try await job { db in
                transaction.run(on: db)
                if let stop = transaction.stop { throw stop }
            }
            return result
        }
    }
}

extension SQLiteStore {
    /// The migration names this store applies, in order.
    public static var migrationNames: [String] { Migrations.all.map(\.name) }
}

extension SQLiteStore: AuditChainedStore {}

extension SQLiteStore: ObservableStore {
    /// Told of every group commit (its size and time) and every failed one.
    public var observers: StoreObservers { writer.observers }
    /// None: one writer thread and a fixed set of reader threads, reported as commit and read times.
    public var connectionPool: (any PooledStore)? { nil }
}
