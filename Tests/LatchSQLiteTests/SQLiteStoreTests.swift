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

func makeUser(_ name: String, now: Int64 = 1000) -> User {
    User(id: "u-\(name)", username: name, kind: .test, issuer: nil, subject: nil, claims: [:], createdAt: now)
}

func register(_ store: SQLiteStore, _ user: User, jti: String = UUID().uuidString) async throws {
    let outcome = try await store.register(
        NewRegistration(
            user: user, deviceKey: DeviceKey(userID: user.id, keyID: "dk", key: TestKeys.p256.publicKey, createdAt: user.createdAt),
            registrationID: nil, proofHash: Data([1]), consumes: .jti(jti, issuer: "t", until: 5000)))
    guard case .created = outcome else { throw LatchError(.serverError, "registration failed: \(outcome)") }
}

func startSession(_ store: SQLiteStore, user: User, sid: String, now: Int64 = 1000) async throws -> SignInOutcome {
    try await store.startSession(
        NewSignIn(
            session: Session(id: sid, userID: user.id, clientID: "app", authTime: now, amr: ["pop"], scope: "openid", createdAt: now, expiresAt: now + 3600),
            consumes: .jti(UUID().uuidString, issuer: "x", until: now + 600), updatedClaims: nil))
}

/// Presents generation `generation` of session `sid`; answers the outcome and, when a token was issued, its generation.
func refresh(_ store: SQLiteStore, _ sid: String, _ generation: Int64, now: Int64, client: String = "app") async throws -> (String, Int64?) {
    switch try await store.refresh(RefreshRequest(sessionID: sid, generation: generation, clientID: client, now: now, graceSeconds: 10)) {
    case .rotated(let session, _): ("rotated", session.generation)
    case .reissued(let session, _): ("reissued", session.generation)
    case .unknown: ("unknown", nil)
    case .inactive: ("inactive", nil)
    case .wrongClient: ("wrongClient", nil)
    case .reuseDetected: ("reuse", nil)
    }
}

@Suite("SQLite store")
struct SQLiteStoreTests {
    @Test("Store conformance", arguments: StoreConformance.checks)
    func conformance(_ check: StoreConformance.Check) async throws {
        try await withStore { store, _ in try await check.run(store) }
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
        try await register(store, makeUser("alice"))
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
        _ = try await store.write { db in
            try db.run("INSERT INTO latch_migrations (version, name, applied_at) VALUES (99, 'future', 0)")
        }
        store.close()
        #expect(throws: MigrationError.self) { try SQLiteStore(directory: directory.path) }
    }

    @Test("Hot statements stay prepared: rebinding never re-prepares them (query planner stability)")
    func noReprepare() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            try await register(store, alice)
            for index in 0..<5 {
                _ = try await startSession(store, user: alice, sid: "s\(index)")
                _ = try await refresh(store, "s\(index)", 0, now: 1001)
                try await store.insertNonce("n\(index)", userID: alice.id, expiresAt: 2000, maxOutstanding: 3)
            }
            let counts = try await store.write { db in
                [SQLiteStore.sessionAndUser, "INSERT INTO nonces (nonce, user_id, expires_at) VALUES (?, ?, ?)"].map(db.reprepareCount)
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
                            try await store.write { db in
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
}
