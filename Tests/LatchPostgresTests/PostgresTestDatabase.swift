import Foundation
import LatchCore
@testable import LatchPostgres
import Logging
import PostgresNIO
import Testing

/// Throwaway PostgreSQL databases for tests, on the cluster named by `LATCH_TEST_POSTGRES_URL`
/// (scripts/with-postgres.sh starts one). Without it these tests are skipped — and with
/// `LATCH_REQUIRE_POSTGRES=1` (CI) that skip is a failure.
enum PostgresTestDatabase {
    static let adminURL = ProcessInfo.processInfo.environment["LATCH_TEST_POSTGRES_URL"]
    static var isConfigured: Bool { adminURL != nil }
    static let skipReason: Comment = "LATCH_TEST_POSTGRES_URL is not set: PostgreSQL tests skipped (scripts/test.sh starts a throwaway cluster)"

    /// Creates an empty database, runs `body` with its URL, drops it.
    static func withFresh<T>(_ body: (String) async throws -> T) async throws -> T {
        let admin = try #require(adminURL)
        let name = "latch_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await adminQuery(admin, "CREATE DATABASE \(name)")
        var components = URLComponents(string: admin)!
        components.path = "/" + name
        do {
            let result = try await body(components.string!)
            try await adminQuery(admin, "DROP DATABASE \(name) WITH (FORCE)")
            return result
        } catch {
            try? await adminQuery(admin, "DROP DATABASE \(name) WITH (FORCE)")
            throw error
        }
    }

    /// Runs two stores — two replicas, each with its own pool — on one fresh database for `body`. Races queue dozens
    /// of operations on one row lock while every other suite runs too: the operation timeout is 30 s (not the
    /// deployment's 5 s), so a loaded 2-core CI machine tests the invariants, not its speed (a 5 s timeout failed
    /// once here under the full suite).
    static func withFreshReplicas<T: Sendable>(_ body: @Sendable (PostgresStore, PostgresStore) async throws -> T) async throws -> T {
        try await withFresh { url in
            try await PostgresStore.withRunning(url: url, poolSize: 8, operationTimeout: .seconds(30)) { store in
                try await PostgresStore.withRunning(url: url, poolSize: 8, operationTimeout: .seconds(30)) { replica in
                    try await body(store, replica)
                }
            }
        }
    }

    /// Runs `body` while a transaction on the database at `url` holds a transaction id (it wrote nothing; it asked for
    /// its id), then commits it.
    static func holdingTransaction(on url: String, _ body: () async throws -> Void) async throws {
        let client = PostgresClient(configuration: try PostgresStore.configuration(url: url, poolSize: 1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            try await client.withConnection { connection in
                try await connection.query("BEGIN", logger: logger)
                _ = try await connection.query("SELECT pg_current_xact_id()", logger: logger)
                try await body()
                try await connection.query("COMMIT", logger: logger)
            }
            group.cancelAll()
        }
    }

    private static let logger = Logger(label: "test-postgres")

    /// Runs one statement as the admin user.
    static func adminQuery(_ url: String, _ sql: String) async throws {
        let client = PostgresClient(configuration: try PostgresStore.configuration(url: url, poolSize: 1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            try await client.query(PostgresQuery(unsafeSQL: sql))
            group.cancelAll()
        }
    }
}

@Suite("PostgreSQL availability")
struct PostgresAvailabilityTests {
    @Test("When CI requires PostgreSQL, it is configured (a skipped PostgreSQL suite must not pass CI)")
    func requiredWhenAsked() {
        if ProcessInfo.processInfo.environment["LATCH_REQUIRE_POSTGRES"] == "1" {
            #expect(PostgresTestDatabase.isConfigured, "LATCH_REQUIRE_POSTGRES=1 but LATCH_TEST_POSTGRES_URL is not set")
        }
    }
}
