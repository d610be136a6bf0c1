import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

/// The behaviour every store backend must show, checked through the store protocols only. Each backend's test
/// target runs every check against a fresh, empty store, given as two handles on the same data — two replicas
/// for PostgreSQL, two connections to one file for SQLite, one instance twice in memory — and every race is
/// run across both:
///
/// ```swift
/// @Test(arguments: StoreConformance.checks)
/// func conformance(_ check: StoreConformance.Check) async throws { try await withFreshStores { try await check.run($0, $1) } }
/// ```
public enum StoreConformance {
    /// One named check, given two handles on one fresh store.
    public struct Check: Sendable, CustomTestStringConvertible {
        public let name: String
        public let run: @Sendable (_ store: any LatchStore, _ replica: any LatchStore) async throws -> Void
        public var testDescription: String { name }
    }

    /// Refusals the checks give primitives, to see which one a unit of work was refused with.
    public enum Refusal: Error, Equatable {
        case taken, used, missing, exists, second
    }

    /// A user named `name` (federated when `issuer` is given).
    public static func user(_ name: String, now: Int64 = 1000, issuer: String? = nil) -> User {
        User(
            id: "u-\(name)", username: name, kind: issuer == nil ? .test : .federated, issuer: issuer, subject: issuer == nil ? nil : name,
            claims: [:], createdAt: now)
    }

    /// Registers `user` with a P-256 device key `dk`, as registration does.
    public static func register(_ store: any LatchStore, _ user: User, jti: String = UUID().uuidString, registrationID: String? = nil) async throws {
        let record = registrationID.map { RegistrationRecord(id: $0, userID: user.id, proofHash: Data([1, 2, 3]), createdAt: user.createdAt) }
        try await registration(store, user, jti: jti, record: record, deviceKey: true)
    }

    /// The unit of work of a registration; throws the ``Refusal`` it met.
    static func registration(_ store: any LatchStore, _ user: User, jti: String, record: RegistrationRecord?, deviceKey: Bool) async throws {
        try await store.write { transaction in
            if let record { transaction.requireNoRegistration(id: record.id, ifExists: Refusal.exists) }
            transaction.insertUser(user, ifTaken: Refusal.taken)
            transaction.consume(.jti(jti, issuer: "t", until: 5000), ifUnavailable: Refusal.used)
            if deviceKey {
                transaction.insertDeviceKey(
                    DeviceKey(userID: user.id, keyID: "dk", key: TestKeys.p256.publicKey, createdAt: user.createdAt), ifTaken: Refusal.taken)
            }
            if let record { transaction.insertRegistration(record, ifTaken: Refusal.exists) }
        }
    }

    /// A session of `user`, one hour long.
    public static func session(_ sid: String, user: User, now: Int64 = 1000, client: String = "app", lifetime: Int64 = 3600) -> Session {
        Session(id: sid, userID: user.id, clientID: client, authTime: now, amr: ["pop"], scope: "openid", createdAt: now, expiresAt: now + lifetime)
    }

    /// A two-step custom provider `id` (its secret sealed bytes, claims in order), created at `createdAt`.
    static func customProvider(_ id: String, flow: CustomProvider.Flow = .twoStep, enabled: Bool = true, createdAt: Int64 = 10) -> CustomProvider {
        CustomProvider(
            id: id, name: "Provider \(id)", flow: flow, hookURL: "https://hooks.example/\(id)", sealedSecret: Data([0, 1, 2, 0xFE, 0xFF] + Array(id.utf8)),
            timeout: 5, retries: 2, transactionLifetime: 600, allowedClaims: ["email", "customer_number", "prénom"], enabled: enabled, createdAt: createdAt,
            updatedAt: createdAt)
    }

    /// An open custom transaction `id` of `provider`, started at `createdAt`, usable until `expiresAt`.
    static func customTransaction(_ id: String, provider: String = "sms", client: String = "app", createdAt: Int64 = 100, expiresAt: Int64 = 700)
        -> CustomTransaction
    {
        CustomTransaction(
            id: id, providerID: provider, clientID: client, state: .open, initData: #"{"sentTo":"+31 6 ••••42","tries":3}"#, attempts: 1,
            lastStatus: 2000, userID: nil, registrationID: nil, createdAt: createdAt, expiresAt: expiresAt, finishedAt: nil)
    }

    /// Opens `session` as a sign-in does, consuming a fresh jti unless told otherwise: nil when it opened, else
    /// the refusal.
    @discardableResult
    public static func start(_ store: any LatchStore, _ session: Session, consumes: SingleUse? = nil, claims: [String: JSONValue]? = nil) async throws
        -> Refusal?
    {
        do {
            try await store.write { transaction in
                transaction.consume(consumes ?? .jti(UUID().uuidString, issuer: "x", until: 9999), ifUnavailable: Refusal.used)
                transaction.requireUser(id: session.userID, ifMissing: Refusal.missing)
                if let claims { transaction.updateClaims(userID: session.userID, claims: claims) }
                transaction.insertSession(session)
            }
            return nil
        } catch let refusal as Refusal {
            return refusal
        }
    }

    /// Presents generation `n` of `sid` through the store's rotation primitive: the outcome and the new generation.
    public static func refresh(_ store: any LatchStore, _ sid: String, _ n: Int64, now: Int64, client: String = "app") async throws
        -> (RefreshRotation.Outcome?, Int64?)
    {
        guard let (outcome, session, _) = try await store.rotateRefreshToken(sessionID: sid, presented: n, clientID: client, presentedKey: nil, spending: nil, now: now, grace: 10)
        else { return (nil, nil) }
        return (outcome, outcome == .rotated || outcome == .reissued ? session.generation : nil)
    }

    /// Handle `index` of the pair, alternating, so concurrent tasks split across both.
    /// Seals until no record is left unsealed, at most 20 s; how many it sealed. PostgreSQL seals only records whose
    /// every earlier transaction on their database has finished, and the test's own racing units hold that back a moment.
    public static func sealAll(_ store: any LatchStore, batch: Int = 1000) async throws -> Int {
        var sealed = 0
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            sealed += try await store.sealAudit(batch: batch) ?? 0
            if try await store.unsealedAudit(after: 0, limit: 1).isEmpty { break }
            try await Task.sleep(for: .milliseconds(5))
        }
        return sealed
    }

    static func pick(_ index: Int, _ store: any LatchStore, _ replica: any LatchStore) -> any LatchStore {
        index.isMultiple(of: 2) ? store : replica
    }

    /// Every check, one domain after another (each domain's in its `StoreConformance+<Domain>.swift`).
    public static let checks: [Check] =
        coreChecks + userChecks + sessionChecks + keyChecks + issuerLoginChecks
        + adminChecks + auditChecks + deviceChecks + customRegistrationChecks + federationChecks + observerChecks

    /// The unit of work itself.
    static let coreChecks: [Check] = [
        Check(name: "unit of work: all or nothing; writes run in order, each seeing the ones before; the first refusal wins") { store, _ in
            let alice = user("alice")
            // Refused after two writes: neither is kept.
            await #expect(throws: Refusal.missing) {
                try await store.write { transaction in
                    transaction.insertUser(alice, ifTaken: Refusal.taken)
                    transaction.consume(.jti("j1", issuer: "t", until: 9), ifUnavailable: Refusal.used)
                    transaction.requireUser(id: "nobody", ifMissing: Refusal.missing)
                    transaction.requireUser(id: "nobody", ifMissing: Refusal.second)
                }
            }
            #expect(try await store.user(id: alice.id) == nil)
            #expect(try await store.consume(.jti("j1", issuer: "t", until: 9)))
            // A write sees the one before it in the same unit.
            try await store.write { transaction in
                transaction.insertUser(alice, ifTaken: Refusal.taken)
                transaction.requireUser(id: alice.id, ifMissing: Refusal.missing)
                transaction.insertDeviceKey(DeviceKey(userID: alice.id, keyID: "dk", key: TestKeys.p256.publicKey, createdAt: 1), ifTaken: Refusal.taken)
            }
            #expect(try await store.deviceKey(userID: alice.id, keyID: "dk") != nil)
            // What a write reports arrives after commit.
            let revoked = try await store.write { $0.revokeSessions(userID: alice.id, at: 5) }
            #expect(revoked.value == 0)
        },
    ]

    /// Commit observers.
    static let observerChecks: [Check] = [
        Check(name: "observers: every durable commit is reported with its units of work (SQLite: group commits of several; PostgreSQL and memory: one each)") { store, _ in
            let observer = RecordingStoreObserver()
            store.observers.set(observer)
            defer { store.observers.set(nil) }
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<20 { group.addTask { _ = try? await store.consume(.jti("observed-\(index)", issuer: "t", until: 9)) } }
            }
            // SQLite folds concurrent writes into group commits (each a savepoint in one transaction); PostgreSQL commits each.
            #expect(observer.commits.reduce(0, +) == 20, "\(observer.commits)")
            #expect(observer.commits.allSatisfy { $0 >= 1 })
            #expect(observer.failures.isEmpty)
            // Reads are timed too (the in-memory store has nothing to wait for and reports none).
            _ = try await store.users(after: nil, limit: 1)
            _ = try await store.auditAnchor()
            #expect(store is InMemoryStore ? observer.reads == 0 : observer.reads >= 2, "\(observer.reads)")
            // Whether a store declares a connection pool is each backend's own test (PostgreSQL's has one).
        },
    ]
}

extension Range where Bound == Int {
    /// How many elements satisfy an async predicate, all run at once.
    func asyncConcurrentCount(_ predicate: @escaping @Sendable (Int) async -> Bool) async -> Int {
        await withTaskGroup(of: Bool.self) { group in
            for element in self { group.addTask { await predicate(element) } }
            var count = 0
            for await passed in group where passed { count += 1 }
            return count
        }
    }

    /// How many elements satisfy an async predicate.
    func asyncCount(_ predicate: (Int) async throws -> Bool) async rethrows -> Int {
        var count = 0
        for element in self where try await predicate(element) { count += 1 }
        return count
    }
}
