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

func startSession(_ store: SQLiteStore, user: User, sid: String, token: String, now: Int64 = 1000) async throws -> SignInOutcome {
    try await store.startSession(
        NewSignIn(
            session: Session(id: sid, userID: user.id, clientID: "app", authTime: now, amr: ["pop"], scope: "openid", createdAt: now, expiresAt: now + 3600),
            refreshToken: RefreshTokenRecord(hash: Secrets.hash(token), issuedAt: now),
            consumes: .jti(UUID().uuidString, issuer: "x", until: now + 600), updatedClaims: nil))
}

func refresh(_ store: SQLiteStore, _ token: String, successor: String, now: Int64, client: String = "app") async throws -> RefreshOutcome {
    try await store.refresh(
        RefreshRequest(
            presentedHash: Secrets.hash(token), successor: RefreshTokenRecord(hash: Secrets.hash(successor), issuedAt: now),
            clientID: client, now: now, graceSeconds: 10))
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
            #expect(try await startSession(store, user: alice, sid: "s1", token: "t0") == .started)

            guard case .rotated = try await refresh(store, "t0", successor: "t1", now: 1001) else { Issue.record("t0 should rotate"); return }
            // t0 again within grace while t1 is unused: a fresh successor, t1 invalidated.
            guard case .reissued = try await refresh(store, "t0", successor: "t2", now: 1005) else { Issue.record("t0 retry should reissue"); return }
            // t1 is dead: presenting it is reuse and revokes the family.
            guard case .reuseDetected = try await refresh(store, "t1", successor: "t3", now: 1006) else { Issue.record("t1 should be reuse"); return }
            // The revocation committed even though that request failed.
            #expect(try await store.session(id: "s1")?.revokedAt == 1006)
            guard case .inactive = try await refresh(store, "t2", successor: "t4", now: 1007) else { Issue.record("family should be dead"); return }
        }
    }

    @Test("Rotation: a retry after its successor was used, or after the grace window, is reuse")
    func reuseAfterSuccessorUsedOrGrace() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            try await register(store, alice)
            _ = try await startSession(store, user: alice, sid: "s1", token: "a0")
            _ = try await refresh(store, "a0", successor: "a1", now: 1001)
            _ = try await refresh(store, "a1", successor: "a2", now: 1002)
            guard case .reuseDetected = try await refresh(store, "a0", successor: "a3", now: 1003) else { Issue.record("a0 should be reuse"); return }

            _ = try await startSession(store, user: alice, sid: "s2", token: "b0")
            _ = try await refresh(store, "b0", successor: "b1", now: 1001)
            guard case .reuseDetected = try await refresh(store, "b0", successor: "b2", now: 1012) else { Issue.record("b0 after grace should be reuse"); return }
        }
    }

    @Test("Rotation refuses unknown tokens and other clients' tokens without changing anything")
    func unknownAndWrongClient() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            try await register(store, alice)
            _ = try await startSession(store, user: alice, sid: "s1", token: "t0")
            guard case .unknown = try await refresh(store, "nope", successor: "x", now: 1001) else { Issue.record("unknown"); return }
            guard case .wrongClient = try await refresh(store, "t0", successor: "x", now: 1001, client: "other") else { Issue.record("wrongClient"); return }
            guard case .rotated = try await refresh(store, "t0", successor: "t1", now: 1002) else { Issue.record("t0 must still be live"); return }
        }
    }

    @Test("100 concurrent refreshes of one token: exactly one rotation, never two live successors")
    func concurrentRefresh() async throws {
        try await withStore { store, _ in
            let alice = makeUser("alice")
            try await register(store, alice)
            _ = try await startSession(store, user: alice, sid: "s1", token: "t0")
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<100 {
                    group.addTask {
                        switch try await refresh(store, "t0", successor: "n\(index)", now: 1001) {
                        case .rotated: "rotated"
                        case .reissued: "reissued"
                        default: "refused"
                        }
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == "rotated" }.count == 1)
            // Retries inside the grace window each replace the single live successor.
            let live = try await store.read { db in
                try db.query("SELECT count(*) FROM refresh_tokens WHERE session_id = 's1' AND rotated_at IS NULL")
            }
            #expect(live.first?.int(0) == 1)
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
                                refreshToken: RefreshTokenRecord(hash: Secrets.hash("r\(index)"), issuedAt: 1500),
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
                refreshToken: RefreshTokenRecord(hash: Secrets.hash(UUID().uuidString), issuedAt: 1), consumes: value, updatedClaims: nil))
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
            _ = try await startSession(store, user: alice, sid: "s1", token: "t0")
            #expect(try await store.deleteUser(id: alice.id))
            for table in ["users", "device_keys", "registrations", "nonces", "sessions", "refresh_tokens"] {
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
            _ = try await startSession(store, user: alice, sid: "dead", token: "d0", now: 10)
            _ = try await startSession(store, user: alice, sid: "live", token: "l0", now: 4000)
            let first = try await store.purgeExpired(now: 6000, limit: 2)
            #expect(first > 0)
            while try await store.purgeExpired(now: 6000, limit: 2) > 0 {}
            #expect(try await store.session(id: "dead") == nil)
            #expect(try await store.session(id: "live") != nil)
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
