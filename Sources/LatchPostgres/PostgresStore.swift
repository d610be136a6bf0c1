import Foundation
import LatchCore
import LatchModel
import Logging
import Tracing
import NIOSSL
import PostgresNIO

/// Latch's scale-out store: several stateless replicas on one PostgreSQL database.
///
/// A unit of work is one transaction, sent once its body has stated its writes; single-use values are consumed by
/// one atomic statement (`INSERT … ON CONFLICT DO NOTHING RETURNING`, `DELETE … RETURNING`); a session is updated
/// by compare-and-set on its mutable columns, under its row lock when contended, so two replicas presenting the
/// same refresh token serialize on it. Deadlocks and serialization
/// failures are retried a bounded number of times; any other database failure, or an operation that does not
/// finish within `operationTimeout`, is `StoreUnavailableError` (503). Commits are synchronous (the server's
/// `synchronous_commit`, on by default): an answered request is durable.
public final class PostgresStore: Sendable {
    let client: PostgresClient
    let logger: Logger
    let operationTimeout: Duration
    /// Told of every unit of work's commit (its time) and every write the database refused to do.
    public let observers = StoreObservers()
    /// Operations holding or waiting for a pooled connection (`latch_store_pool_*`).
    let pool: PoolGauge
    /// Chains the audit records this store writes.
    public let auditChain = AuditChain()

    /// A store on `url` (`postgres://user:password@host:port/database[?sslmode=…&sslrootcert=…]`). Nothing is
    /// sent until ``run()`` runs; then ``prepare()`` checks the database and applies migrations.
    ///
    /// `sslmode` as libpq reads it: `disable` (default), `require` (TLS, certificate not checked), `verify-full`
    /// (TLS, certificate chain checked against the system roots or `sslrootcert`, and the host name).
    public init(
        url: String, poolSize: Int = 16, operationTimeout: Duration = .seconds(5), logger: Logger = Logger(label: "latch.postgres")
    ) throws {
        client = PostgresClient(configuration: try Self.configuration(url: url, poolSize: poolSize), backgroundLogger: logger)
        pool = PoolGauge(size: poolSize)
        self.logger = logger
        self.operationTimeout = operationTimeout
    }

    /// Runs the connection pool until the task is cancelled or a graceful shutdown begins (a ServiceLifecycle
    /// service's `run`). Every other call waits for it.
    public func run() async { await client.run() }

    /// Checks that the database answers (fast: within the operation timeout), then applies migrations (which may
    /// wait up to a minute for another replica's migration lock). Call it while ``run()`` runs.
    public func prepare() async throws {
        _ = try await query("connect") { client in try await client.query("SELECT 1") }
        let applied = try await withDeadline(.seconds(60)) { [client, logger] in
            do {
                return try await PostgresMigrations.apply(client, now: Int64(Date().timeIntervalSince1970), logger: logger)
            } catch {
                throw PostgresStore.unwrap(error)
            }
        }
        if !applied.isEmpty { logger.info("applied migrations", metadata: ["migrations": "\(applied)"]) }
    }

    /// Runs the pool around `body`, prepared: for commands and tests that use the store for a while, then stop.
    public static func withRunning<T: Sendable>(
        url: String, poolSize: Int = 16, operationTimeout: Duration = .seconds(5), logger: Logger = Logger(label: "latch.postgres"),
        _ body: @Sendable (PostgresStore) async throws -> T
    ) async throws -> T {
        let store = try PostgresStore(url: url, poolSize: poolSize, operationTimeout: operationTimeout, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await store.run() }
            defer { group.cancelAll() }
            try await store.prepare()
            return try await body(store)
        }
    }

    /// The migration names this store applies, in order.
    public static var migrationNames: [String] { PostgresMigrations.all.map(\.name) }

    static func configuration(url: String, poolSize: Int) throws -> PostgresClient.Configuration {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty
        else { throw LatchError.invalidInput("database.url must be postgres://user:password@host:port/database") }
        let database = String(components.path.drop { $0 == "/" })
        let parameters = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { _, last in last })
        let tls: PostgresClient.Configuration.TLS
        switch parameters["sslmode"] ?? "disable" {
        case "disable":
            tls = .disable
        case "require":
            var settings = TLSConfiguration.makeClientConfiguration()
            settings.certificateVerification = .none
            tls = .require(settings)
        case "verify-full":
            var settings = TLSConfiguration.makeClientConfiguration()
            settings.certificateVerification = .fullVerification
            if let rootCertificate = parameters["sslrootcert"] {
                guard let certificates = try? NIOSSLCertificate.fromPEMFile(rootCertificate), !certificates.isEmpty else {
                    throw LatchError.invalidInput("database.url: sslrootcert \(rootCertificate) is not a readable PEM certificate")
                }
                settings.trustRoots = .certificates(certificates)
            }
            tls = .require(settings)
        default:
            throw LatchError.invalidInput("database.url: sslmode must be disable, require or verify-full")
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: components.user?.removingPercentEncoding ?? "postgres",
            password: components.password?.removingPercentEncoding, database: database.isEmpty ? nil : database, tls: tls)
        configuration.options.maximumConnections = max(1, poolSize)
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = .seconds(3)
        return configuration
    }

    // MARK: Running operations

    /// Runs `body` with a deadline: a database that stops answering becomes a 503, not a hung request.
    ///
    /// The work runs in its own task and is *abandoned* (cancelled, not awaited) at the deadline: a call stuck on a
    /// dead connection must not hold the request. Its transaction then either commits or not, which is what a
    /// 503 means — the client retries, and single-use values and rotation make the retry safe.
    func withDeadline<T: Sendable>(_ deadline: Duration? = nil, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let limit = deadline ?? operationTimeout
        return try await withAbandoningDeadline(limit, timeoutError: { StoreUnavailableError("the database did not answer within \(limit)") }, body)
    }

    /// Classes of database error the store treats specially.
    enum Failure {
        case retryable, other
    }

    /// The error inside postgres-nio's transaction wrapper, if any.
    static func unwrap(_ error: any Error) -> any Error {
        if let wrapped = error as? PostgresTransactionError {
            return wrapped.closureError ?? wrapped.commitError ?? wrapped.beginError ?? error
        }
        return error
    }

    static func classify(_ error: any Error) -> Failure {
        guard let error = unwrap(error) as? PSQLError, let state = error.serverInfo?[.sqlState] else { return .other }
        switch state {
        case "40001", "40P01": return .retryable
        default: return .other
        }
    }

    /// Most attempts for a transaction that hits a deadlock or serialization failure.
    static let maximumAttempts = 4

    /// Runs a transaction: retried on deadlock / serialization failure (bounded); a deliberate rollback
    /// (``TransactionRollback``) reaches the caller as thrown; every other failure is `StoreUnavailableError`.
    func transaction<T: Sendable>(_ name: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        for attempt in 1...Self.maximumAttempts {
            do {
                return try await withDeadline { [client, logger, pool] in
                    try await pool.counting { try await client.withTransaction(logger: logger) { connection in try await body(connection) } }
                }
            } catch let error as StoreUnavailableError {
                throw error
            } catch {
                // A deliberate rollback carries its outcome to the caller unchanged.
                if let signal = Self.unwrap(error) as? any TransactionRollback { throw signal }
                let failure = Self.classify(error)
                if failure == .retryable, attempt < Self.maximumAttempts {
                    try? await Task.sleep(for: .milliseconds(5 * attempt))
                    continue
                }
                logger.error("\(name) failed", metadata: ["error": "\(String(reflecting: Self.unwrap(error)))"])
                throw StoreUnavailableError("\(name): \(Self.unwrap(error))")
            }
        }
        throw StoreUnavailableError("\(name): too many retries")
    }

    /// Runs `body` on one connection of the pool, outside an explicit transaction (each statement commits on its
    /// own), with the deadline and error handling of ``transaction(_:_:)``.
    func withConnection<T: Sendable>(_ name: String, _ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        do {
            return try await withDeadline { [client, pool] in try await pool.counting { try await client.withConnection { connection in try await body(connection) } } }
        } catch let error as StoreUnavailableError {
            throw error
        } catch let signal as any TransactionRollback {
            throw signal
        } catch {
            logger.error("\(name) failed", metadata: ["error": "\(String(reflecting: error))"])
            throw StoreUnavailableError("\(name): \(error)")
        }
    }

    /// Runs one query outside an explicit transaction (a single statement commits on its own).
    func query<T: Sendable>(_ name: String, _ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        try await LatchTracing.span("store.read", ofKind: .client) { span in
            span?.attributes["latch.operation"] = name
            return try await read(name, body)
        }
    }

    private func read<T: Sendable>(_ name: String, _ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        let started = ContinuousClock.now
        defer { observers.observer?.read(nanoseconds: (ContinuousClock.now - started).nanoseconds) }
        do {
            return try await withDeadline { [client, pool] in try await pool.counting { try await body(client) } }
        } catch let error as StoreUnavailableError {
            throw error
        } catch {
            logger.error("\(name) failed", metadata: ["error": "\(String(reflecting: error))"])
            throw StoreUnavailableError("\(name): \(error)")
        }
    }
}

extension PostgresStore: PooledStore {
    public func poolSample() -> PoolSample { pool.sample() }
}

/// Thrown inside a transaction to roll it back on purpose; `transaction` rethrows it as is.
protocol TransactionRollback: Error {}

extension PostgresRowSequence {
    /// Every row, decoded.
    func all<each Column: PostgresDecodable & Sendable>(_ type: (repeat each Column).Type) async throws -> [(repeat each Column)] {
        var rows: [(repeat each Column)] = []
        for try await row in self.decode(type) { rows.append(row) }
        return rows
    }

    /// The first row, decoded; the rest are drained.
    func first<each Column: PostgresDecodable & Sendable>(_ type: (repeat each Column).Type) async throws -> (repeat each Column)? {
        try await all(type).first
    }
}

extension PostgresConnection {
    /// Logger for individual statements: quiet (failures are logged once, by the operation).
    static let statementLogger = Logger(label: "latch.postgres.statement", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Runs one statement with bound parameters.
    @discardableResult
    func run(_ query: PostgresQuery) async throws -> PostgresRowSequence {
        try await self.query(query, logger: Self.statementLogger)
    }
}

extension PostgresStore: ObservableStore {
    /// Its connection pool.
    public var connectionPool: (any PooledStore)? { self }
}
