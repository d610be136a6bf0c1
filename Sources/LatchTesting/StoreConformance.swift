import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

/// The behaviour every store backend must show, checked through the store protocols only. Each backend's test
/// target runs every check against a fresh, empty store:
///
/// ```swift
/// @Test(arguments: StoreConformance.checks)
/// func conformance(_ check: StoreConformance.Check) async throws { try await withFreshStore { try await check.run($0) } }
/// ```
public enum StoreConformance {
    /// One named check.
    public struct Check: Sendable, CustomTestStringConvertible {
        public let name: String
        public let run: @Sendable (any LatchStore) async throws -> Void
        public var testDescription: String { name }
    }

    /// A user named `name` (federated when `issuer` is given).
    public static func user(_ name: String, now: Int64 = 1000, issuer: String? = nil) -> User {
        User(
            id: "u-\(name)", username: name, kind: issuer == nil ? .test : .federated, issuer: issuer, subject: issuer == nil ? nil : name,
            claims: [:], createdAt: now)
    }

    /// Registers `user` with a P-256 device key `dk`.
    public static func register(_ store: any LatchStore, _ user: User, jti: String = UUID().uuidString, registrationID: String? = nil) async throws {
        let outcome = try await store.register(
            NewRegistration(
                user: user, deviceKey: DeviceKey(userID: user.id, keyID: "dk", key: TestKeys.p256.publicKey, createdAt: user.createdAt),
                registrationID: registrationID, proofHash: Data([1, 2, 3]), consumes: .jti(jti, issuer: "t", until: 5000)))
        guard case .created = outcome else { throw LatchError(.serverError, "registration failed: \(outcome)") }
    }

    /// A session of `user`, one hour long.
    public static func session(_ sid: String, user: User, now: Int64 = 1000, client: String = "app", lifetime: Int64 = 3600) -> Session {
        Session(id: sid, userID: user.id, clientID: client, authTime: now, amr: ["pop"], scope: "openid", createdAt: now, expiresAt: now + lifetime)
    }

    /// Opens `session`, consuming a fresh jti unless told otherwise.
    public static func start(_ store: any LatchStore, _ session: Session, consumes: SingleUse? = nil, claims: [String: JSONValue]? = nil) async throws
        -> SignInOutcome
    {
        try await store.startSession(
            NewSignIn(session: session, consumes: consumes ?? .jti(UUID().uuidString, issuer: "x", until: 9999), updatedClaims: claims))
    }

    /// Presents generation `n` of `sid`: the outcome's name and the new generation.
    public static func refresh(_ store: any LatchStore, _ sid: String, _ n: Int64, now: Int64, client: String = "app") async throws -> (String, Int64?) {
        switch try await store.refresh(RefreshRequest(sessionID: sid, generation: n, clientID: client, now: now, graceSeconds: 10)) {
        case .rotated(let session, _): ("rotated", session.generation)
        case .reissued(let session, _): ("reissued", session.generation)
        case .unknown: ("unknown", nil)
        case .inactive: ("inactive", nil)
        case .wrongClient: ("wrongClient", nil)
        case .reuseDetected: ("reuse", nil)
        }
    }

    public static let checks: [Check] = [
        Check(name: "registration: usernames and federated identities are unique; a jti is single-use; refusals write nothing") { store in
            try await register(store, user("alice"), jti: "j1")
            let sameName = try await store.register(
                NewRegistration(user: User(id: "u-2", username: "alice", kind: .test, issuer: nil, subject: nil, claims: [:], createdAt: 1),
                                deviceKey: nil, registrationID: nil, proofHash: Data(), consumes: .jti("j2", issuer: "t", until: 9)))
            guard case .alreadyRegistered = sameName else { throw Failure("same username: \(sameName)") }
            try await register(store, user("fed", issuer: "acme"))
            let sameIdentity = try await store.register(
                NewRegistration(user: User(id: "u-3", username: "other", kind: .federated, issuer: "acme", subject: "fed", claims: [:], createdAt: 1),
                                deviceKey: nil, registrationID: nil, proofHash: Data(), consumes: .jti("j3", issuer: "t", until: 9)))
            guard case .alreadyRegistered = sameIdentity else { throw Failure("same identity: \(sameIdentity)") }
            let replay = try await store.register(
                NewRegistration(user: user("bob"), deviceKey: nil, registrationID: nil, proofHash: Data(), consumes: .jti("j1", issuer: "t", until: 9)))
            guard case .replayed = replay else { throw Failure("replay: \(replay)") }
            #expect(try await store.user(username: "bob") == nil)
            #expect(try await store.user(id: "u-2") == nil)
            #expect(try await store.user(id: "u-3") == nil)
            #expect(try await store.federatedUser(issuer: "acme", subject: "fed")?.id == "u-fed")
            #expect(try await store.deviceKey(userID: "u-alice", keyID: "dk")?.key.derRepresentation == TestKeys.p256.publicKey.derRepresentation)
        },
        Check(name: "registration: the registration id is recorded with its proof hash; concurrent uses of one id create one user") { store in
            try await register(store, user("alice"), registrationID: "reg-1")
            #expect(try await store.registration(id: "reg-1")?.userID == "u-alice")
            #expect(try await store.registration(id: "reg-1")?.proofHash == Data([1, 2, 3]))
            let created = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        let outcome = try await store.register(
                            NewRegistration(user: user("racer\(index)"), deviceKey: nil, registrationID: "reg-race", proofHash: Data([7]),
                                            consumes: .jti("race-\(index)", issuer: "t", until: 9)))
                        if case .created = outcome { return 1 }
                        guard case .registrationExists = outcome else { throw Failure("unexpected \(outcome)") }
                        return 0
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(created == 1)
        },
        Check(name: "rotation: live rotates; retry within grace reissues; a dead successor is reuse and the revocation commits") { store in
            let alice = user("alice")
            try await register(store, alice)
            #expect(try await start(store, session("s1", user: alice)) == .started)
            #expect(try await refresh(store, "s1", 0, now: 1001) == ("rotated", 1))
            #expect(try await refresh(store, "s1", 0, now: 1005) == ("reissued", 2))
            #expect(try await refresh(store, "s1", 1, now: 1006) == ("reuse", nil))
            #expect(try await store.session(id: "s1")?.revokedAt == 1006)
            #expect(try await refresh(store, "s1", 2, now: 1007) == ("inactive", nil))
        },
        Check(name: "rotation: a retry after its successor was used, or after the grace window, is reuse") { store in
            let alice = user("alice")
            try await register(store, alice)
            _ = try await start(store, session("s1", user: alice))
            _ = try await refresh(store, "s1", 0, now: 1001)
            _ = try await refresh(store, "s1", 1, now: 1002)
            #expect(try await refresh(store, "s1", 0, now: 1003) == ("reuse", nil))
            _ = try await start(store, session("s2", user: alice))
            _ = try await refresh(store, "s2", 0, now: 1001)
            #expect(try await refresh(store, "s2", 0, now: 1012) == ("reuse", nil))
        },
        Check(name: "rotation: unknown sessions, unissued generations, other clients and expired families change nothing") { store in
            let alice = user("alice")
            try await register(store, alice)
            _ = try await start(store, session("s1", user: alice))
            _ = try await start(store, session("short", user: alice, lifetime: 10))
            #expect(try await refresh(store, "nope", 0, now: 1001) == ("unknown", nil))
            #expect(try await refresh(store, "s1", 5, now: 1001) == ("unknown", nil))
            #expect(try await refresh(store, "s1", 0, now: 1001, client: "other") == ("wrongClient", nil))
            #expect(try await refresh(store, "short", 0, now: 1011) == ("inactive", nil))
            #expect(try await refresh(store, "s1", 0, now: 1002) == ("rotated", 1))
        },
        Check(name: "rotation race: 100 concurrent refreshes of one generation give one rotation and one live generation") { store in
            let alice = user("alice")
            try await register(store, alice)
            _ = try await start(store, session("s1", user: alice))
            let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<100 { group.addTask { try await refresh(store, "s1", 0, now: 1001).0 } }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == "rotated" }.count == 1)
            #expect(outcomes.filter { $0 == "reissued" }.count == 99)
            let final = try #require(try await store.session(id: "s1"))
            #expect(final.generation == 100 && final.retryGeneration == 0 && final.revokedAt == nil)
            #expect(try await refresh(store, "s1", 50, now: 1002) == ("reuse", nil))
        },
        Check(name: "nonces: consumed once under 50 concurrent sign-ins; expired and other users' nonces never; failures write no session") { store in
            let alice = user("alice")
            let bob = user("bob")
            try await register(store, alice)
            try await register(store, bob)
            try await store.insertNonce("n1", userID: alice.id, expiresAt: 2000, maxOutstanding: 16)
            try await store.insertNonce("old", userID: alice.id, expiresAt: 1000, maxOutstanding: 16)
            let started = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        try await start(store, session("s\(index)", user: alice, now: 1500), consumes: .nonce("n1", userID: alice.id, now: 1500)) == .started ? 1 : 0
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(started == 1)
            let opened = try await (0..<50).asyncCount { try await store.session(id: "s\($0)") != nil }
            #expect(opened == 1)
            #expect(try await start(store, session("x1", user: alice, now: 1500), consumes: .nonce("old", userID: alice.id, now: 1500)) == .replayed)
            try await store.insertNonce("n2", userID: alice.id, expiresAt: 2000, maxOutstanding: 16)
            #expect(try await start(store, session("x2", user: bob, now: 1500), consumes: .nonce("n2", userID: bob.id, now: 1500)) == .replayed)
            #expect(try await start(store, session("x3", user: alice, now: 1500), consumes: .nonce("n2", userID: alice.id, now: 1500)) == .started)
        },
        Check(name: "nonces: at most maxOutstanding per user, the newest kept") { store in
            let alice = user("alice")
            try await register(store, alice)
            for index in 0..<5 { try await store.insertNonce("n\(index)", userID: alice.id, expiresAt: 2000 + Int64(index), maxOutstanding: 3) }
            var live: [String] = []
            for index in 0..<5 where try await start(store, session("s\(index)", user: alice), consumes: .nonce("n\(index)", userID: alice.id, now: 1500)) == .started {
                live.append("n\(index)")
            }
            #expect(live == ["n2", "n3", "n4"])
        },
        Check(name: "jti: 20 concurrent sign-ins with one assertion id open one session; claims are updated with it") { store in
            let alice = user("alice", issuer: "acme")
            try await register(store, alice)
            let started = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        try await start(store, session("s\(index)", user: alice), consumes: .jti("same", issuer: "acme", until: 9999), claims: ["tier": "gold"])
                            == .started ? 1 : 0
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(started == 1)
            #expect(try await store.user(id: alice.id)?.claims == ["tier": "gold"])
            // The same jti from another issuer is a different value.
            #expect(try await start(store, session("other", user: alice), consumes: .jti("same", issuer: "evil", until: 9999)) == .started)
        },
        Check(name: "deleting a user removes keys, registrations, nonces and sessions; a sign-in for a deleted user fails") { store in
            let alice = user("alice")
            try await register(store, alice, registrationID: "reg-1")
            try await store.insertNonce("n", userID: alice.id, expiresAt: 2000, maxOutstanding: 4)
            _ = try await start(store, session("s1", user: alice))
            #expect(try await store.deleteUser(id: alice.id))
            #expect(try await store.user(id: alice.id) == nil)
            #expect(try await store.deviceKey(userID: alice.id, keyID: "dk") == nil)
            #expect(try await store.registration(id: "reg-1") == nil)
            #expect(try await store.session(id: "s1") == nil)
            #expect(try await start(store, session("s2", user: alice), consumes: .nonce("n", userID: alice.id, now: 1500)) == .userGone)
            #expect(try await store.deleteUser(id: alice.id) == false)
        },
        Check(name: "revocation: one session, or every live session of a user, counted once") { store in
            let alice = user("alice")
            try await register(store, alice)
            for index in 0..<3 { _ = try await start(store, session("s\(index)", user: alice)) }
            #expect(try await store.revokeSession(id: "s0", at: 1100))
            #expect(try await store.revokeSession(id: "s0", at: 1101) == false)
            #expect(try await store.revokeSessions(userID: alice.id, at: 1200) == 2)
            #expect(try await store.revokeSessions(userID: alice.id, at: 1300) == 0)
            #expect(try await store.session(id: "s0")?.revokedAt == 1100)
            let pair = try #require(try await store.sessionWithUser(id: "s1"))
            #expect(pair.0.id == "s1" && pair.1.username == "alice" && pair.0.revokedAt == 1200)
            #expect(try await store.sessionWithUser(id: "nope") == nil)
        },
        Check(name: "housekeeping purges expired nonces, jtis and sessions (revoked ones after a day) in bounded batches") { store in
            let alice = user("alice")
            try await register(store, alice, jti: "keep")
            for index in 0..<5 { try await store.insertNonce("n\(index)", userID: alice.id, expiresAt: 100, maxOutstanding: 16) }
            _ = try await start(store, session("dead", user: alice, now: 10))
            _ = try await start(store, session("live", user: alice, now: 4000))
            _ = try await start(store, session("revoked", user: alice, now: 4000))
            #expect(try await store.revokeSession(id: "revoked", at: 4001))
            #expect(try await store.purgeExpired(now: 6000, limit: 2) > 0)
            var rounds = 0
            while try await store.purgeExpired(now: 6000, limit: 2) > 0, rounds < 100 { rounds += 1 }
            #expect(try await store.session(id: "dead") == nil)
            #expect(try await store.session(id: "live") != nil)
            #expect(try await store.session(id: "revoked") != nil)
            while try await store.purgeExpired(now: 4001 + 86_400, limit: 100) > 0, rounds < 200 { rounds += 1 }
            #expect(try await store.session(id: "revoked") == nil)
            // A purged jti can be used again only because its assertion has expired anyway.
            #expect(try await start(store, session("again", user: alice, now: 90_000), consumes: .jti("keep", issuer: "t", until: 99_999)) == .started)
        },
        Check(name: "issuer keys, test keys and clients: add once, find, list, delete") { store in
            let issuer = IssuerKey(issuer: "acme", keyID: "k1", key: TestKeys.rsa.publicKey, audience: "aud", allowedClaims: ["c"], maxLifetime: 60, createdAt: 5)
            #expect(try await store.addIssuerKey(issuer))
            #expect(try await store.addIssuerKey(issuer) == false)
            #expect(try await store.issuerKey(issuer: "acme", keyID: "k1")?.allowedClaims == ["c"])
            #expect(try await store.issuerKeys().count == 1)
            #expect(try await store.deleteIssuer("acme", keyID: nil) == 1)
            #expect(try await store.issuerKey(issuer: "acme", keyID: "k1") == nil)
            let testKey = TestKey(keyID: "register_key", key: TestKeys.rsa.publicKey, createdAt: 5)
            #expect(try await store.addTestKey(testKey))
            #expect(try await store.addTestKey(testKey) == false)
            #expect(try await store.testKey(id: "register_key")?.key.algorithm == .RS256)
            #expect(try await store.testKeys().map(\.keyID) == ["register_key"])
            #expect(try await store.deleteTestKey(id: "register_key"))
            #expect(try await store.deleteTestKey(id: "register_key") == false)
            #expect(try await store.addClient(Client(id: "ios", name: "iOS", createdAt: 1)))
            #expect(try await store.addClient(Client(id: "ios", name: "iOS", createdAt: 1)) == false)
            let alice = user("alice")
            try await register(store, alice)
            _ = try await start(store, session("s1", user: alice, client: "ios"))
            #expect(try await store.deleteClient(id: "ios"))
            #expect(try await store.session(id: "s1") == nil)
            #expect(try await store.clients().isEmpty)
        },
        Check(name: "signing keys: activating one retires the rest in the same step; retired keys are deleted after a cutoff") { store in
            func record(_ id: String, at: Int64) -> SigningKeyRecord {
                SigningKeyRecord(keyID: id, algorithm: .ES256, sealedPrivateKey: Data([1]), publicKeyDER: TestKeys.p256.publicKey.derRepresentation, createdAt: at, retiredAt: nil)
            }
            try await store.activateSigningKey(record("a", at: 10))
            try await store.activateSigningKey(record("b", at: 20))
            let keys = try await store.signingKeys()
            #expect(keys.map(\.keyID) == ["a", "b"])
            #expect(keys.map(\.retiredAt) == [20, nil])
            #expect(try await store.deleteSigningKeys(retiredBefore: 21) == 1)
            #expect(try await store.signingKeys().map(\.keyID) == ["b"])
        },
        Check(name: "admin tokens: stored by id, replaced by id, deleted by id") { store in
            try await store.putAdminToken(AdminTokenRecord(id: "env", name: "LATCH_ADMIN_TOKEN", hash: Data([1]), createdAt: 1))
            try await store.putAdminToken(AdminTokenRecord(id: "ci", name: "ci", hash: Data([2]), createdAt: 2))
            try await store.putAdminToken(AdminTokenRecord(id: "env", name: "LATCH_ADMIN_TOKEN", hash: Data([3]), createdAt: 3))
            #expect(try await store.adminTokens().map(\.hash) == [Data([2]), Data([3])])
            #expect(try await store.deleteAdminToken(id: "ci"))
            #expect(try await store.deleteAdminToken(id: "ci") == false)
            #expect(try await store.adminTokens().map(\.id) == ["env"])
        },
        Check(name: "users page by id") { store in
            for name in ["c", "a", "e", "b", "d"] { try await register(store, user(name)) }
            let first = try await store.users(after: nil, limit: 2)
            let second = try await store.users(after: first.last?.id, limit: 2)
            let third = try await store.users(after: second.last?.id, limit: 2)
            #expect((first + second + third).map(\.username) == ["a", "b", "c", "d", "e"])
        },
    ]

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

extension Range where Bound == Int {
    /// How many elements satisfy an async predicate.
    func asyncCount(_ predicate: (Int) async throws -> Bool) async rethrows -> Int {
        var count = 0
        for element in self where try await predicate(element) { count += 1 }
        return count
    }
}
