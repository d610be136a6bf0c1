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
    let store = try SQLiteStore(directory: directory.path)
    defer {
        store.close()
        directory.remove()
    }
    return try await body(store, directory)
}

@Suite("SQLite store")
struct SQLiteStoreTests {
    @Test("Store conformance (two connections to one file)", arguments: StoreConformance.checks)
    func conformance(_ check: StoreConformance.Check) async throws {
        try await withStore { store, directory in
            let replica = try SQLiteStore(directory: directory.path)
            defer { replica.close() }
            try await check.run(store, replica)
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
