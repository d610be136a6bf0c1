import Foundation
import LatchCore
import LatchJOSE
import LatchModel
@testable import LatchPostgres
import LatchTesting
import PostgresNIO
import Testing

@Suite("PostgreSQL store", .enabled(if: PostgresTestDatabase.isConfigured, PostgresTestDatabase.skipReason))
struct PostgresStoreTests {
    // One check at a time: each makes a database and migrates it, and 51 at once beside the rest of the suite starved
    // the cluster on 2 cores (other PostgreSQL tests then waited over 60 s for an answer).
    @Test("Store conformance (two replicas on one database)", .serialized, arguments: StoreConformance.checks)
    func conformance(_ check: StoreConformance.Check) async throws {
        try await PostgresTestDatabase.withFreshReplicas { store, replica in try await check.run(store, replica) }
    }

    @Test("Declares its connection pool, whose size and use the metrics report")
    func declaresPool() async throws {
        try await PostgresTestDatabase.withFreshReplicas { store, _ in
            let sample = try #require(store.connectionPool).poolSample()
            #expect(sample.size >= 1 && sample.inUse == 0 && sample.waiting == 0, "\(sample)")
        }
    }

    @Test("A stored value this version cannot read is an unavailable store, never a default", arguments: [
        "UPDATE users SET kind = 'ALIEN'", "UPDATE users SET claims = 'not json'", "UPDATE device_keys SET public_key = '\\x00'",
    ])
    func unreadableValues(_ corruption: String) async throws {
        try await PostgresTestDatabase.withFreshReplicas { store, _ in
            try await StoreConformance.register(store, StoreConformance.user("alice"))
            _ = try await store.query("corrupt") { client in try await client.query(PostgresQuery(unsafeSQL: corruption)) }
            await #expect(throws: StoreUnavailableError.self) {
                _ = try await store.user(id: "u-alice")
                _ = try await store.deviceSignInKey(username: "alice", keyID: "dk")
            }
        }
    }

    @Test("A contended session takes its row lock after losing the optimistic race; every decision still applies once")
    func contendedSession() async throws {
        try await PostgresTestDatabase.withFreshReplicas { store, replica in
            let alice = StoreConformance.user("alice")
            try await StoreConformance.register(store, alice)
            try await StoreConformance.start(store, StoreConformance.session("s1", user: alice))
            // 60 increments of the generation from two replicas: each decision sees the previous one's result.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<60 {
                    group.addTask {
                        _ = try await (index.isMultiple(of: 2) ? store : replica).updateSession(id: "s1") { session, _ in
                            var next = session
                            next.generation += 1
                            return SessionUpdate(session: next, result: ())
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await store.session(id: "s1")?.generation == 60)
        }
    }

    @Test("Migration names are the shared list")
    func migrationNames() {
        #expect(PostgresStore.migrationNames == SchemaMigrations.names)
    }

    @Test("Eight replicas starting at once on an empty database migrate it exactly once")
    func concurrentMigration() async throws {
        try await PostgresTestDatabase.withFresh { url in
            try await withThrowingTaskGroup(of: Void.self) { group in
                // A generous deadline: this is about migrating once, and a loaded CI machine (browser walkthroughs in
                // parallel) once took over 5 s to connect eight replicas' first connections, and another over 5 s to
                // answer the count below.
                for _ in 0..<8 {
                    group.addTask { try await PostgresStore.withRunning(url: url, poolSize: 2, operationTimeout: .seconds(60)) { _ in } }
                }
                try await group.waitForAll()
            }
            let rows = try await PostgresStore.withRunning(url: url, poolSize: 1, operationTimeout: .seconds(60)) { store in
                try await store.query("count") { client in
                    try await client.query("SELECT count(*)::BIGINT FROM latch_migrations").first(Int64.self)
                }
            }
            #expect(rows == Int64(SchemaMigrations.names.count))
        }
    }

    @Test("Upgrading to 0015_admin_accounts: the built-in owner adm_root holds the existing tokens (owner, no expiry), test keys and signing certificates")
    func upgradeToAdminAccounts() async throws {
        try await PostgresTestDatabase.withFresh { url in
            let before = try #require(PostgresMigrations.all.firstIndex { $0.name == "0015_admin_accounts" })
            let client = PostgresClient(configuration: try PostgresStore.configuration(url: url, poolSize: 1))
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                try await client.query("CREATE TABLE latch_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)")
                for (index, migration) in PostgresMigrations.all.prefix(before).enumerated() {
                    for statement in migration.sql { try await client.query(PostgresQuery(unsafeSQL: statement)) }
                    try await client.query("INSERT INTO latch_migrations VALUES (\(index + 1), \(migration.name), 0)")
                }
                for statement in [
                    "INSERT INTO admin_tokens (id, name, hash, created_at) VALUES ('env', 'LATCH_ADMIN_TOKEN', '\\x01', 7), ('at_1', 'ci', '\\x02', 9)",
                    "INSERT INTO clients (id, name, created_at) VALUES ('app', 'App', 1)",
                    "INSERT INTO signing_certificates (client_id, sha256, owner, created_at) VALUES ('app', 'aa', 'at_1', 10), ('app', 'bb', 'at_gone', 11)",
                ] {
                    try await client.query(PostgresQuery(unsafeSQL: statement))
                }
                let der = TestKeys.rsa.publicKey.derRepresentation
                try await client.query(try "INSERT INTO test_keys (key_id, algorithm, public_key, created_at) VALUES ('register_key', 'RS256', \(der), 8)")
                group.cancelAll()
            }
            try await PostgresStore.withRunning(url: url, poolSize: 1) { store in
                #expect(try await store.adminAccounts() == [AdminAccount.root(createdAt: 7)])
                let tokens = try await store.adminTokens()
                #expect(tokens.map(\.id) == ["env", "at_1"])
                #expect(tokens.allSatisfy { $0.accountID == AdminAccount.rootID && $0.role == .owner && $0.expiresAt == nil })
                #expect(try await store.testRegistrationKey(id: "register_key")?.owner == AdminAccount.rootID)
                #expect(try await store.signingCertificates().map(\.owner) == [AdminAccount.rootID, AdminAccount.rootID])
            }
        }
    }

    @Test("Sealing waits for a running transaction of its own database, never for one of another database on the cluster")
    func sealingBoundIsPerDatabase() async throws {
        let admin = try #require(PostgresTestDatabase.adminURL)
        try await PostgresTestDatabase.withFresh { url in
            try await PostgresStore.withRunning(url: url, poolSize: 2, operationTimeout: .seconds(30)) { store in
                @Sendable func event(_ id: String) -> SecurityEvent { SecurityEvent(id: id, at: 5, kind: .userDeleted, actor: "system") }
                // A transaction holding an id on another database (`postgres`): the record is sealed all the same.
                try await PostgresTestDatabase.holdingTransaction(on: admin) {
                    try await store.record(event("e1"))
                    #expect(try await StoreConformance.sealAll(store) == 1)
                }
                // One on this database, begun first: the record written after it waits until it ends, then is sealed.
                try await PostgresTestDatabase.holdingTransaction(on: url) {
                    try await store.record(event("e2"))
                    for _ in 0..<3 { #expect(try await store.sealAudit() ?? 0 == 0) }
                    #expect(try await store.unsealedAudit(after: 0, limit: 10).map(\.event.id) == ["e2"])
                }
                #expect(try await StoreConformance.sealAll(store) == 1)
                #expect(try await store.auditChain(after: 0, limit: 10).map(\.event.id) == ["e1", "e2"])
            }
        }
    }

    @Test("A schema newer than the binary is refused")
    func newerSchemaRefused() async throws {
        try await PostgresTestDatabase.withFresh { url in
            // 60 s operation timeouts, not 5: the migrations under the whole suite on 2 cores once took longer.
            try await PostgresStore.withRunning(url: url, poolSize: 1, operationTimeout: .seconds(60)) { store in
                _ = try await store.query("future") { client in
                    try await client.query("INSERT INTO latch_migrations (version, name, applied_at) VALUES (99, 'future', 0)")
                }
            }
            await #expect(throws: MigrationError.self) {
                try await PostgresStore.withRunning(url: url, poolSize: 1, operationTimeout: .seconds(60)) { _ in }
            }
        }
    }

    @Test("An unreachable database is StoreUnavailableError within the deadline, not a hang")
    func unreachable() async throws {
        let started = Date()
        await #expect(throws: (any Error).self) {
            try await PostgresStore.withRunning(url: "postgres://latch@127.0.0.1:1/latch", poolSize: 1, operationTimeout: .seconds(2)) { _ in }
        }
        // Alone it fails after the 2 s operation timeout; under the whole suite on 2 cores it once took 44 s. The bound
        // tells a refusal from a hang, not how fast the refusal is.
        #expect(Date().timeIntervalSince(started) < 120)
    }

    @Test("TLS: require and verify-full (with the cluster's certificate as root) connect; verify-full without it is refused")
    func tls() async throws {
        let ca = try #require(ProcessInfo.processInfo.environment["LATCH_TEST_POSTGRES_CA"], "scripts/with-postgres.sh exports the cluster certificate")
        try await PostgresTestDatabase.withFresh { url in
            for query in ["sslmode=require", "sslmode=verify-full&sslrootcert=\(ca)"] {
                // 60 s, not the deployment's 5 s: a TLS handshake and the migrations under the whole suite on 2 cores once
                // took longer than 5 s; this tests the modes, not their speed.
                let clients = try await PostgresStore.withRunning(url: url + "?" + query, poolSize: 1, operationTimeout: .seconds(60)) { store in
                    try await store.clients()
                }
                #expect(clients.isEmpty)
            }
            await #expect(throws: (any Error).self) {
                try await PostgresStore.withRunning(url: url + "?sslmode=verify-full", poolSize: 1, operationTimeout: .seconds(3)) { _ in }
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
