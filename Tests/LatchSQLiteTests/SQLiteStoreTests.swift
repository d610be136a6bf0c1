import Foundation
import LatchCore
import LatchJOSE
import LatchModel
@testable import LatchSQLite
import LatchTesting
import Testing

/// Opens a store in a fresh folder for the duration of `body`.
func withStore<T>(_ body: (SQLiteStore, TemporaryDirectory) async throws -> T) async throws -> T {
    let directory = TemporaryDirectory()
    let path = directory.path
    // Opened and closed off the cooperative pool (migrations commit; closing waits for the writer thread).
    let store = try await offPool { try SQLiteStore(directory: path) }
    let result: Result<T, any Error>
    do {
        result = .success(try await body(store, directory))
    } catch {
        result = .failure(error)
    }
    _ = try? await offPool { store.close() }
    directory.remove()
    return try result.get()
}

/// Opens one store per entry of `sealsAtCommit` on one fresh file for the duration of `body` — opened and closed off the
/// cooperative pool (opening commits the migrations; closing waits for the writer thread).
func withStores(sealsAtCommit: [Bool], _ body: ([SQLiteStore]) async throws -> Void) async throws {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let path = directory.path
    var stores: [SQLiteStore] = []
    for seals in sealsAtCommit { stores.append(try await offPool { try SQLiteStore(directory: path, sealsAtCommit: seals) }) }
    let opened = stores
    let outcome: Result<Void, any Error>
    do {
        try await body(opened)
        outcome = .success(())
    } catch {
        outcome = .failure(error)
    }
    _ = try? await offPool { for store in opened { store.close() } }
    try outcome.get()
}

@Suite("SQLite store")
struct SQLiteStoreTests {
    @Test("Store conformance (two connections to one file)", arguments: StoreConformance.checks)
    func conformance(_ check: StoreConformance.Check) async throws {
        // The audit checks are the sealer's (records stay unsealed until its pass): they run on stores that leave
        // sealing to it; SQLiteAuditSealingTests check sealing at insert.
        let sealsAtCommit = !check.name.hasPrefix("audit log:")
        // Opened and closed off the cooperative pool: 51 checks at once would otherwise block its threads on migrations.
        try await withStores(sealsAtCommit: [sealsAtCommit, sealsAtCommit]) { try await check.run($0[0], $0[1]) }
    }

    @Test("Declares no connection pool: its readers and one writer are not a pool the metrics report")
    func noPool() async throws {
        try await withStore { store, _ in #expect(store.connectionPool == nil) }
    }

    @Test("Upgrading a database of migrations 1–4 keeps users, keys and sessions, and their cascades (0005 rebuilds users)")
    func upgradeToPerSourceUsernames() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/latch.sqlite"
        do {
            let handle = try SQLiteHandle(path: path, create: true)
            try handle.execute("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;")
            try handle.execute("CREATE TABLE latch_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT;")
            for (index, migration) in Migrations.all.prefix(4).enumerated() {
                try handle.execute(migration.sql)
                try handle.run("INSERT INTO latch_migrations VALUES (?, ?, 0)", [.int(Int64(index + 1)), .text(migration.name)])
            }
            try handle.execute(
                """
                INSERT INTO users (id, username, kind, issuer, subject, claims, created_at) VALUES
                    ('u-1', 'alice', 'TEST', NULL, NULL, '{}', 1), ('u-2', 'bob', 'FSSO', 'acme', 'bob', '{"tier":"gold"}', 2);
                INSERT INTO device_keys VALUES ('u-1', 'dk', 'ES256', x'00', 1);
                """)
        }
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        #expect(try await store.user(username: "alice")?.id == "u-1")
        #expect(try await store.federatedUser(issuer: "acme", subject: "bob")?.claims == ["tier": "gold"])
        #expect(try await store.job { db in try db.query("SELECT source FROM users ORDER BY id").map { $0.text(0) } } == ["", "acme"])
        // The foreign keys of device_keys point at the rebuilt table: deleting the user removes the key.
        #expect(try await store.deleteUser(id: "u-1"))
        #expect(try await store.job { db in try db.query("SELECT count(*) FROM device_keys").first?.int(0) } == 0)
        // Latch's own "bob" can register beside acme's, now that names are per source.
        try await StoreConformance.register(store, StoreConformance.user("bob"))
        #expect(try await store.user(username: "bob")?.id == "u-bob")
    }

    @Test("Upgrading to 0015_admin_accounts: the built-in owner adm_root holds the existing tokens (owner, no expiry), test keys and signing certificates")
    func upgradeToAdminAccounts() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path + "/latch.sqlite"
        let before = try #require(Migrations.all.firstIndex { $0.name == "0015_admin_accounts" })
        do {
            let handle = try SQLiteHandle(path: path, create: true)
            try handle.execute("PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;")
            try handle.execute("CREATE TABLE latch_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT;")
            for (index, migration) in Migrations.all.prefix(before).enumerated() {
                try handle.execute(migration.sql)
                try handle.run("INSERT INTO latch_migrations VALUES (?, ?, 0)", [.int(Int64(index + 1)), .text(migration.name)])
            }
            try handle.execute(
                """
                INSERT INTO admin_tokens (id, name, hash, created_at) VALUES ('env', 'LATCH_ADMIN_TOKEN', x'01', 7), ('at_1', 'ci', x'02', 9);
                INSERT INTO clients (id, name, created_at) VALUES ('app', 'App', 1);
                INSERT INTO signing_certificates (client_id, sha256, owner, created_at) VALUES ('app', 'aa', 'at_1', 10), ('app', 'bb', 'at_gone', 11);
                """)
            try handle.run(
                "INSERT INTO test_keys (key_id, algorithm, public_key, created_at) VALUES ('register_key', 'RS256', ?, 8)",
                [.blob(TestKeys.rsa.publicKey.derRepresentation)])
        }
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        #expect(try await store.adminAccounts() == [AdminAccount.root(createdAt: 7)])
        let tokens = try await store.adminTokens()
        #expect(tokens.map(\.id) == ["env", "at_1"])
        #expect(tokens.allSatisfy { $0.accountID == AdminAccount.rootID && $0.role == .owner && $0.expiresAt == nil })
        #expect(try await store.testRegistrationKey(id: "register_key")?.owner == AdminAccount.rootID)
        #expect(try await store.signingCertificates().map(\.owner) == [AdminAccount.rootID, AdminAccount.rootID])
    }

    @Test("The writer and checkpoint threads carry their names where the system shows them (top -H, perf, /proc)")
    func threadNames() async throws {
        #if os(Linux)
        func names() -> Set<String> {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            return Set(tasks.compactMap { try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
                .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) })
        }
        try await withStore { _, _ in
            // The checkpoint thread names itself when it first runs: wait for that, at most 30 s.
            let deadline = ContinuousClock.now + .seconds(30)
            while !names().isSuperset(of: ["latch-db-writer", "latch-db-ckpt"]), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(names().isSuperset(of: ["latch-db-writer", "latch-db-ckpt"]), "\(names().sorted())")
        }
        #endif
    }

    @Test("A fresh database has no admin account until the first token is stored with the built-in owner")
    func freshAdminAccounts() async throws {
        try await withStore { store, _ in
            #expect(try await store.adminAccounts().isEmpty)
            let authenticator = AdminTokenGate(store: store, clock: LatchClock { Date(timeIntervalSince1970: 42) })
            _ = try await authenticator.bootstrap(configured: "a-configured-admin-token", random: .system)
            #expect(try await store.adminAccounts() == [AdminAccount.root(createdAt: 42)])
            #expect(try await authenticator.caller(of: "a-configured-admin-token") == AdminCaller(tokenID: "env", accountID: AdminAccount.rootID, role: .owner))
        }
    }

    @Test("A stored value this version cannot read is an unavailable store, never a default", arguments: [
        "UPDATE users SET kind = 'ALIEN'", "UPDATE users SET claims = 'not json'", "UPDATE device_keys SET public_key = x'00'",
    ])
    func unreadableValues(_ corruption: String) async throws {
        try await withStore { store, _ in
            try await StoreConformance.register(store, StoreConformance.user("alice"))
            _ = try await store.job { db in try db.run(corruption) }
            await #expect(throws: StoreUnavailableError.self) {
                _ = try await store.user(id: "u-alice")
                _ = try await store.deviceSignInKey(username: "alice", keyID: "dk")
            }
        }
    }

    @Test("The database and its WAL are readable by the owner only")
    func filePermissions() async throws {
        try await withStore { store, directory in
            _ = try await store.addClient(Client(id: "x", name: "x", createdAt: 0))
            for file in ["latch.sqlite", "latch.sqlite-wal"] {
                let attributes = try FileManager.default.attributesOfItem(atPath: directory.path + "/" + file)
                #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(file)")
            }
        }
    }

    @Test("Migration names are the shared list")
    func migrationNames() {
        #expect(SQLiteStore.migrationNames == SchemaMigrations.names)
    }

    @Test("Migrations apply once; reopening applies nothing and keeps data")
    func migrationsAndReopen() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(directory: directory.path)
        try await StoreConformance.register(store, StoreConformance.user("alice"))
        store.close()
        let reopened = try SQLiteStore(directory: directory.path)
        defer { reopened.close() }
        #expect(try await reopened.user(username: "alice")?.id == "u-alice")
    }

    @Test("A schema newer than the binary is refused")
    func newerSchemaRefused() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(directory: directory.path)
        _ = try await store.job { db in
            try db.run("INSERT INTO latch_migrations (version, name, applied_at) VALUES (99, 'future', 0)")
        }
        store.close()
        #expect(throws: MigrationError.self) { try SQLiteStore(directory: directory.path) }
    }

    @Test("Hot statements stay prepared: rebinding never re-prepares them (query planner stability)")
    func noReprepare() async throws {
        try await withStore { store, _ in
            let alice = StoreConformance.user("alice")
            try await StoreConformance.register(store, alice)
            for index in 0..<5 {
                try await StoreConformance.start(store, StoreConformance.session("s\(index)", user: alice))
                _ = try await StoreConformance.refresh(store, "s\(index)", 0, now: 1001)
                _ = try await store.consume(.jti("n\(index)", issuer: "latch:sign-in-nonce", until: 2000))
            }
            let counts = try await store.job { db in
                [SQLiteStore.sessionAndUser, "INSERT INTO used_jtis (issuer, jti, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING"].map(db.reprepareCount)
            }
            #expect(counts == [0, 0])
        }
    }

    @Test("Group commit: a failing job rolls back alone; the others in its batch commit")
    func groupCommitIsolation() async throws {
        try await withStore { store, _ in
            struct Boom: Error {}
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        do {
                            try await store.job { db in
                                try db.run("INSERT INTO clients (id, name, created_at) VALUES (?, 'x', 0)", [.text("c\(index)")])
                                if index % 4 == 0 { throw Boom() }
                            }
                        } catch is Boom {}
                    }
                }
                try await group.waitForAll()
            }
            let ids = try await store.clients().map(\.id)
            #expect(ids.count == 30)
            #expect(!ids.contains("c0") && ids.contains("c1"))
        }
    }

    @Test("A write after close fails as unavailable, never as success")
    func closedStore() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(directory: directory.path)
        store.close()
        await #expect(throws: StoreUnavailableError.self) { try await store.addClient(Client(id: "x", name: "x", createdAt: 0)) }
    }

    @Test("More concurrent reads than connections wait for one without blocking a thread; reads after close are unavailable")
    func readerPool() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.path + "/one-reader.sqlite", readers: 1)
        try await StoreConformance.register(store, StoreConformance.user("alice"))
        // 200 reads through one connection: each waits its turn as a suspended task.
        let found = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<200 { group.addTask { try await store.user(username: "alice") != nil } }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(found == 200)
        store.close()
        await #expect(throws: StoreUnavailableError.self) { _ = try await store.user(username: "alice") }
    }
}
