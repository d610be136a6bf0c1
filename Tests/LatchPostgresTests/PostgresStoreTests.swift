import Foundation
import LatchCore
@testable import LatchPostgres
import LatchTesting
import PostgresNIO
import Testing

@Suite("PostgreSQL store", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct PostgresStoreTests {
    @Test("Store conformance", arguments: StoreConformance.checks)
    func conformance(_ check: StoreConformance.Check) async throws {
        try await PostgresTestDatabase.withFreshStore { store, _ in try await check.run(store) }
    }

    @Test("Migration names are the shared list")
    func migrationNames() {
        #expect(PostgresStore.migrationNames == SchemaMigrations.names)
    }

    @Test("Eight replicas starting at once on an empty database migrate it exactly once")
    func concurrentMigration() async throws {
        try await PostgresTestDatabase.withFresh { url in
            let stores = try await withThrowingTaskGroup(of: PostgresStore.self) { group in
                for _ in 0..<8 { group.addTask { try await PostgresStore.connect(url: url, poolSize: 2) } }
                return try await group.reduce(into: [PostgresStore]()) { $0.append($1) }
            }
            let rows = try await stores[0].query("count") { client in
                try await client.query("SELECT count(*)::BIGINT FROM latch_migrations").first(Int64.self)
            }
            #expect(rows == Int64(SchemaMigrations.names.count))
            for store in stores { await store.shutdown() }
        }
    }

    @Test("A schema newer than the binary is refused")
    func newerSchemaRefused() async throws {
        try await PostgresTestDatabase.withFresh { url in
            let store = try await PostgresStore.connect(url: url, poolSize: 1)
            _ = try await store.query("future") { client in
                try await client.query("INSERT INTO latch_migrations (version, name, applied_at) VALUES (99, 'future', 0)")
            }
            await store.shutdown()
            await #expect(throws: MigrationError.self) { try await PostgresStore.connect(url: url, poolSize: 1) }
        }
    }

    @Test("An unreachable database is StoreUnavailableError within the deadline, not a hang")
    func unreachable() async throws {
        let started = Date()
        await #expect(throws: (any Error).self) {
            try await PostgresStore.connect(url: "postgres://latch@127.0.0.1:1/latch", poolSize: 1, operationTimeout: .seconds(2))
        }
        #expect(Date().timeIntervalSince(started) < 40)
    }

    @Test("TLS: require and verify-full (with the cluster's certificate as root) connect; verify-full without it is refused")
    func tls() async throws {
        let ca = try #require(ProcessInfo.processInfo.environment["LATCH_TEST_POSTGRES_CA"], "scripts/with-postgres.sh exports the cluster certificate")
        try await PostgresTestDatabase.withFresh { url in
            for query in ["sslmode=require", "sslmode=verify-full&sslrootcert=\(ca)"] {
                let store = try await PostgresStore.connect(url: url + "?" + query, poolSize: 1)
                #expect(try await store.clients().isEmpty)
                await store.shutdown()
            }
            await #expect(throws: (any Error).self) {
                try await PostgresStore.connect(url: url + "?sslmode=verify-full", poolSize: 1, operationTimeout: .seconds(3))
            }
        }
    }

    @Test(
        "Bad URLs are refused by name",
        arguments: ["mysql://x/y", "postgres:///nohost", "postgres://h/db?sslmode=prefer", "postgres://h/db?sslmode=verify-full&sslrootcert=/nope.pem"])
    func badURLs(url: String) {
        #expect(throws: LatchError.self) { try PostgresStore.configuration(url: url, poolSize: 1) }
    }
}
