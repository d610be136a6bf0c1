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

    @Test("Registration: username and federated identity are unique; the jti is single-use")
    func registrationUniqueness() async throws {
        try await withStore { store, _ in
            try await register(store, makeUser("alice"), jti: "j1")
            let again = try await store.register(
                NewRegistration(user: User(id: "u-2", username: "alice", kind: .test, issuer: nil, subject: nil, claims: [:], createdAt: 1), deviceKey: nil, registrationID: nil, proofHash: Data(), consumes: .jti("j2", issuer: "t", until: 9)))
            guard case .alreadyRegistered = again else { Issue.record("expected alreadyRegistered, got \(again)"); return }
            let replay = try await store.register(
                NewRegistration(user: makeUser("bob"), deviceKey: nil, registrationID: nil, proofHash: Data(), consumes: .jti("j1", issuer: "t", until: 9)))
            guard case .replayed = replay else { Issue.record("expected replayed, got \(replay)"); return }
            // Nothing of the refused registrations was written.
            #expect(try await store.user(username: "bob") == nil)
            #expect(try await store.user(id: "u-2") == nil)
        }
    }

    @Test("Rotation: the live token rotates once; the old one within grace reissues; later it revokes the family")
    func rotation() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            try await register(store, alice)
            #expect(try await startSession(store, user: alice, sid: "s1") == .started)
            #expect(try await refresh(store, "s1", 0, now: 1001) == ("rotated", 1))
            // 0 again within grace while 1 is unused: a fresh successor (2); 1 is dead.
            #expect(try await refresh(store, "s1", 0, now: 1005) == ("reissued", 2))
            // 1 is dead: presenting it is reuse and revokes the family.
            #expect(try await refresh(store, "s1", 1, now: 1006) == ("reuse", nil))
            // The revocation committed even though that request failed.
            #expect(try await store.session(id: "s1")?.revokedAt == 1006)
            #expect(try await refresh(store, "s1", 2, now: 1007) == ("inactive", nil))
        }
    }

    @Test("Rotation: a retry after its successor was used, or after the grace window, is reuse")
    func reuseAfterSuccessorUsedOrGrace() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            try await register(store, alice)
            _ = try await startSession(store, user: alice, sid: "s1")
            _ = try await refresh(store, "s1", 0, now: 1001)
            _ = try await refresh(store, "s1", 1, now: 1002)
            #expect(try await refresh(store, "s1", 0, now: 1003) == ("reuse", nil))

            _ = try await startSession(store, user: alice, sid: "s2")
            _ = try await refresh(store, "s2", 0, now: 1001)
            #expect(try await refresh(store, "s2", 0, now: 1012) == ("reuse", nil))
        }
    }

    @Test("Rotation refuses unknown sessions, unissued generations and other clients' tokens without changing anything")
    func unknownAndWrongClient() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            try await register(store, alice)
            _ = try await startSession(store, user: alice, sid: "s1")
            #expect(try await refresh(store, "nope", 0, now: 1001) == ("unknown", nil))
            #expect(try await refresh(store, "s1", 5, now: 1001) == ("unknown", nil))
            #expect(try await refresh(store, "s1", 0, now: 1001, client: "other") == ("wrongClient", nil))
            #expect(try await refresh(store, "s1", 0, now: 1002) == ("rotated", 1))
        }
    }

    @Test("100 concurrent refreshes of one generation: exactly one rotation, and one live generation after")
    func concurrentRefresh() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            try await register(store, alice)
            _ = try await startSession(store, user: alice, sid: "s1")
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<100 {
                    group.addTask { try await refresh(store, "s1", 0, now: 1001).0 }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == "rotated" }.count == 1)
            #expect(outcomes.filter { $0 == "reissued" }.count == 99)
            // Only the newest generation is live: every earlier reissued one is dead and counts as reuse.
            let session = try #require(try await store.session(id: "s1"))
            #expect(session.generation == 100 && session.retryGeneration == 0)
            #expect(try await refresh(store, "s1", 50, now: 1002) == ("reuse", nil))
        }
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

    @Test("A nonce is consumed once even by 50 concurrent sign-ins; expired and foreign nonces never")
    func nonceSingleUse() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            let bob = makeUser("bob")
            try await register(store, alice)
            try await register(store, bob)
            try await store.insertNonce("n1", userID: alice.id, expiresAt: 2000, maxOutstanding: 16)
            try await store.insertNonce("old", userID: alice.id, expiresAt: 1000, maxOutstanding: 16)
            let started = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        try await store.startSession(
                            NewSignIn(
                                session: Session(id: "s\(index)", userID: alice.id, clientID: "app", authTime: 1500, amr: [], scope: "openid", createdAt: 1500, expiresAt: 9999),
                                consumes: .nonce("n1", userID: alice.id, now: 1500), updatedClaims: nil)) == .started
                    }
                }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(started == 1)
            // Failed sign-ins wrote no session.
            let sessions = try await store.read { db in try db.query("SELECT count(*) FROM sessions") }
            #expect(sessions.first?.int(0) == 1)
            let expired = try await startSessionConsuming(store, .nonce("old", userID: alice.id, now: 1500), user: alice)
            #expect(expired == .replayed)
            try await store.insertNonce("n2", userID: alice.id, expiresAt: 2000, maxOutstanding: 16)
            #expect(try await startSessionConsuming(store, .nonce("n2", userID: bob.id, now: 1500), user: bob) == .replayed)
        }
    }

    func startSessionConsuming(_ store: SQLiteStore, _ value: SingleUse, user: User) async throws -> SignInOutcome {
        try await store.startSession(
            NewSignIn(
                session: Session(id: UUID().uuidString, userID: user.id, clientID: "app", authTime: 1, amr: [], scope: "openid", createdAt: 1, expiresAt: 9999),
                consumes: value, updatedClaims: nil))
    }

    @Test("Outstanding nonces per user are capped, newest kept")
    func nonceCap() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            try await register(store, alice)
            for index in 0..<5 { try await store.insertNonce("n\(index)", userID: alice.id, expiresAt: 2000 + Int64(index), maxOutstanding: 3) }
            let rows = try await store.read { db in try db.query("SELECT nonce FROM nonces ORDER BY nonce") }
            #expect(rows.map { $0.text(0) } == ["n2", "n3", "n4"])
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

    @Test("Deleting a user deletes their keys, registrations, nonces, sessions and refresh tokens")
    func deleteCascades() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            _ = try await store.register(
                NewRegistration(user: alice, deviceKey: DeviceKey(userID: alice.id, keyID: "dk", key: TestKeys.p256.publicKey, createdAt: 1), registrationID: "reg-1", proofHash: Data([9]), consumes: .jti("j", issuer: "t", until: 9)))
            try await store.insertNonce("n", userID: alice.id, expiresAt: 2000, maxOutstanding: 4)
            _ = try await startSession(store, user: alice, sid: "s1")
            #expect(try await store.deleteUser(id: alice.id))
            for table in ["users", "device_keys", "registrations", "nonces", "sessions"] {
                let count = try await store.read { db in try db.query("SELECT count(*) FROM \(table)") }
                #expect(count.first?.int(0) == 0, "\(table) still has rows")
            }
            #expect(try await store.deleteUser(id: alice.id) == false)
        }
    }

    @Test("Housekeeping purges expired nonces, jtis and dead sessions, in bounded batches")
    func purge() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            try await register(store, alice, jti: "keep")
            for index in 0..<5 { try await store.insertNonce("n\(index)", userID: alice.id, expiresAt: 100, maxOutstanding: 16) }
            _ = try await startSession(store, user: alice, sid: "dead", now: 10)
            _ = try await startSession(store, user: alice, sid: "live", now: 4000)
            _ = try await startSession(store, user: alice, sid: "revoked", now: 4000)
            #expect(try await store.revokeSession(id: "revoked", at: 4001))
            let first = try await store.purgeExpired(now: 6000, limit: 2)
            #expect(first > 0)
            while try await store.purgeExpired(now: 6000, limit: 2) > 0 {}
            #expect(try await store.session(id: "dead") == nil)
            #expect(try await store.session(id: "live") != nil)
            // A revoked session is kept a day, then purged.
            #expect(try await store.session(id: "revoked") != nil)
            while try await store.purgeExpired(now: 4001 + 86_400, limit: 2) > 0 {}
            #expect(try await store.session(id: "revoked") == nil)
            let nonces = try await store.read { db in try db.query("SELECT count(*) FROM nonces") }
            #expect(nonces.first?.int(0) == 0)
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
