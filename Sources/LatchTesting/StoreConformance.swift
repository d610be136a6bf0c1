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

    public static let checks: [Check] = [
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
        Check(name: "users: usernames and federated identities are unique; a jti is single-use; refusals write nothing") { store, _ in
            try await register(store, user("alice"), jti: "j1")
            let sameName = User(id: "u-2", username: "alice", kind: .test, issuer: nil, subject: nil, claims: [:], createdAt: 1)
            await #expect(throws: Refusal.taken) { try await registration(store, sameName, jti: "j2", record: nil, deviceKey: false) }
            try await register(store, user("fed", issuer: "acme"))
            let sameIdentity = User(id: "u-3", username: "other", kind: .federated, issuer: "acme", subject: "fed", claims: [:], createdAt: 1)
            await #expect(throws: Refusal.taken) { try await registration(store, sameIdentity, jti: "j3", record: nil, deviceKey: false) }
            await #expect(throws: Refusal.used) { try await registration(store, user("bob"), jti: "j1", record: nil, deviceKey: false) }
            #expect(try await store.user(username: "bob") == nil)
            #expect(try await store.user(id: "u-2") == nil)
            #expect(try await store.user(id: "u-3") == nil)
            #expect(try await store.consume(.jti("j2", issuer: "t", until: 9)), "a refused unit spent its jti")
            #expect(try await store.federatedUser(issuer: "acme", subject: "fed")?.id == "u-fed")
            #expect(try await store.user(username: "alice")?.kind == .test)
            #expect(try await store.deviceKey(userID: "u-alice", keyID: "dk")?.key.derRepresentation == TestKeys.p256.publicKey.derRepresentation)
            let (found, key) = try #require(try await store.deviceSignInKey(username: "alice", keyID: "dk"))
            #expect(found.id == "u-alice" && key.keyID == "dk")
            #expect(try await store.deviceSignInKey(username: "alice", keyID: "other") == nil)
            // A federated user's name is its issuer's, not Latch's: no device sign-in by it.
            #expect(try await store.deviceSignInKey(username: "fed", keyID: "dk") == nil)
            #expect(try await store.user(username: "fed") == nil)
            #expect(try await store.deviceSignInKey(username: "nobody", keyID: "dk") == nil)
        },
        Check(name: "users: a username is unique within its source (Latch's own, or one issuer), not across sources") { store, _ in
            try await register(store, user("alice"), jti: "n1")
            @Sendable func federated(_ id: String, _ issuer: String, _ subject: String) -> User {
                User(id: id, username: subject, kind: .federated, issuer: issuer, subject: subject, claims: [:], createdAt: 1)
            }
            // Another source's "alice" is somebody else, and both exist.
            try await registration(store, federated("u-acme-alice", "acme", "alice"), jti: "f1", record: nil, deviceKey: false)
            try await registration(store, federated("u-globex-alice", "globex", "alice"), jti: "f2", record: nil, deviceKey: false)
            #expect(try await store.user(username: "alice")?.id == "u-alice")
            #expect(try await store.federatedUser(issuer: "globex", subject: "alice")?.id == "u-globex-alice")
            // Within a source the name stays unique.
            let twin = User(id: "u-twin", username: "alice", kind: .test, issuer: nil, subject: nil, claims: [:], createdAt: 1)
            await #expect(throws: Refusal.taken) { try await registration(store, twin, jti: "n2", record: nil, deviceKey: false) }
            await #expect(throws: Refusal.taken) {
                try await registration(store, federated("u-acme-twin", "acme", "alice"), jti: "f3", record: nil, deviceKey: false)
            }
        },
        Check(name: "registration records: an existing id refuses; 10 concurrent units with one id on two replicas create one user") { store, replica in
            try await register(store, user("alice"), registrationID: "reg-1")
            #expect(try await store.registration(id: "reg-1") == RegistrationRecord(id: "reg-1", userID: "u-alice", proofHash: Data([1, 2, 3]), createdAt: 1000))
            await #expect(throws: Refusal.exists) { try await register(store, user("bob"), registrationID: "reg-1") }
            #expect(try await store.user(id: "u-bob") == nil)
            let created = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        do {
                            try await register(pick(index, store, replica), user("racer\(index)"), jti: "race-\(index)", registrationID: "reg-race")
                            return 1
                        } catch Refusal.exists {
                            return 0
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(created == 1)
            let winner = try #require(try await store.registration(id: "reg-race"))
            #expect(try await replica.user(id: winner.userID) != nil)
            #expect(try await store.users(after: nil, limit: 100).count == 2)
        },
        Check(name: "sessions: updateSession, and the store's rotateRefreshToken, apply the rotation rule to 300 random states as RefreshRotation.decide says") { store, _ in
            let alice = user("alice")
            try await register(store, alice)
            var random = SplitMix(seed: 0x5E55_1011)
            for index in 0..<300 {
                let generation = Int64.random(in: 0...4, using: &random)
                let retry: Int64? = generation > 0 && Bool.random(using: &random) ? Int64.random(in: 0..<generation, using: &random) : nil
                let state = Session(
                    id: "s\(index)", userID: alice.id, clientID: Bool.random(using: &random) ? "app" : "other", authTime: 900,
                    amr: ["pop", "hwk"], scope: "openid profile", createdAt: 900, expiresAt: Int64.random(in: 1000...1030, using: &random),
                    revokedAt: Int64.random(in: 0...5, using: &random) == 0 ? 990 : nil, generation: generation, retryGeneration: retry,
                    rotatedAt: retry == nil ? nil : Int64.random(in: 995...1010, using: &random),
                    dpopJKT: [nil, nil, "jkt-1"].randomElement(using: &random)!)
                #expect(try await start(store, state) == nil)
                #expect(try await store.session(id: state.id) == state, "insertSession keeps every field")
                // Mostly the rule's boundaries: the live or retry generation, one past the live one; the last second
                // of the grace window and the first after it; the family's last second and its expiry.
                let presented = [generation, retry ?? 0, generation + 1, Int64.random(in: 0...5, using: &random)].randomElement(using: &random)!
                let rotatedAt = state.rotatedAt ?? 1000
                let now = [rotatedAt + 10, rotatedAt + 11, rotatedAt + 9, state.expiresAt - 1, state.expiresAt, Int64.random(in: 1000...1025, using: &random)]
                    .randomElement(using: &random)!
                // A DPoP-bound session's refresh proves its key, another, or none.
                let key = [nil, "jkt-1", "jkt-2"].randomElement(using: &random)!
                let expected = RefreshRotation.decide(state, presented: presented, clientID: "app", presentedKey: key, now: now, grace: 10)
                let outcome = try await store.updateSession(id: state.id) { session, user in
                    #expect(session == state && user.id == alice.id)
                    return RefreshRotation.decide(session, presented: presented, clientID: "app", presentedKey: key, now: now, grace: 10)
                }
                #expect(outcome == expected.result, "state \(state), presented \(presented), key \(key ?? "none"), now \(now)")
                #expect(try await store.session(id: state.id) == (expected.session ?? state), "state \(state), presented \(presented), now \(now)")
                // The same state again under another id, through the store's rotation primitive.
                var twin = state
                twin.id = "r\(index)"
                #expect(try await start(store, twin) == nil)
                let rotated = try #require(
                    try await store.rotateRefreshToken(sessionID: twin.id, presented: presented, clientID: "app", presentedKey: key, spending: nil, now: now, grace: 10))
                var expectedTwin = expected.session ?? state
                expectedTwin.id = twin.id
                #expect(rotated.0 == expected.result && rotated.1 == expectedTwin && rotated.2.id == alice.id, "rotateRefreshToken on \(state), presented \(presented), now \(now)")
                #expect(try await store.session(id: twin.id) == expectedTwin)
            }
            #expect(try await store.rotateRefreshToken(sessionID: "nope", presented: 0, clientID: "app", presentedKey: nil, spending: nil, now: 1000, grace: 10) == nil)
            #expect(try await store.updateSession(id: "nope") { _, _ in SessionUpdate(session: nil, result: 1) } == nil)
        },
        Check(name: "rotation spending a DPoP proof's jti: spent with the rotation; a spent one changes nothing; raced on two replicas, one rotation") { store, replica in
            let alice = user("alice")
            try await register(store, alice)
            var bound = session("s-dpop", user: alice)
            bound.dpopJKT = "jkt-1"
            #expect(try await start(store, bound) == nil)
            @Sendable func rotate(_ on: any LatchStore, _ n: Int64, jti: String) async throws -> RefreshRotation.Outcome? {
                let rotated = try await on.rotateRefreshToken(
                    sessionID: "s-dpop", presented: n, clientID: "app", presentedKey: "jkt-1", spending: .jti(jti, issuer: "dpop:jkt-1", until: 2000),
                    now: 1100, grace: 10)
                return rotated?.0
            }
            #expect(try await rotate(store, 0, jti: "p1") == .rotated)
            #expect(try await rotate(replica, 1, jti: "p1") == .replayedProof)
            #expect(try await store.session(id: "s-dpop")?.generation == 1)
            // A jti spent elsewhere first (the same single-use table) is spent here too.
            try await store.write { $0.consume(.jti("p2", issuer: "dpop:jkt-1", until: 2000), ifUnavailable: Refusal.used) }
            #expect(try await rotate(replica, 1, jti: "p2") == .replayedProof)
            // One proof raced ten times on the two replicas (each presenting the live generation): one rotation.
            let outcomes = await (0..<10).asyncConcurrentCount { index in
                (try? await rotate(pick(index, store, replica), 1, jti: "p3")) == .rotated
            }
            #expect(outcomes == 1)
            #expect(try await store.session(id: "s-dpop")?.generation == 2)
            #expect(try await rotate(store, 2, jti: "p4") == .rotated)
        },
        Check(name: "rotation: live rotates; retry within grace reissues; a dead successor is reuse and the revocation commits") { store, _ in
            let alice = user("alice")
            try await register(store, alice)
            #expect(try await start(store, session("s1", user: alice)) == nil)
            #expect(try await refresh(store, "s1", 0, now: 1001) == (.rotated, 1))
            #expect(try await refresh(store, "s1", 0, now: 1005) == (.reissued, 2))
            #expect(try await refresh(store, "s1", 1, now: 1006) == (.reuseDetected, nil))
            #expect(try await store.session(id: "s1")?.revokedAt == 1006)
            #expect(try await refresh(store, "s1", 2, now: 1007) == (.inactive, nil))
            #expect(try await refresh(store, "nope", 0, now: 1007) == (nil, nil))
        },
        Check(name: "rotation reuse: the revocation and its audit record are one unit; raced on two replicas, every detection recorded once") { store, replica in
            let alice = user("alice")
            try await register(store, alice)
            #expect(try await start(store, session("s1", user: alice)) == nil)
            #expect(try await refresh(store, "s1", 0, now: 1001) == (.rotated, 1))
            #expect(try await refresh(store, "s1", 1, now: 1002) == (.rotated, 2))
            let record: ReuseRecord = { revoked in
                SecurityEvent(
                    id: "reuse-\(revoked.id)-\(revoked.generation)", at: revoked.revokedAt ?? 0, kind: .refreshReuseDetected, actor: "anonymous",
                    userID: revoked.userID, sessionID: revoked.id, clientID: "app", detail: "current=\(revoked.generation)")
            }
            // Generation 0 is two behind: reuse, presented ten times at once on the two replicas.
            let detections = await (0..<10).asyncConcurrentCount { index in
                let rotated = try? await pick(index, store, replica).rotateRefreshToken(
                    sessionID: "s1", presented: 0, clientID: "app", presentedKey: nil, spending: nil, now: 1003, grace: 10, recordingReuse: record)
                return rotated?.0 == .reuseDetected && rotated?.1.revokedAt == 1003
            }
            // The first revokes; presentations deciding after it see an inactive session and record nothing.
            #expect(detections >= 1)
            #expect(try await replica.session(id: "s1")?.revokedAt == 1003)
            let recorded = try await store.auditRecords(matching: AuditQuery(kinds: ["token.reuse_detected"]))
            #expect(recorded.count == detections)
            #expect(recorded.allSatisfy { $0.event.sessionID == "s1" && $0.event.userID == alice.id && $0.event.detail == "current=2" })
            #expect(try await AuditChain().verify(store).verified)
            // A live rotation records nothing.
            #expect(try await start(store, session("s2", user: alice)) == nil)
            #expect(try await store.rotateRefreshToken(sessionID: "s2", presented: 0, clientID: "app", presentedKey: nil, spending: nil, now: 1004, grace: 10, recordingReuse: record)?.0 == .rotated)
            #expect(try await store.auditRecords(matching: AuditQuery(kinds: ["token.reuse_detected"])).count == detections)
        },
        Check(name: "rotation race: 100 concurrent refreshes of one generation on two replicas give one rotation and one live generation") { store, replica in
            let alice = user("alice")
            try await register(store, alice)
            try await start(store, session("s1", user: alice))
            let outcomes = try await withThrowingTaskGroup(of: RefreshRotation.Outcome?.self) { group in
                for index in 0..<100 { group.addTask { try await refresh(pick(index, store, replica), "s1", 0, now: 1001).0 } }
                return try await group.reduce(into: [RefreshRotation.Outcome?]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 == .rotated }.count == 1)
            #expect(outcomes.filter { $0 == .reissued }.count == 99)
            let final = try #require(try await replica.session(id: "s1"))
            #expect(final.generation == 100 && final.retryGeneration == 0 && final.revokedAt == nil)
            #expect(try await refresh(store, "s1", 50, now: 1002) == (.reuseDetected, nil))
        },
        Check(name: "jti: 20 concurrent sign-ins on two replicas with one assertion id open one session; claims are updated with it") { store, replica in
            let alice = user("alice", issuer: "acme")
            try await register(store, alice)
            let started = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<20 {
                    group.addTask {
                        try await start(
                            pick(index, store, replica), session("s\(index)", user: alice), consumes: .jti("same", issuer: "acme", until: 9999),
                            claims: ["tier": "gold"]) == nil ? 1 : 0
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(started == 1)
            #expect(try await store.user(id: alice.id)?.claims == ["tier": "gold"])
            // The same jti from another issuer is a different value.
            #expect(try await start(store, session("other", user: alice), consumes: .jti("same", issuer: "evil", until: 9999)) == nil)
        },
        Check(name: "deleting a user removes keys, registrations and sessions; a sign-in for a deleted user is refused") { store, _ in
            let alice = user("alice")
            try await register(store, alice, registrationID: "reg-1")
            try await start(store, session("s1", user: alice))
            #expect(try await store.deleteUser(id: alice.id))
            #expect(try await store.user(id: alice.id) == nil)
            #expect(try await store.deviceKey(userID: alice.id, keyID: "dk") == nil)
            #expect(try await store.registration(id: "reg-1") == nil)
            #expect(try await store.session(id: "s1") == nil)
            #expect(try await start(store, session("s3", user: alice)) == .missing)
            #expect(try await store.deleteUser(id: alice.id) == false)
        },
        Check(name: "revocation: one session, or every live session of a user, counted once") { store, _ in
            let alice = user("alice")
            try await register(store, alice)
            for index in 0..<3 { try await start(store, session("s\(index)", user: alice)) }
            try await start(store, session("ended", user: alice, lifetime: 10))
            #expect(try await store.revokeSession(id: "s0", at: 1100))
            #expect(try await store.revokeSession(id: "s0", at: 1101) == false)
            #expect(try await store.revokeSessions(userID: alice.id, at: 1200) == 2)
            #expect(try await store.revokeSessions(userID: alice.id, at: 1300) == 0)
            #expect(try await store.session(id: "s0")?.revokedAt == 1100)
            #expect(try await store.session(id: "ended")?.revokedAt == nil)
            let pair = try #require(try await store.sessionWithUser(id: "s1"))
            #expect(pair.0.id == "s1" && pair.1.username == "alice" && pair.0.revokedAt == 1200)
            #expect(try await store.sessionWithUser(id: "nope") == nil)
        },
        Check(name: "housekeeping purges expired jtis and sessions (revoked ones after a day) in bounded batches") { store, _ in
            let alice = user("alice")
            try await register(store, alice, jti: "keep")
            for index in 0..<5 { _ = try await store.consume(.jti("n\(index)", issuer: "latch:sign-in-nonce", until: 100)) }
            try await start(store, session("dead", user: alice, now: 10))
            try await start(store, session("live", user: alice, now: 4000))
            try await start(store, session("revoked", user: alice, now: 4000))
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
            #expect(try await start(store, session("again", user: alice, now: 90_000), consumes: .jti("keep", issuer: "t", until: 99_999)) == nil)
        },
        Check(name: "issuer keys, test registration keys and clients: add once, find, list, delete") { store, _ in
            let issuer = IssuerKey(issuer: "acme", keyID: "k1", key: TestKeys.rsa.publicKey, audience: "aud", allowedClaims: ["c"], maxLifetime: 60, createdAt: 5)
            #expect(try await store.addIssuerKey(issuer))
            #expect(try await store.addIssuerKey(issuer) == false)
            #expect(try await store.addIssuerKey(IssuerKey(issuer: "acme", keyID: "k2", key: TestKeys.p256.publicKey, audience: "aud", allowedClaims: [], maxLifetime: 60, createdAt: 6)))
            #expect(try await store.issuerKey(issuer: "acme", keyID: "k1")?.allowedClaims == ["c"])
            #expect(try await store.issuerKey(issuer: "acme", keyID: "k2")?.key.algorithm == .ES256)
            #expect(try await store.issuerKeys().map(\.keyID) == ["k1", "k2"])
            #expect(try await store.deleteIssuer("acme", keyID: "k2") == 1)
            #expect(try await store.deleteIssuer("acme", keyID: nil) == 1)
            #expect(try await store.issuerKey(issuer: "acme", keyID: "k1") == nil)
            let testKey = TestRegistrationKey(keyID: "register_key", key: TestKeys.rsa.publicKey, createdAt: 5)
            #expect(try await store.addTestRegistrationKey(testKey))
            #expect(try await store.addTestRegistrationKey(testKey) == false)
            #expect(try await store.testRegistrationKey(id: "register_key")?.key.algorithm == .RS256)
            #expect(try await store.testRegistrationKeys().map(\.keyID) == ["register_key"])
            #expect(try await store.deleteTestRegistrationKey(id: "register_key"))
            #expect(try await store.deleteTestRegistrationKey(id: "register_key") == false)
            #expect(try await store.addClient(Client(id: "ios", name: "iOS", createdAt: 1)))
            #expect(try await store.addClient(Client(id: "ios", name: "iOS", createdAt: 1)) == false)
            let alice = user("alice")
            try await register(store, alice)
            try await start(store, session("s1", user: alice, client: "ios"))
            #expect(try await store.deleteClient(id: "ios"))
            #expect(try await store.deleteClient(id: "ios") == false)
            #expect(try await store.session(id: "s1") == nil)
            #expect(try await store.clients().isEmpty)
        },
        Check(name: "signing keys: activating one retires the rest of its algorithm in the same step, not another algorithm's; retired keys are deleted after a cutoff") { store, _ in
            func record(_ id: String, at: Int64, _ algorithm: JWSAlgorithm = .ES256) -> SigningKeyRecord {
                let key = algorithm == .RS256 ? TestKeys.rsa.publicKey : TestKeys.p256.publicKey
                return SigningKeyRecord(keyID: id, algorithm: algorithm, sealedPrivateKey: Data([1]), publicKeyDER: key.derRepresentation, createdAt: at, retiredAt: nil)
            }
            try await store.activateSigningKey(record("a", at: 10))
            try await store.activateSigningKey(record("r", at: 15, .RS256))
            try await store.activateSigningKey(record("b", at: 20))
            var keys = try await store.signingKeys()
            #expect(keys.map(\.keyID) == ["a", "r", "b"])
            #expect(keys.map(\.retiredAt) == [20, nil, nil])
            try await store.activateSigningKey(record("s", at: 30, .RS256))
            keys = try await store.signingKeys()
            #expect(keys.map(\.retiredAt) == [20, 30, nil, nil])
            #expect(try await store.deleteSigningKeys(retiredBefore: 21) == 1)
            #expect(try await store.signingKeys().map(\.keyID) == ["r", "b", "s"])
        },
        Check(name: "admin tokens: stored by id, replaced by id, deleted by id; replicas putting one token at once all succeed") { store, replica in
            // Replicas starting together with the same LATCH_ADMIN_TOKEN.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        try await pick(index, store, replica).putAdminToken(AdminTokenRecord(id: "env", name: "LATCH_ADMIN_TOKEN", hash: Data([9]), createdAt: 1))
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await store.adminTokens().map(\.hash) == [Data([9])])
            try await store.putAdminToken(AdminTokenRecord(id: "env", name: "LATCH_ADMIN_TOKEN", hash: Data([1]), createdAt: 1))
            try await store.putAdminToken(AdminTokenRecord(id: "ci", name: "ci", hash: Data([2]), createdAt: 2))
            try await store.putAdminToken(AdminTokenRecord(id: "env", name: "LATCH_ADMIN_TOKEN", hash: Data([3]), createdAt: 3))
            #expect(try await store.adminTokens().map(\.hash) == [Data([2]), Data([3])])
            #expect(try await store.deleteAdminToken(id: "ci"))
            #expect(try await store.deleteAdminToken(id: "ci") == false)
            #expect(try await store.adminTokens().map(\.id) == ["env"])
        },
        Check(name: "admin tokens: a revocation deletes the token and remembers its hash, in one unit; on every replica") { store, replica in
            let token = AdminTokenRecord(id: "env", name: "LATCH_ADMIN_TOKEN", hash: Data([7, 7]), createdAt: 1)
            try await store.putAdminToken(token)
            #expect(try await store.isRevokedAdminToken(hash: token.hash) == false)
            #expect(try await store.revokeAdminToken(token, at: 5))
            #expect(try await store.adminTokens().isEmpty)
            #expect(try await replica.isRevokedAdminToken(hash: token.hash))
            #expect(try await replica.isRevokedAdminToken(hash: Data([7])) == false)
            // A second revocation of the gone token is refused and changes nothing.
            #expect(try await replica.revokeAdminToken(token, at: 6) == false)
            // A unit that fails after remembering forgets it.
            let other = AdminTokenRecord(id: "ci", name: "ci", hash: Data([8]), createdAt: 2)
            #expect(try await store.revokeAdminToken(other, at: 7) == false)
            #expect(try await store.isRevokedAdminToken(hash: other.hash) == false)
        },
        Check(name: "admin accounts: created once per id and per username ignoring case; listed oldest first; root ensured once") { store, replica in
            let alice = AdminAccount(id: "adm_a", username: "Alice", role: .admin, createdAt: 2, createdBy: AdminAccount.rootID)
            try await store.write { $0.ensureRootAdminAccount(createdAt: 1) }
            try await replica.write { $0.ensureRootAdminAccount(createdAt: 9) }
            #expect(try await store.addAdminAccount(alice))
            #expect(try await replica.addAdminAccount(alice) == false)
            #expect(try await replica.addAdminAccount(AdminAccount(id: "adm_b", username: "ALICE", role: .auditor, createdAt: 3, createdBy: nil)) == false)
            #expect(try await replica.addAdminAccount(AdminAccount(id: "adm_c", username: "root", role: .auditor, createdAt: 3, createdBy: nil)) == false)
            let accounts = try await replica.adminAccounts()
            #expect(accounts == [.root(createdAt: 1), alice])
            // Two replicas racing to create one username (differing in case): exactly one wins.
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        let account = AdminAccount(
                            id: "adm_race\(index)", username: index.isMultiple(of: 2) ? "bob" : "Bob", role: .support, createdAt: 4, createdBy: nil)
                        return try await pick(index, store, replica).addAdminAccount(account)
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(wins == 1)
            #expect(try await store.adminAccounts().filter { $0.usernameKey == "bob" }.count == 1)
        },
        Check(name: "admin passkeys: stored once per credential for an existing account; a use moves the counter once, raced on two replicas; an enrollment ticket is spent once; they go with their account") { store, replica in
            try await store.write { $0.ensureRootAdminAccount(createdAt: 1) }
            #expect(try await store.addAdminAccount(AdminAccount(id: "adm_o", username: "olga", role: .owner, createdAt: 2, createdBy: nil)))
            let passkey = AdminPasskey(
                id: "apk_1", accountID: "adm_o", credentialID: Data([1, 2, 3]), publicKeyCOSE: Data([4, 5]), signCount: 7, aaguid: Data(repeating: 0, count: 16),
                name: "laptop", createdAt: 3)
            try await store.write { $0.insertAdminPasskey(passkey, ifRefused: Refusal.taken) }
            #expect(try await replica.adminPasskey(credentialID: Data([1, 2, 3])) == passkey)
            #expect(try await replica.adminPasskeys(accountID: "adm_o") == [passkey])
            #expect(try await replica.adminPasskeys(accountID: "adm_root").isEmpty)
            // The same credential again (another account even), or an account that does not exist: refused.
            let taken = AdminPasskey(
                id: "apk_2", accountID: "adm_root", credentialID: passkey.credentialID, publicKeyCOSE: passkey.publicKeyCOSE, signCount: 0,
                aaguid: passkey.aaguid, name: "copy", createdAt: 4)
            await #expect(throws: Refusal.taken) { try await replica.write { $0.insertAdminPasskey(taken, ifRefused: Refusal.taken) } }
            let orphan = AdminPasskey(
                id: "apk_3", accountID: "adm_gone", credentialID: Data([9]), publicKeyCOSE: passkey.publicKeyCOSE, signCount: 0, aaguid: passkey.aaguid,
                name: "orphan", createdAt: 4)
            await #expect(throws: Refusal.taken) { try await replica.write { $0.insertAdminPasskey(orphan, ifRefused: Refusal.taken) } }
            // Ten sign-ins with one assertion (counter 7 → 8), half on each replica: one moves the counter.
            let moved = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        do {
                            try await pick(index, store, replica).write {
                                $0.useAdminPasskey(id: "apk_1", signCount: 7, newSignCount: 8, at: 50, ifRaced: Refusal.used)
                            }
                            return true
                        } catch Refusal.used {
                            return false
                        }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(moved == 1)
            let used = try await store.adminPasskey(credentialID: Data([1, 2, 3]))
            #expect(used?.signCount == 8 && used?.lastUsedAt == 50)
            // One enrollment ticket raced ten times, each with its own credential: one passkey is stored.
            let enrolled = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        var candidate = passkey
                        candidate.id = "apk_r\(index)"
                        candidate.credentialID = Data([0xE0, UInt8(index)])
                        do {
                            try await pick(index, store, replica).write { [candidate] transaction in
                                transaction.consume(.jti("ticket-hash", issuer: "latch:admin-enrollment", until: 900), ifUnavailable: Refusal.used)
                                transaction.insertAdminPasskey(candidate, ifRefused: Refusal.taken)
                            }
                            return true
                        } catch Refusal.used {
                            return false
                        }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(enrolled == 1)
            #expect(try await store.isUsed(.jti("ticket-hash", issuer: "latch:admin-enrollment", until: 900)))
            #expect(try await replica.isUsed(.jti("ticket-hash", issuer: "latch:admin-enrollment", until: 900)))
            #expect(try await replica.isUsed(.jti("another", issuer: "latch:admin-enrollment", until: 900)) == false)
            #expect(try await replica.isUsed(.jti("ticket-hash", issuer: "another issuer", until: 900)) == false)
            #expect(try await store.adminPasskeys(accountID: "adm_o").count == 2)
            // Deleting one is the account's own; deleting the account deletes the rest.
            await #expect(throws: Refusal.missing) { try await store.write { $0.deleteAdminPasskey(id: "apk_1", accountID: "adm_root", ifMissing: Refusal.missing) } }
            try await replica.write { $0.deleteAdminPasskey(id: "apk_1", accountID: "adm_o", ifMissing: Refusal.missing) }
            #expect(try await store.adminPasskeys(accountID: "adm_o").count == 1)
            try await replica.write { $0.deleteAdminAccount(id: "adm_o", ifMissing: Refusal.missing, ifLastOwner: Refusal.exists) }
            #expect(try await store.adminPasskeys(accountID: "adm_o").isEmpty)
            #expect(try await store.adminPasskey(credentialID: Data([1, 2, 3])) == nil)
        },
        Check(name: "admin tokens: account, role and expiry round-trip; a token is stored only for an existing account") { store, replica in
            try await store.write { $0.ensureRootAdminAccount(createdAt: 1) }
            #expect(try await store.addAdminAccount(AdminAccount(id: "adm_s", username: "sam", role: .support, createdAt: 2, createdBy: "adm_root")))
            let expiring = AdminTokenRecord(id: "t1", name: "ci", hash: Data([1]), createdAt: 3, accountID: "adm_s", role: .support, expiresAt: 500)
            let forever = AdminTokenRecord(id: "t2", name: "env", hash: Data([2]), createdAt: 4)
            try await store.write { $0.putAdminTokenOfAccount(expiring, ifAccountMissing: Refusal.missing) }
            try await replica.putAdminToken(forever)
            #expect(try await replica.adminTokens() == [expiring, forever])
            #expect(try await replica.adminTokens().first?.isExpired(at: 499) == false)
            #expect(try await replica.adminTokens().first?.isExpired(at: 500) == true)
            let orphan = AdminTokenRecord(id: "t3", name: "x", hash: Data([3]), createdAt: 5, accountID: "adm_gone", role: .auditor)
            await #expect(throws: Refusal.missing) { try await replica.write { $0.putAdminTokenOfAccount(orphan, ifAccountMissing: Refusal.missing) } }
            #expect(try await store.adminTokens().map(\.id) == ["t1", "t2"])
            // Replacing a token by id replaces its account, role and expiry too.
            let replaced = AdminTokenRecord(id: "t1", name: "ci", hash: Data([1]), createdAt: 3, accountID: "adm_root", role: .auditor, expiresAt: nil)
            try await replica.putAdminToken(replaced)
            #expect(try await store.adminTokens().first == replaced)
        },
        Check(name: "housekeeping deletes admin tokens a week past their expiry; tokens without one stay") { store, replica in
            try await store.putAdminToken(AdminTokenRecord(id: "env", name: "env", hash: Data([1]), createdAt: 1))
            try await store.putAdminToken(AdminTokenRecord(id: "t1", name: "a", hash: Data([2]), createdAt: 1, role: .auditor, expiresAt: 100))
            try await store.putAdminToken(AdminTokenRecord(id: "t2", name: "b", hash: Data([3]), createdAt: 1, role: .auditor, expiresAt: 200))
            #expect(try await replica.purgeExpired(now: 100 + adminTokenRetention - 1, limit: 10) == 0)
            #expect(try await replica.purgeExpired(now: 100 + adminTokenRetention, limit: 10) == 1)
            #expect(try await store.adminTokens().map(\.id) == ["env", "t2"])
            #expect(try await replica.purgeExpired(now: 10 * adminTokenRetention, limit: 10) == 1)
            #expect(try await store.adminTokens().map(\.id) == ["env"])
        },
        Check(name: "admin accounts: deleting one deletes its tokens and, in the same unit, what it owns; the last owner stays, even raced on two replicas") { store, replica in
            try await store.write { $0.ensureRootAdminAccount(createdAt: 1) }
            let owner2 = AdminAccount(id: "adm_o", username: "olga", role: .owner, createdAt: 2, createdBy: "adm_root")
            let admin = AdminAccount(id: "adm_a", username: "ann", role: .admin, createdAt: 3, createdBy: "adm_root")
            #expect(try await store.addAdminAccount(owner2))
            #expect(try await store.addAdminAccount(admin))
            try await store.putAdminToken(AdminTokenRecord(id: "t-root", name: "env", hash: Data([1]), createdAt: 1))
            try await store.write { $0.putAdminTokenOfAccount(AdminTokenRecord(id: "t-a", name: "a", hash: Data([2]), createdAt: 4, accountID: "adm_a", role: .admin), ifAccountMissing: Refusal.missing) }
            #expect(try await store.addClient(Client(id: "app", name: "App", createdAt: 1)))
            let mine = SigningCertificate(clientID: "app", sha256: String(repeating: "a", count: 64), owner: "adm_a", createdAt: 5)
            let theirs = SigningCertificate(clientID: "app", sha256: String(repeating: "b", count: 64), owner: "adm_root", createdAt: 5)
            try await store.write {
                $0.insertSigningCertificate(mine, ifTaken: Refusal.taken)
                $0.insertSigningCertificate(theirs, ifTaken: Refusal.taken)
            }
            #expect(try await store.addTestRegistrationKey(TestRegistrationKey(keyID: "k-a", key: TestKeys.rsa.publicKey, createdAt: 5, owner: "adm_a")))
            #expect(try await store.addTestRegistrationKey(TestRegistrationKey(keyID: "k-root", key: TestKeys.rsa.publicKey, createdAt: 5, owner: "adm_root")))
            #expect(try await replica.testRegistrationKey(id: "k-a")?.owner == "adm_a")
            // A refusal later in the unit keeps everything.
            await #expect(throws: Refusal.second) {
                try await replica.write {
                    $0.deleteAdminAccount(id: "adm_a", ifMissing: Refusal.missing, ifLastOwner: Refusal.exists)
                    $0.deleteTestRegistrationKeys(owner: "adm_a")
                    $0.deleteAdminToken(id: "nothing", ifMissing: Refusal.second)
                }
            }
            #expect(try await store.adminAccounts().count == 3)
            #expect(try await store.testRegistrationKeys().count == 2)
            try await replica.write {
                $0.deleteAdminAccount(id: "adm_a", ifMissing: Refusal.missing, ifLastOwner: Refusal.exists)
                $0.deleteTestRegistrationKeys(owner: "adm_a")
                $0.deleteSigningCertificates(owner: "adm_a")
            }
            #expect(try await store.adminAccounts().map(\.id) == ["adm_root", "adm_o"])
            #expect(try await store.adminTokens().map(\.id) == ["t-root"])
            #expect(try await store.testRegistrationKeys().map(\.keyID) == ["k-root"])
            #expect(try await store.signingCertificates() == [theirs])
            await #expect(throws: Refusal.missing) {
                try await store.write { $0.deleteAdminAccount(id: "adm_a", ifMissing: Refusal.missing, ifLastOwner: Refusal.exists) }
            }
            // Two owners left, each deleted at once on another replica: one deletion wins, one owner stays.
            let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for (index, id) in ["adm_root", "adm_o"].enumerated() {
                    group.addTask {
                        do {
                            try await pick(index, store, replica).write { $0.deleteAdminAccount(id: id, ifMissing: Refusal.missing, ifLastOwner: Refusal.exists) }
                            return true
                        } catch Refusal.exists {
                            return false
                        }
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 1)
            #expect(try await store.adminAccounts().filter { $0.role == .owner }.count == 1)
        },
        Check(name: "audit log: recorded with their unit of work, dropped with a refused one, sealed into a chain without gaps; filters") {
            store, replica in
            @Sendable func event(_ id: String, _ kind: SecurityEvent.Kind = .userDeleted, user: String? = "u-alice", at: Int64 = 5, actor: String = "admin:at_1")
                -> SecurityEvent
            {
                SecurityEvent(
                    id: id, at: at, kind: kind, actor: actor, userID: user, clientID: "app", detail: "why", address: "127.0.0.1", userAgent: "ua",
                    requestID: "r1")
            }
            try await store.write { $0.record(event("e1")) }
            await #expect(throws: Refusal.missing) {
                try await store.write { transaction in
                    transaction.record(event("e2"))
                    transaction.deleteUser(id: "nobody", ifMissing: Refusal.missing)
                }
            }
            try await replica.record(event("e3", .signInFailed, user: nil, at: 7, actor: "anonymous"))
            try await store.write { transaction in
                transaction.record(event("e4", .admin("clients", "create"), user: nil, at: 9))
                transaction.record(event("e5", .admin("clients", "delete"), user: "u-bob", at: 11))
            }
            // Written, numbered in order (PostgreSQL's sequence may skip the rolled-back unit's number), not sealed yet.
            let written = try await replica.auditRecords(matching: AuditQuery())
            #expect(written.map(\.event.id) == ["e5", "e4", "e3", "e1"])
            #expect(zip(written, written.dropFirst()).allSatisfy { $0.seq > $1.seq })
            #expect(written.last?.event == event("e1"))
            #expect(written.allSatisfy { $0.position == nil && $0.mac == nil && $0.entryMAC?.count == 32 })
            #expect(try await store.unsealedAudit(after: 0, limit: 10).map(\.event.id) == ["e1", "e3", "e4", "e5"])
            #expect(try await store.auditChain(after: 0, limit: 10).isEmpty)
            let chain = AuditChain()
            let before = try await chain.verify(replica)
            #expect(before.verified && before.checked == 0 && before.unsealed == 4 && before.oldestUnsealedAt == 5)
            // Sealed: positions 1…4 in the order the units committed, each with its chain MAC.
            #expect(try await sealAll(replica) == 4)
            #expect(try await store.sealAudit() ?? 0 == 0)
            let all = try await replica.auditRecords(matching: AuditQuery())
            #expect(all.map(\.position) == [4, 3, 2, 1])
            #expect(all.map(\.seq) == written.map(\.seq))
            #expect(all.allSatisfy { $0.mac?.count == 32 })
            func ids(_ query: AuditQuery) async throws -> [String] { try await store.auditRecords(matching: query).map(\.event.id) }
            #expect(try await ids(AuditQuery(kinds: ["signin.failed"])) == ["e3"])
            #expect(try await ids(AuditQuery(kinds: ["admin."])) == ["e5", "e4"])
            #expect(try await ids(AuditQuery(kinds: ["admin.clients.create", "user.deleted"])) == ["e4", "e1"])
            #expect(try await ids(AuditQuery(kinds: ["admin"])) == [])
            #expect(try await ids(AuditQuery(actor: "anonymous")) == ["e3"])
            #expect(try await ids(AuditQuery(subject: "u-alice")) == ["e1"])
            #expect(try await ids(AuditQuery(since: 7, until: 11)) == ["e4", "e3"])
            #expect(try await ids(AuditQuery(before: all[1].seq, limit: 1)) == ["e3"])
            #expect(try await store.auditChain(after: 1, limit: 2).map(\.position) == [2, 3])
            #expect(try await store.unsealedAudit(after: 0, limit: 10).isEmpty)
            let anchor = try await store.auditAnchor()
            #expect(anchor.anchorSeq == 0 && anchor.headSeq == 4 && anchor.headMAC == all.first?.mac)
            #expect(try await chain.verify(store, pageSize: 3).verified)
            let after = try await chain.verify(store)
            #expect(after.checked == 4 && after.unsealed == 0 && after.oldestUnsealedAt == nil)
            // Another key: nothing verifies.
            let other = AuditChain()
            other.setKey([UInt8](repeating: 9, count: 32))
            #expect(try await other.verify(replica).brokenAt == 1)
        },
        Check(name: "audit log: a record without its entry MAC is sealed as forged and named by verification") { store, replica in
            // Written under one key, sealed under another: to the sealer, the record is not the deployment's (as a row
            // inserted by someone who can write the database but holds no key).
            try await replica.record(SecurityEvent(id: "e1", at: 5, kind: .signInSucceeded, actor: "user", userID: "u-alice"))
            let other = [UInt8](repeating: 7, count: 32)
            let forged = AuditChain()
            forged.setKey(other)
            #expect(try await AuditChain().verify(store).unsealed == 1)
            let refused = try await forged.verify(store)
            #expect(!refused.verified && refused.problem?.contains("unsealed record number") == true)
            store.auditChain.setKey(other)
            defer { store.auditChain.setKey([UInt8](repeating: 0, count: 32)) }
            #expect(try await sealAll(store) == 1)
            let sealed = try await forged.verify(replica)
            #expect(sealed.brokenAt == 1 && sealed.problem?.contains("not written by this deployment") == true)
        },
        Check(name: "audit log: units recording at once on two replicas are sealed once each; purging moves the anchor") { store, replica in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        try await pick(index, store, replica).write { transaction in
                            transaction.record(SecurityEvent(id: "r\(index)", at: Int64(index), kind: .signInSucceeded, actor: "user"))
                            if index.isMultiple(of: 4) {
                                transaction.record(SecurityEvent(id: "s\(index)", at: Int64(index), kind: .loggedOut, actor: "user"))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await sealAll(store, batch: 6) == 20)
            let chain = AuditChain()
            let verified = try await chain.verify(replica, pageSize: 7)
            #expect(verified.verified && verified.checked == 20 && verified.lastSeq == 20)
            let records = try await store.auditChain(after: 0, limit: 100)
            #expect(records.map(\.position) == Array(1...20).map { Int64($0) })
            #expect(Set(records.map(\.event.id)).count == 20)
            // Purging the records before t=8 (a prefix of the chain up to the last one before it) keeps the rest
            // verifiable; the purge's own record is written first and sealed after.
            let cut = records.last { $0.event.at < 8 }!.position!
            let purged = try await replica.write { transaction in
                transaction.record(SecurityEvent(id: "p1", at: 30, kind: .auditPurged, actor: "system"))
                return transaction.purgeAudit(recordedBefore: 8)
            }.value
            #expect(purged == Int(cut))
            #expect(try await sealAll(replica) == 1)
            let anchor = try await store.auditAnchor()
            #expect(anchor.anchorSeq == cut && anchor.headSeq == 21)
            let after = try await chain.verify(store)
            #expect(after.verified && after.anchorSeq == cut && after.checked == 21 - Int(cut))
            // Nothing older: a second purge deletes nothing and keeps the anchor; new records number past the purged.
            #expect(try await store.write { $0.purgeAudit(recordedBefore: 0) }.value == 0)
            #expect(try await store.auditAnchor().anchorSeq == cut)
            try await store.record(SecurityEvent(id: "n1", at: 40, kind: .signInSucceeded, actor: "user"))
            let newest = try await store.auditRecords(matching: AuditQuery(limit: 2))
            #expect(newest.map(\.event.id) == ["n1", "p1"] && newest[0].seq > newest[1].seq)
        },
        Check(name: "audit log: sealed in commit order while writers on two replicas race sealers on both; every record exactly once") {
            store, replica in
            // Each writer records its events one unit after another and notes when each unit began and returned; both
            // replicas seal in small batches all along. A unit that returned before another began must come first in
            // the chain, and every unit's records are sealed once.
            final class Timeline: Sendable {
                let units = Locked<[(id: String, began: ContinuousClock.Instant, returned: ContinuousClock.Instant)]>([])
                let writing = Locked(0)
            }
            let timeline = Timeline()
            let writers = 8
            let unitsPerWriter = 15
            timeline.writing.withLock { $0 = writers }
            let deadline = ContinuousClock.now + .seconds(60)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        defer { timeline.writing.withLock { $0 -= 1 } }
                        for unit in 0..<unitsPerWriter {
                            let id = "w\(writer)-\(unit)"
                            let began = ContinuousClock.now
                            try await pick(writer + unit, store, replica).write { transaction in
                                transaction.record(SecurityEvent(id: id, at: Int64(unit), kind: .signInSucceeded, actor: "user"))
                                if unit.isMultiple(of: 3) {
                                    transaction.record(SecurityEvent(id: id + "b", at: Int64(unit), kind: .loggedOut, actor: "user"))
                                }
                            }
                            let returned = ContinuousClock.now
                            timeline.units.withLock { $0.append((id, began, returned)) }
                        }
                    }
                }
                for (index, sealer) in [store, replica].enumerated() {
                    group.addTask {
                        while timeline.writing.withLock({ $0 }) > 0, ContinuousClock.now < deadline {
                            _ = try await sealer.sealAudit(batch: 3 + index * 2, maximumPasses: 2)
                            try await Task.sleep(for: .milliseconds(1))
                        }
                    }
                }
                try await group.waitForAll()
            }
            _ = try await sealAll(store, batch: 50)
            let total = writers * unitsPerWriter + writers * ((unitsPerWriter + 2) / 3)
            let verified = try await AuditChain().verify(replica)
            #expect(verified.verified && verified.checked == total && verified.unsealed == 0)
            let sealed = try await store.auditChain(after: 0, limit: total + 10)
            #expect(sealed.count == total && Set(sealed.map(\.event.id)).count == total)
            #expect(sealed.map(\.position) == (1...total).map { Int64($0) })
            var position: [String: Int64] = [:]
            for record in sealed { position[record.event.id] = record.position }
            // A unit's two records sit side by side.
            for record in sealed where record.event.id.hasSuffix("b") {
                #expect(position[String(record.event.id.dropLast())].map { $0 + 1 } == record.position)
            }
            let units = timeline.units.withLock { $0 }
            var outOfOrder: [String] = []
            for first in units {
                for second in units where first.returned < second.began {
                    if let a = position[first.id], let b = position[second.id], a > b { outOfOrder.append("\(first.id) before \(second.id)") }
                }
            }
            #expect(outOfOrder.isEmpty, "committed before it began, sealed after: \(outOfOrder.prefix(5))")
        },
        Check(name: "users page by id; custom claims round-trip") { store, _ in
            for name in ["c", "a", "e", "b", "d"] { try await register(store, user(name)) }
            let first = try await store.users(after: nil, limit: 2)
            let second = try await store.users(after: first.last?.id, limit: 2)
            let third = try await store.users(after: second.last?.id, limit: 2)
            #expect((first + second + third).map(\.username) == ["a", "b", "c", "d", "e"])
            let claims: [String: JSONValue] = ["tier": "gold", "n": 3, "list": ["x", true], "nested": ["k": .null]]
            try await store.write { $0.updateClaims(userID: "u-a", claims: claims) }
            #expect(try await store.user(id: "u-a")?.claims == claims)
        },
        Check(name: "attested device keys: stored with type, counter and receipt; found by key id; the counter only grows, once per value across two replicas") { store, replica in
            let alice = User(id: "u-aa", username: "aa", kind: .appAttest, issuer: nil, subject: nil, claims: [:], createdAt: 1)
            let attestation = DeviceKeyAttestation(type: "APP_ATTEST", signCount: 0, receipt: Data([9, 8, 7]))
            try await store.write { transaction in
                transaction.insertUser(alice, ifTaken: Refusal.taken)
                transaction.insertDeviceKey(
                    DeviceKey(userID: alice.id, keyID: "kid=", key: TestKeys.p256.publicKey, createdAt: 1, attestation: attestation), ifTaken: Refusal.taken)
            }
            let (user, key) = try #require(try await replica.attestedDeviceKey(keyID: "kid=", type: "APP_ATTEST"))
            #expect(user.kind == .appAttest && key.attestation == attestation)
            #expect(try await store.attestedDeviceKey(keyID: "kid=", type: "ANDROID_KEY") == nil)
            #expect(try await store.attestedDeviceKey(keyID: "other", type: "APP_ATTEST") == nil)
            // A key registered without attestation is never found as attested, and has no counter to advance.
            try await register(store, StoreConformance.user("plain"))
            #expect(try await store.attestedDeviceKey(keyID: "dk", type: "APP_ATTEST") == nil)
            await #expect(throws: Refusal.used) {
                try await store.write { $0.advanceSignCount(userID: "u-plain", keyID: "dk", to: 1, ifNotGreater: Refusal.used) }
            }
            // 20 concurrent advances to the same value on two replicas: exactly one wins.
            let wins = await (0..<20).asyncConcurrentCount { index in
                (try? await pick(index, store, replica).write { $0.advanceSignCount(userID: alice.id, keyID: "kid=", to: 5, ifNotGreater: Refusal.used) })
                    != nil
            }
            #expect(wins == 1)
            await #expect(throws: Refusal.used) {
                try await store.write { $0.advanceSignCount(userID: alice.id, keyID: "kid=", to: 4, ifNotGreater: Refusal.used) }
            }
            try await replica.write { $0.advanceSignCount(userID: alice.id, keyID: "kid=", to: 6, ifNotGreater: Refusal.used) }
            #expect(try await store.deviceKey(userID: alice.id, keyID: "kid=")?.attestation?.signCount == 6)
        },
        Check(name: "authenticators: credential ids unique across users; renamed and deleted by their user only; counters compare-and-set once across two replicas; gone with their user") { store, replica in
            try await register(store, user("alice"))
            try await register(store, user("bob"))
            @Sendable func authenticator(_ id: String, user: String, credential: UInt8) -> Authenticator {
                Authenticator(
                    id: id, userID: "u-\(user)", credentialID: Data(repeating: credential, count: 32), publicKeyCOSE: Data([0xA0]), signCount: 0,
                    aaguid: Data(count: 16), format: "none", name: "key \(id)", backupEligible: true, createdAt: 10)
            }
            try await store.write { $0.insertAuthenticator(authenticator("a1", user: "alice", credential: 1), ifTaken: Refusal.taken) }
            await #expect(throws: Refusal.taken) {
                try await replica.write { $0.insertAuthenticator(authenticator("b1", user: "bob", credential: 1), ifTaken: Refusal.taken) }
            }
            await #expect(throws: Refusal.taken) {
                try await store.write { $0.insertAuthenticator(authenticator("x1", user: "nobody", credential: 9), ifTaken: Refusal.taken) }
            }
            try await replica.write { $0.insertAuthenticator(authenticator("a2", user: "alice", credential: 2), ifTaken: Refusal.taken) }
            #expect(try await store.authenticators(userID: "u-alice").map(\.id) == ["a1", "a2"])
            let (owner, found) = try #require(try await replica.authenticator(credentialID: Data(repeating: 2, count: 32)))
            #expect(owner.id == "u-alice" && found.id == "a2" && found.backupEligible && found.lastUsedAt == nil)
            #expect(try await store.authenticator(credentialID: Data(repeating: 7, count: 32)) == nil)
            await #expect(throws: Refusal.missing) {
                try await store.write { $0.renameAuthenticator(id: "a1", userID: "u-bob", name: "stolen", ifMissing: Refusal.missing) }
            }
            try await store.write { $0.renameAuthenticator(id: "a1", userID: "u-alice", name: "phone", ifMissing: Refusal.missing) }
            // 20 concurrent uses with counter 3 on two replicas: one wins; counter 0 stays usable when both are 0.
            let wins = await (0..<20).asyncConcurrentCount { index in
                (try? await pick(index, store, replica).write { $0.recordAuthenticatorUse(id: "a1", signCount: 3, failedAttempts: 0, at: 20, ifChanged: Refusal.used) })
                    != nil
            }
            #expect(wins == 1)
            try await store.write { $0.recordAuthenticatorUse(id: "a2", signCount: 0, failedAttempts: 0, at: 21, ifChanged: Refusal.used) }
            let used = try await replica.authenticators(userID: "u-alice")
            #expect(used.map(\.signCount) == [3, 0] && used.map(\.name) == ["phone", "key a2"] && used[1].lastUsedAt == 21)
            await #expect(throws: Refusal.missing) {
                try await store.write { $0.deleteAuthenticator(id: "a2", userID: "u-bob", ifMissing: Refusal.missing) }
            }
            try await store.write { $0.deleteAuthenticator(id: "a2", userID: "u-alice", ifMissing: Refusal.missing) }
            #expect(try await store.deleteUser(id: "u-alice"))
            #expect(try await replica.authenticators(userID: "u-alice").isEmpty)
            #expect(try await store.authenticator(credentialID: Data(repeating: 1, count: 32)) == nil)
        },
        Check(name: "authenticator failures: the last try reserved once across two replicas; a use clears them only unchanged; unlock; key replaced by compare-and-set; delete all") { store, replica in
            try await register(store, user("alice"))
            try await register(store, user("bob"))
            for (id, credential) in [("p1", UInt8(1)), ("p2", 2)] {
                let authenticator = Authenticator(
                    id: id, userID: "u-alice", credentialID: Data(repeating: credential, count: 32), publicKeyCOSE: Data([0xA1, credential]),
                    signCount: 0, aaguid: Data(count: 16), format: "packed", name: id, backupEligible: false, createdAt: 10)
                try await store.write { $0.insertAuthenticator(authenticator, ifTaken: Refusal.taken) }
            }
            // 20 concurrent reservations of a single try on two replicas: exactly one counts.
            let counted = await (0..<20).asyncConcurrentCount { index in
                (try? await pick(index, store, replica).write {
                    $0.reservePinAttempt(id: "p1", maxAttempts: 1, coolDowns: [0], at: 30, ifRefused: Refusal.used)
                }) != nil
            }
            #expect(counted == 1)
            _ = try await replica.write { $0.reservePinAttempt(id: "p1", maxAttempts: 5, coolDowns: [0], at: 31, ifRefused: Refusal.used) }
            let failed = try #require(try await store.authenticators(userID: "u-alice").first)
            #expect(failed.failedAttempts == 2)
            #expect(failed.lastFailedAt == 31)
            // A use that observed another count is refused and changes nothing; one that observed 2 clears it.
            await #expect(throws: Refusal.used) {
                try await store.write { $0.recordAuthenticatorUse(id: "p1", signCount: 0, failedAttempts: 1, at: 40, ifChanged: Refusal.used) }
            }
            #expect(try await replica.authenticators(userID: "u-alice").first?.failedAttempts == 2)
            try await store.write { $0.recordAuthenticatorUse(id: "p1", signCount: 0, failedAttempts: 2, at: 41, ifChanged: Refusal.used) }
            let cleared = try #require(try await replica.authenticators(userID: "u-alice").first)
            #expect(cleared.failedAttempts == 0)
            #expect(cleared.lastFailedAt == nil)
            #expect(cleared.lastUsedAt == 41)
            // Unlock: by the owner's id only.
            _ = try await store.write { $0.reservePinAttempt(id: "p2", maxAttempts: 5, coolDowns: [0], at: 50, ifRefused: Refusal.used) }
            await #expect(throws: Refusal.missing) {
                try await store.write { $0.unlockAuthenticator(id: "p2", userID: "u-bob", ifMissing: Refusal.missing) }
            }
            try await replica.write { $0.unlockAuthenticator(id: "p2", userID: "u-alice", ifMissing: Refusal.missing) }
            #expect(try await store.authenticators(userID: "u-alice").last?.failedAttempts == 0)
            // Key replacement: 20 concurrent on two replicas from the same old key, one wins.
            let replaced = await (0..<20).asyncConcurrentCount { index in
                (try? await pick(index, store, replica).write {
                    $0.replaceAuthenticatorKey(
                        id: "p2", oldPublicKeyCOSE: Data([0xA1, 2]), publicKeyCOSE: Data([0xA1, UInt8(100 + index)]), signCount: 0, at: 60,
                        ifChanged: Refusal.used)
                }) != nil
            }
            #expect(replaced == 1)
            let rekeyed = try #require(try await store.authenticator(credentialID: Data(repeating: 2, count: 32))?.1)
            #expect(rekeyed.publicKeyCOSE != Data([0xA1, 2]))
            #expect(rekeyed.id == "p2")
            // Delete all: the user's only.
            try await register(store, user("carol"))
            try await store.write {
                $0.insertAuthenticator(
                    Authenticator(
                        id: "c1", userID: "u-carol", credentialID: Data(repeating: 9, count: 32), publicKeyCOSE: Data([0xA0]), signCount: 0,
                        aaguid: Data(count: 16), format: "none", name: "c1", backupEligible: true, createdAt: 10), ifTaken: Refusal.taken)
            }
            try await replica.write { $0.deleteAuthenticators(userID: "u-alice") }
            #expect(try await store.authenticators(userID: "u-alice").isEmpty)
            #expect(try await store.authenticators(userID: "u-carol").count == 1)
        },
        Check(name: "PIN attempts reserved before verification: 20 at once on two replicas, exactly maxAttempts succeed; cool-downs refuse; release gives one back; a use clears them") { store, replica in
            try await register(store, user("alice"))
            for (id, credential) in [("r1", UInt8(1)), ("r2", 2)] {
                let authenticator = Authenticator(
                    id: id, userID: "u-alice", credentialID: Data(repeating: credential, count: 32), publicKeyCOSE: Data([0xA1, credential]),
                    signCount: 0, aaguid: Data(count: 16), format: "packed", name: id, backupEligible: false, createdAt: 10)
                try await store.write { $0.insertAuthenticator(authenticator, ifTaken: Refusal.taken) }
            }
            // 20 concurrent reservations, no cool-down, maxAttempts 3: exactly 3 succeed, reporting 1, 2 and 3.
            let counts = Locked<[Int]>([])
            let reserved = await (0..<20).asyncConcurrentCount { index in
                guard let result = try? await pick(index, store, replica).write({
                    $0.reservePinAttempt(id: "r1", maxAttempts: 3, coolDowns: [0], at: 30, ifRefused: Refusal.used)
                }) else { return false }
                counts.withLock { $0.append(result.value) }
                return true
            }
            #expect(reserved == 3)
            #expect(counts.withLock { $0.sorted() } == [1, 2, 3])
            let exhausted = try #require(try await replica.authenticator(credentialID: Data(repeating: 1, count: 32))?.1)
            #expect(exhausted.failedAttempts == 3 && exhausted.lastFailedAt == 30)
            // Released: one attempt back; a use that read the count clears it.
            try await replica.write { $0.releasePinAttempt(id: "r1") }
            #expect(try await store.write { $0.reservePinAttempt(id: "r1", maxAttempts: 3, coolDowns: [0], at: 31, ifRefused: Refusal.used) }.value == 3)
            try await store.write { $0.recordAuthenticatorUse(id: "r1", signCount: 0, failedAttempts: 3, at: 32, ifChanged: Refusal.used) }
            #expect(try await replica.authenticators(userID: "u-alice").first?.failedAttempts == 0)
            // A verified PIN attempt (failedAttempts nil) clears whatever count concurrent reservations left.
            #expect(try await store.write { $0.reservePinAttempt(id: "r1", maxAttempts: 3, coolDowns: [0], at: 33, ifRefused: Refusal.used) }.value == 1)
            #expect(try await replica.write { $0.reservePinAttempt(id: "r1", maxAttempts: 3, coolDowns: [0], at: 33, ifRefused: Refusal.used) }.value == 2)
            try await store.write { $0.recordAuthenticatorUse(id: "r1", signCount: 0, failedAttempts: nil, at: 34, ifChanged: Refusal.used) }
            #expect(try await replica.authenticators(userID: "u-alice").first?.failedAttempts == 0)
            // Cool-downs: after the 1st failure 0 s, after the 2nd 10 s; refused inside it (nothing changes), allowed after.
            #expect(try await store.write { $0.reservePinAttempt(id: "r2", maxAttempts: 5, coolDowns: [0, 10], at: 40, ifRefused: Refusal.used) }.value == 1)
            #expect(try await replica.write { $0.reservePinAttempt(id: "r2", maxAttempts: 5, coolDowns: [0, 10], at: 40, ifRefused: Refusal.used) }.value == 2)
            await #expect(throws: Refusal.used) {
                try await store.write { $0.reservePinAttempt(id: "r2", maxAttempts: 5, coolDowns: [0, 10], at: 49, ifRefused: Refusal.used) }
            }
            let cooling = try #require(try await store.authenticator(credentialID: Data(repeating: 2, count: 32))?.1)
            #expect(cooling.failedAttempts == 2 && cooling.lastFailedAt == 40)
            #expect(try await replica.write { $0.reservePinAttempt(id: "r2", maxAttempts: 5, coolDowns: [0, 10], at: 50, ifRefused: Refusal.used) }.value == 3)
            await #expect(throws: Refusal.used) {
                try await store.write { $0.reservePinAttempt(id: "missing", maxAttempts: 5, coolDowns: [0], at: 60, ifRefused: Refusal.used) }
            }
        },
        Check(name: "PIN binding keys are kept (both reads, a PIN change keeps them); an unbound reservation never locks, its last cool-down repeats") { store, replica in
            try await register(store, user("alice"))
            let binding = Data([0x04] + [UInt8](repeating: 0x5A, count: 64))
            for (id, credential, key) in [("b1", UInt8(1), binding as Data?), ("u1", 2, nil)] {
                let authenticator = Authenticator(
                    id: id, userID: "u-alice", credentialID: Data(repeating: credential, count: 32), publicKeyCOSE: Data([0xA1, credential]),
                    signCount: 0, aaguid: Data(count: 16), format: "packed", name: id, backupEligible: false, createdAt: 10, pinBindingKey: key)
                try await store.write { $0.insertAuthenticator(authenticator, ifTaken: Refusal.taken) }
            }
            #expect(try await replica.authenticator(credentialID: Data(repeating: 1, count: 32))?.1.pinBindingKey == binding)
            #expect(try await replica.authenticators(userID: "u-alice").map(\.pinBindingKey) == [binding, nil])
            try await store.write {
                $0.replaceAuthenticatorKey(id: "b1", oldPublicKeyCOSE: Data([0xA1, 1]), publicKeyCOSE: Data([0xA1, 9]), signCount: 0, at: 20, ifChanged: Refusal.used)
            }
            #expect(try await replica.authenticator(credentialID: Data(repeating: 1, count: 32))?.1.pinBindingKey == binding)
            // An unbound authenticator's reservations run under an unreachable limit: past any maxAttempts, refused only
            // while a cool-down runs — after the 1st failure 0 s, then 10 s, and 10 s again past the list's end.
            let limit = Int(Int32.max)
            var at: Int64 = 100
            for expected in 1...8 {
                let now = at
                #expect(try await pick(expected, store, replica).write {
                    $0.reservePinAttempt(id: "u1", maxAttempts: limit, coolDowns: [0, 10], at: now, ifRefused: Refusal.used)
                }.value == expected)
                if expected >= 2 {
                    let early = at + 9
                    await #expect(throws: Refusal.used) {
                        try await store.write { $0.reservePinAttempt(id: "u1", maxAttempts: limit, coolDowns: [0, 10], at: early, ifRefused: Refusal.used) }
                    }
                    at += 10
                }
            }
            let unbound = try #require(try await store.authenticator(credentialID: Data(repeating: 2, count: 32))?.1)
            #expect(unbound.failedAttempts == 8 && unbound.pinBindingKey == nil)
        },
        Check(name: "out-of-band transactions: token hashes unique; redeemed once across two replicas, never after expiry; completed once; gone with their user") { store, replica in
            try await register(store, user("alice"))
            @Sendable func transaction(_ id: String, user: String = "alice", token: UInt8, expiresAt: Int64 = 500) -> OutOfBandTransaction {
                OutOfBandTransaction(
                    id: id, userID: "u-\(user)", operation: .authentication, tokenHash: Data(repeating: token, count: 32),
                    statusTokenHash: Data(repeating: token &+ 100, count: 32), message: "Pay 10 € to Bob?", state: .pending, requestedBy: "admin",
                    createdAt: 100, expiresAt: expiresAt)
            }
            try await store.write { $0.insertOutOfBandTransaction(transaction("t1", token: 1), ifTaken: Refusal.taken) }
            await #expect(throws: Refusal.taken) {
                try await replica.write { $0.insertOutOfBandTransaction(transaction("t2", token: 1), ifTaken: Refusal.taken) }
            }
            await #expect(throws: Refusal.taken) {
                try await store.write { $0.insertOutOfBandTransaction(transaction("t3", user: "nobody", token: 3), ifTaken: Refusal.taken) }
            }
            #expect(try await replica.outOfBandTransaction(tokenHash: Data(repeating: 1, count: 32)) == transaction("t1", token: 1))
            #expect(try await replica.outOfBandTransaction(statusTokenHash: Data(repeating: 101, count: 32))?.id == "t1")
            #expect(try await store.outOfBandTransaction(id: "t1")?.message == "Pay 10 € to Bob?")
            #expect(try await store.outOfBandTransaction(tokenHash: Data(repeating: 9, count: 32)) == nil)
            // Completing before redeeming is refused; 20 concurrent redeems on two replicas: one wins.
            await #expect(throws: Refusal.used) {
                try await store.write { $0.completeOutOfBandTransaction(id: "t1", state: .approved, authenticatorID: "a1", at: 150, ifUnavailable: Refusal.used) }
            }
            let wins = await (0..<20).asyncConcurrentCount { index in
                (try? await pick(index, store, replica).write { $0.redeemOutOfBandTransaction(id: "t1", at: 200, ifUnavailable: Refusal.used) }) != nil
            }
            #expect(wins == 1)
            // Completed once (concurrently too), with the authenticator.
            let completions = await (0..<10).asyncConcurrentCount { index in
                (try? await pick(index, store, replica).write {
                    $0.completeOutOfBandTransaction(id: "t1", state: .approved, authenticatorID: "a1", at: 210, ifUnavailable: Refusal.used)
                }) != nil
            }
            #expect(completions == 1)
            let done = try #require(try await replica.outOfBandTransaction(id: "t1"))
            #expect(done.state == .approved && done.redeemedAt == 200 && done.completedAt == 210 && done.authenticatorID == "a1")
            // An expired one is not redeemed.
            try await store.write { $0.insertOutOfBandTransaction(transaction("t4", token: 4, expiresAt: 300), ifTaken: Refusal.taken) }
            await #expect(throws: Refusal.used) {
                try await replica.write { $0.redeemOutOfBandTransaction(id: "t4", at: 300, ifUnavailable: Refusal.used) }
            }
            #expect(try await store.outOfBandTransaction(id: "t4")?.state == .pending)
            // Housekeeping keeps them a week past expiry (status answers until then), then deletes them.
            _ = try await replica.purgeExpired(now: 300 + outOfBandRetention - 1, limit: 100)
            #expect(try await store.outOfBandTransaction(id: "t4") != nil)
            var rounds = 0
            while try await replica.purgeExpired(now: 500 + outOfBandRetention, limit: 1) > 0, rounds < 20 { rounds += 1 }
            #expect(try await store.outOfBandTransaction(id: "t4") == nil)
            #expect(try await store.outOfBandTransaction(id: "t1") == nil)
            try await store.write { $0.insertOutOfBandTransaction(transaction("t5", token: 5, expiresAt: 900), ifTaken: Refusal.taken) }
            #expect(try await store.deleteUser(id: "u-alice"))
            #expect(try await replica.outOfBandTransaction(id: "t5") == nil)
        },
        Check(name: "client evidence and signing certificates: stored, replaced, owned; deleting an owner or the client removes them") { store, replica in
            #expect(try await store.addClient(Client(id: "app", name: "App", createdAt: 1)))
            #expect(try await store.clients().first?.evidence == ClientEvidence())
            let evidence = ClientEvidence(
                ios: .init(appIds: ["TEAM.com.example"], appAttestEnvironment: "production"),
                android: .init(packageNames: ["com.example"], playIntegrity: .init(sealedDecryptionKey: "c2VhbGVk", verificationKey: "a2V5")))
            try await store.write { $0.updateClientEvidence(id: "app", evidence: evidence, ifMissing: Refusal.missing) }
            #expect(try await replica.clients().first?.evidence == evidence)
            await #expect(throws: Refusal.missing) {
                try await store.write { $0.updateClientEvidence(id: "nobody", evidence: evidence, ifMissing: Refusal.missing) }
            }
            let first = SigningCertificate(clientID: "app", sha256: String(repeating: "a", count: 64), owner: "t1", createdAt: 2)
            let second = SigningCertificate(clientID: "app", sha256: String(repeating: "b", count: 64), owner: "t2", createdAt: 3)
            try await store.write { $0.insertSigningCertificate(first, ifTaken: Refusal.taken) }
            try await replica.write { $0.insertSigningCertificate(second, ifTaken: Refusal.taken) }
            await #expect(throws: Refusal.taken) { try await store.write { $0.insertSigningCertificate(first, ifTaken: Refusal.taken) } }
            let orphan = SigningCertificate(clientID: "nobody", sha256: first.sha256, owner: "t1", createdAt: 2)
            await #expect(throws: Refusal.taken) { try await store.write { $0.insertSigningCertificate(orphan, ifTaken: Refusal.taken) } }
            #expect(try await store.signingCertificates() == [first, second])
            try await store.write { $0.deleteSigningCertificates(owner: "t1") }
            #expect(try await replica.signingCertificates() == [second])
            await #expect(throws: Refusal.missing) {
                try await store.write { $0.deleteSigningCertificate(clientID: "app", sha256: first.sha256, ifMissing: Refusal.missing) }
            }
            try await store.write { $0.insertSigningCertificate(first, ifTaken: Refusal.taken) }
            try await store.write { $0.deleteSigningCertificate(clientID: "app", sha256: first.sha256, ifMissing: Refusal.missing) }
            #expect(try await store.deleteClient(id: "app"))
            #expect(try await store.signingCertificates().isEmpty)
        },
        Check(name: "login issuers: stored as given (static keys or a JWKS URL, scopes in order), listed by id; an id is taken once; deleted once") { store, replica in
            let bank = LoginIssuer(
                id: "bank", audience: "https://latch.example/issuers/bank",
                keysJSON: #"[{"kid":"k1","algorithm":"ES256","publicKey":"-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----\n"}]"#,
                jwksURL: nil, maxTokenLifetime: 300, allowedScopes: ["payments", "accounts", "profil-é"], customFederation: true, createdAt: 7)
            let acme = LoginIssuer(
                id: "acme", audience: "aud", keysJSON: "[]", jwksURL: "https://acme.example/.well-known/jwks.json", maxTokenLifetime: 60,
                allowedScopes: [], customFederation: false, createdAt: 8)
            try await store.write { $0.insertLoginIssuer(bank, ifTaken: Refusal.taken) }
            #expect(try await replica.addLoginIssuer(acme))
            #expect(try await replica.loginIssuer(id: "bank") == bank)
            #expect(try await store.loginIssuer(id: "acme") == acme)
            #expect(try await store.loginIssuer(id: "nobody") == nil)
            #expect(try await replica.loginIssuers() == [acme, bank])
            let twin = LoginIssuer(
                id: "bank", audience: acme.audience, keysJSON: acme.keysJSON, jwksURL: acme.jwksURL, maxTokenLifetime: acme.maxTokenLifetime,
                allowedScopes: acme.allowedScopes, customFederation: acme.customFederation, createdAt: acme.createdAt)
            #expect(try await replica.addLoginIssuer(twin) == false)
            await #expect(throws: Refusal.taken) { try await store.write { $0.insertLoginIssuer(twin, ifTaken: Refusal.taken) } }
            #expect(try await store.loginIssuer(id: "bank") == bank)
            #expect(try await store.write { $0.deleteLoginIssuer(id: "bank") }.value == 1)
            #expect(try await replica.write { $0.deleteLoginIssuer(id: "bank") }.value == 0)
            #expect(try await replica.removeLoginIssuer(id: "acme"))
            #expect(try await store.removeLoginIssuer(id: "acme") == false)
            #expect(try await store.loginIssuers().isEmpty)
        },
        Check(name: "resource servers: stored with their secret's hash, listed by id; an id is taken once; deleted once") { store, replica in
            let gateway = ResourceServer(id: "lrs_gateway", name: "API gateway", secretHash: Data((0..<32).map { UInt8($0) }), createdAt: 3)
            let ledger = ResourceServer(id: "lrs_ledger", name: "Ledger", secretHash: Data(repeating: 0xAB, count: 32), createdAt: 4)
            try await replica.write { $0.insertResourceServer(ledger, ifTaken: Refusal.taken) }
            #expect(try await store.addResourceServer(gateway))
            #expect(try await replica.resourceServer(id: "lrs_gateway") == gateway)
            #expect(try await store.resourceServer(id: "lrs_nobody") == nil)
            #expect(try await store.resourceServers() == [gateway, ledger])
            let twin = ResourceServer(id: "lrs_ledger", name: "Other", secretHash: Data([1]), createdAt: 5)
            #expect(try await store.addResourceServer(twin) == false)
            await #expect(throws: Refusal.taken) { try await replica.write { $0.insertResourceServer(twin, ifTaken: Refusal.taken) } }
            #expect(try await store.resourceServer(id: "lrs_ledger") == ledger)
            #expect(try await replica.write { $0.deleteResourceServer(id: "lrs_ledger") }.value == 1)
            #expect(try await store.write { $0.deleteResourceServer(id: "lrs_ledger") }.value == 0)
            #expect(try await store.removeResourceServer(id: "lrs_gateway"))
            #expect(try await replica.removeResourceServer(id: "lrs_gateway") == false)
            #expect(try await replica.resourceServers().isEmpty)
        },
        Check(name: "session consumers: added with their session, read sorted; a pair held already stays as it is; gone with their session's user, app or purge") { store, replica in
            let alice = user("alice")
            try await register(store, alice)
            let bank1 = ConsumerPair(issuer: "bank", consumer: "c-1")
            let bank2 = ConsumerPair(issuer: "bank", consumer: "c-2")
            let bank3 = ConsumerPair(issuer: "bank", consumer: "c-3")
            let acme = ConsumerPair(issuer: "acme", consumer: "z")
            try await store.write { transaction in
                transaction.insertSession(session("s1", user: alice))
                transaction.insertSessionConsumers(sessionID: "s1", [bank2, acme, bank1], at: 1000)
            }
            #expect(try await replica.sessionConsumers(sessionID: "s1") == [acme, bank1, bank2])
            #expect(try await store.sessionConsumers(sessionID: "nope").isEmpty)
            // Pairs held already (or twice in one list) are left as they are; new ones are added.
            try await replica.write { $0.insertSessionConsumers(sessionID: "s1", [bank2, bank3, bank3], at: 1100) }
            try await store.write { $0.insertSessionConsumers(sessionID: "s1", [acme], at: 1200) }
            #expect(try await store.sessionConsumers(sessionID: "s1") == [acme, bank1, bank2, bank3])
            // A refused unit keeps neither its session nor its pairs.
            await #expect(throws: Refusal.missing) {
                try await store.write { transaction in
                    transaction.insertSession(session("s2", user: alice))
                    transaction.insertSessionConsumers(sessionID: "s2", [bank1], at: 1000)
                    transaction.requireUser(id: "nobody", ifMissing: Refusal.missing)
                }
            }
            #expect(try await store.session(id: "s2") == nil)
            #expect(try await replica.sessionConsumers(sessionID: "s2").isEmpty)
            // Purged with their session.
            try await store.write { transaction in
                transaction.insertSession(session("short", user: alice, lifetime: 10))
                transaction.insertSessionConsumers(sessionID: "short", [bank1], at: 1000)
            }
            var rounds = 0
            while try await replica.purgeExpired(now: 2000, limit: 100) > 0, rounds < 20 { rounds += 1 }
            #expect(try await store.session(id: "short") == nil)
            #expect(try await store.sessionConsumers(sessionID: "short").isEmpty)
            #expect(try await store.sessionConsumers(sessionID: "s1").count == 4)
            // Deleted with their app's sessions.
            #expect(try await store.addClient(Client(id: "ios", name: "iOS", createdAt: 1)))
            try await store.write { transaction in
                transaction.insertSession(session("s3", user: alice, client: "ios"))
                transaction.insertSessionConsumers(sessionID: "s3", [bank1], at: 1000)
            }
            #expect(try await replica.deleteClient(id: "ios"))
            #expect(try await store.sessionConsumers(sessionID: "s3").isEmpty)
            // Deleted with their user's sessions.
            #expect(try await replica.deleteUser(id: alice.id))
            #expect(try await store.session(id: "s1") == nil)
            #expect(try await store.sessionConsumers(sessionID: "s1").isEmpty)
        },
        Check(name: "renewing a login moves a live session's auth time and end (housekeeping follows); refused, writing nothing, when revoked, ended or unknown") { store, replica in
            let alice = user("alice")
            try await register(store, alice)
            try await start(store, session("s1", user: alice))
            try await replica.write { $0.renewLogin(sessionID: "s1", authTime: 2000, expiresAt: 5600, ifUnavailable: Refusal.used) }
            var renewed = session("s1", user: alice)
            renewed.authTime = 2000
            renewed.expiresAt = 5600
            #expect(try await store.session(id: "s1") == renewed)
            // Housekeeping purges it at its new end, not the old one.
            _ = try await store.purgeExpired(now: 5000, limit: 100)
            #expect(try await replica.session(id: "s1") == renewed)
            // Ended at the new login's time: refused, and the unit's earlier writes with it.
            await #expect(throws: Refusal.used) {
                try await store.write { transaction in
                    transaction.insertSessionConsumers(sessionID: "s1", [ConsumerPair(issuer: "bank", consumer: "c-1")], at: 5600)
                    transaction.renewLogin(sessionID: "s1", authTime: 5600, expiresAt: 9000, ifUnavailable: Refusal.used)
                }
            }
            #expect(try await store.session(id: "s1") == renewed)
            #expect(try await store.sessionConsumers(sessionID: "s1").isEmpty)
            // Revoked: refused.
            try await start(store, session("s2", user: alice))
            #expect(try await store.revokeSession(id: "s2", at: 1500))
            await #expect(throws: Refusal.used) {
                try await replica.write { $0.renewLogin(sessionID: "s2", authTime: 1600, expiresAt: 5200, ifUnavailable: Refusal.used) }
            }
            var revoked = session("s2", user: alice)
            revoked.revokedAt = 1500
            #expect(try await store.session(id: "s2") == revoked)
            await #expect(throws: Refusal.used) {
                try await store.write { $0.renewLogin(sessionID: "nope", authTime: 1600, expiresAt: 5200, ifUnavailable: Refusal.used) }
            }
        },
        Check(name: "revoking the sessions holding any of some pairs: every live one, on every device and user, counted once; others stay") { store, replica in
            let alice = user("alice")
            let bob = user("bob")
            try await register(store, alice)
            try await register(store, bob)
            let a = ConsumerPair(issuer: "bank", consumer: "c-1")
            let b = ConsumerPair(issuer: "bank", consumer: "c-2")
            // The same consumer id at another issuer is another pair.
            let other = ConsumerPair(issuer: "acme", consumer: "c-1")
            @Sendable func open(_ sid: String, _ owner: User, _ pairs: [ConsumerPair], lifetime: Int64 = 3600) async throws {
                try await store.write { transaction in
                    transaction.insertSession(session(sid, user: owner, lifetime: lifetime))
                    transaction.insertSessionConsumers(sessionID: sid, pairs, at: 1000)
                }
            }
            try await open("alice-phone", alice, [a])
            try await open("alice-tablet", alice, [b, a])
            try await open("bob-phone", bob, [a])
            try await open("bob-tablet", bob, [b])
            try await open("bob-laptop", bob, [other])
            try await open("ended", alice, [a], lifetime: 10)
            try await open("revoked", alice, [a])
            #expect(try await store.revokeSession(id: "revoked", at: 1050))
            #expect(try await replica.write { $0.revokeSessions(holdingAny: [a], at: 1100) }.value == 3)
            for sid in ["alice-phone", "alice-tablet", "bob-phone"] { #expect(try await store.session(id: sid)?.revokedAt == 1100, "\(sid)") }
            for sid in ["bob-tablet", "bob-laptop", "ended"] { #expect(try await store.session(id: sid)?.revokedAt == nil, "\(sid)") }
            #expect(try await store.session(id: "revoked")?.revokedAt == 1050)
            #expect(try await store.write { $0.revokeSessions(holdingAny: [a], at: 1200) }.value == 0)
            #expect(try await store.write { $0.revokeSessions(holdingAny: [], at: 1200) }.value == 0)
            #expect(try await store.write { $0.revokeSessions(holdingAny: [ConsumerPair(issuer: "nobody", consumer: "c-1")], at: 1200) }.value == 0)
            #expect(try await replica.write { $0.revokeSessions(holdingAny: [a, b], at: 1300) }.value == 1)
            #expect(try await store.session(id: "bob-tablet")?.revokedAt == 1300)
            #expect(try await store.session(id: "bob-laptop")?.revokedAt == nil)
            // A long list (a batch of 256 pairs) finds the one it holds.
            let many = (0..<255).map { ConsumerPair(issuer: "bank", consumer: "x-\($0)") } + [other]
            #expect(try await store.write { $0.revokeSessions(holdingAny: many, at: 1400) }.value == 1)
            #expect(try await replica.session(id: "bob-laptop")?.revokedAt == 1400)
        },
        Check(name: "issuer login race: 10 concurrent logins with one token on two replicas open one session with its consumers") { store, replica in
            let alice = user("alice")
            try await register(store, alice)
            let opened = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        do {
                            try await pick(index, store, replica).write { transaction in
                                transaction.consume(.jti("same", issuer: "login-issuer", until: 9999), ifUnavailable: Refusal.used)
                                transaction.insertSession(session("s\(index)", user: alice))
                                transaction.insertSessionConsumers(
                                    sessionID: "s\(index)", [ConsumerPair(issuer: "login-issuer", consumer: "c-\(index)")], at: 1000)
                            }
                            return 1
                        } catch Refusal.used {
                            return 0
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(opened == 1)
            var withConsumers = 0
            for index in 0..<10 {
                let consumers = try await replica.sessionConsumers(sessionID: "s\(index)")
                if try await store.session(id: "s\(index)") != nil {
                    #expect(consumers == [ConsumerPair(issuer: "login-issuer", consumer: "c-\(index)")])
                    withConsumers += 1
                } else {
                    #expect(consumers.isEmpty)
                }
            }
            #expect(withConsumers == 1)
        },
        Check(name: "users: an issuer-login principal round-trips and is found by its issuer and consumer id, apart from Latch's own names") { store, replica in
            let principal = User(id: "u-login", username: "c-1", kind: .issuerLogin, issuer: "login:bank", subject: "c-1", claims: [:], createdAt: 5)
            try await store.write { $0.insertUser(principal, ifTaken: Refusal.taken) }
            #expect(try await replica.user(id: "u-login") == principal)
            #expect(try await replica.federatedUser(issuer: "login:bank", subject: "c-1") == principal)
            #expect(try await store.users(after: nil, limit: 10) == [principal])
            // Not one of Latch's own usernames, nor the custom federated issuer "bank"'s identity.
            #expect(try await store.user(username: "c-1") == nil)
            #expect(try await store.federatedUser(issuer: "bank", subject: "c-1") == nil)
            // The same consumer id at another login issuer is another principal; the same pair again is taken.
            let elsewhere = User(id: "u-login-2", username: "c-1", kind: .issuerLogin, issuer: "login:acme", subject: "c-1", claims: [:], createdAt: 6)
            try await replica.write { $0.insertUser(elsewhere, ifTaken: Refusal.taken) }
            let twin = User(id: "u-login-3", username: "c-1", kind: .issuerLogin, issuer: "login:bank", subject: "c-1", claims: [:], createdAt: 7)
            await #expect(throws: Refusal.taken) { try await store.write { $0.insertUser(twin, ifTaken: Refusal.taken) } }
            #expect(try await store.federatedUser(issuer: "login:acme", subject: "c-1")?.kind == .issuerLogin)
        },
        Check(name: "custom providers: stored as given, listed by id; an id is taken once; updated but for id and creation time, refused when missing; deleted once, with their transactions") { store, replica in
            let sms = customProvider("sms")
            let invite = {
                var provider = customProvider("invite", flow: .oneStep, enabled: false, createdAt: 20)
                provider.allowedClaims = []
                provider.hookURL = "http://10.0.0.7:8080/invite"
                return provider
            }()
            try await store.write { $0.insertCustomProvider(sms, ifTaken: Refusal.taken) }
            try await replica.write { $0.insertCustomProvider(invite, ifTaken: Refusal.taken) }
            #expect(try await replica.customProvider(id: "sms") == sms)
            #expect(try await store.customProvider(id: "invite") == invite)
            #expect(try await store.customProvider(id: "nobody") == nil)
            #expect(try await replica.customProviders() == [invite, sms])
            // An id is taken once.
            await #expect(throws: Refusal.taken) {
                try await replica.write { $0.insertCustomProvider(customProvider("sms", flow: .oneStep, createdAt: 30), ifTaken: Refusal.taken) }
            }
            #expect(try await store.customProvider(id: "sms") == sms)
            // An update replaces every mutable field; the id and creation time stay.
            let changed = {
                var provider = sms
                provider.name = "SMS code"
                provider.flow = .oneStep
                provider.hookURL = "https://sms.example/hook"
                provider.sealedSecret = Data(repeating: 7, count: 40)
                provider.timeout = 9
                provider.retries = 0
                provider.transactionLifetime = 120
                provider.allowedClaims = ["phone_number"]
                provider.enabled = false
                provider.updatedAt = 50
                return provider
            }()
            let sent = {
                var provider = changed
                provider.createdAt = 999
                return provider
            }()
            try await replica.write { $0.updateCustomProvider(sent, ifMissing: Refusal.missing) }
            #expect(try await store.customProvider(id: "sms") == changed)
            // Updating a missing one is refused, and the unit's earlier writes with it.
            await #expect(throws: Refusal.missing) {
                try await store.write { transaction in
                    transaction.insertCustomProvider(customProvider("other"), ifTaken: Refusal.taken)
                    transaction.updateCustomProvider(customProvider("ghost"), ifMissing: Refusal.missing)
                }
            }
            #expect(try await store.customProvider(id: "other") == nil)
            #expect(try await replica.customProvider(id: "ghost") == nil)
            // Deleted once, with its transactions (not another provider's).
            try await store.write { $0.insertCustomTransaction(customTransaction("ct-1", provider: "sms"), ifTaken: Refusal.taken) }
            try await store.write { $0.insertCustomTransaction(customTransaction("ct-2", provider: "invite"), ifTaken: Refusal.taken) }
            #expect(try await replica.write { $0.deleteCustomProvider(id: "sms") }.value == 1)
            #expect(try await store.write { $0.deleteCustomProvider(id: "sms") }.value == 0)
            #expect(try await store.customProvider(id: "sms") == nil)
            #expect(try await replica.customTransaction(id: "ct-1") == nil)
            #expect(try await replica.customTransactionCounts(providerID: "sms").isEmpty)
            #expect(try await store.customTransaction(id: "ct-2") == customTransaction("ct-2", provider: "invite"))
            #expect(try await store.customProviders() == [invite])
            await #expect(throws: Refusal.missing) {
                try await replica.write { $0.updateCustomProvider(changed, ifMissing: Refusal.missing) }
            }
        },
        Check(name: "custom transactions: stored as given, only for a known provider, an id taken once; attempts counted (with the last status) only while open and unexpired") { store, replica in
            try await store.write { $0.insertCustomProvider(customProvider("sms"), ifTaken: Refusal.taken) }
            let open = customTransaction("ct-1")
            try await store.write { $0.insertCustomTransaction(open, ifTaken: Refusal.taken) }
            #expect(try await replica.customTransaction(id: "ct-1") == open)
            #expect(try await replica.customTransaction(id: "nope") == nil)
            // Every field round-trips, the optional ones too.
            let done = CustomTransaction(
                id: "ct-done", providerID: "sms", clientID: "ios", state: .completed, initData: nil, attempts: 3, lastStatus: 2001, userID: "u-x",
                registrationID: "reg-1", createdAt: 50, expiresAt: 650, finishedAt: 60)
            try await replica.write { $0.insertCustomTransaction(done, ifTaken: Refusal.taken) }
            #expect(try await store.customTransaction(id: "ct-done") == done)
            let bare = {
                var transaction = customTransaction("ct-bare")
                transaction.initData = nil
                transaction.attempts = 0
                transaction.lastStatus = nil
                return transaction
            }()
            try await store.write { $0.insertCustomTransaction(bare, ifTaken: Refusal.taken) }
            #expect(try await replica.customTransaction(id: "ct-bare") == bare)
            // An id is taken once; a transaction needs its provider.
            await #expect(throws: Refusal.taken) {
                try await replica.write { $0.insertCustomTransaction(customTransaction("ct-1", client: "other"), ifTaken: Refusal.taken) }
            }
            await #expect(throws: Refusal.taken) {
                try await store.write { $0.insertCustomTransaction(customTransaction("ct-9", provider: "nobody"), ifTaken: Refusal.taken) }
            }
            #expect(try await store.customTransaction(id: "ct-1") == open)
            #expect(try await store.customTransaction(id: "ct-9") == nil)
            // Attempts are counted with the status the hook answered (none when it did not answer).
            try await replica.write { $0.recordCustomAttempt(id: "ct-1", status: 4001, at: 200, ifUnavailable: Refusal.used) }
            try await store.write { $0.recordCustomAttempt(id: "ct-1", status: nil, at: 300, ifUnavailable: Refusal.used) }
            var counted = open
            counted.attempts = 3
            counted.lastStatus = nil
            #expect(try await replica.customTransaction(id: "ct-1") == counted)
            try await store.write { $0.recordCustomAttempt(id: "ct-1", status: 4002, at: 699, ifUnavailable: Refusal.used) }
            counted.attempts = 4
            counted.lastStatus = 4002
            #expect(try await replica.customTransaction(id: "ct-1") == counted)
            // Several calls at once (retries within one request); a successful init keeps the hook's data, a later
            // attempt without data leaves it.
            try await replica.write {
                $0.recordCustomAttempts(id: "ct-1", attempts: 3, status: 2000, initData: #"{"sent":true}"#, at: 650, ifUnavailable: Refusal.used)
            }
            try await store.write {
                $0.recordCustomAttempts(id: "ct-1", attempts: 1, status: 4002, initData: nil, at: 660, ifUnavailable: Refusal.used)
            }
            counted.attempts = 8
            counted.initData = #"{"sent":true}"#
            #expect(try await store.customTransaction(id: "ct-1") == counted)
            // Refused at its expiry, for an unknown or a finished one — and the unit's earlier writes with it.
            await #expect(throws: Refusal.used) {
                try await store.write { $0.recordCustomAttempt(id: "ct-1", status: 4003, at: 700, ifUnavailable: Refusal.used) }
            }
            await #expect(throws: Refusal.used) {
                try await replica.write { $0.recordCustomAttempt(id: "nope", status: 4003, at: 200, ifUnavailable: Refusal.used) }
            }
            await #expect(throws: Refusal.used) {
                try await replica.write { transaction in
                    transaction.insertCustomTransaction(customTransaction("ct-2"), ifTaken: Refusal.taken)
                    transaction.recordCustomAttempt(id: "ct-done", status: 2000, at: 55, ifUnavailable: Refusal.used)
                }
            }
            #expect(try await store.customTransaction(id: "ct-1") == counted)
            #expect(try await store.customTransaction(id: "ct-done") == done)
            #expect(try await store.customTransaction(id: "ct-2") == nil)
            // Concurrent attempts on two replicas are each counted.
            let recorded = await (0..<20).asyncConcurrentCount { index in
                (try? await pick(index, store, replica).write {
                    $0.recordCustomAttempt(id: "ct-bare", status: Int64(4000 + index), at: 400, ifUnavailable: Refusal.used)
                }) != nil
            }
            #expect(recorded == 20)
            #expect(try await store.customTransaction(id: "ct-bare")?.attempts == 20)
            // Attempt numbers reserved at once on two replicas are all different: 21…40.
            final class Numbers: Sendable { let taken = Locked<[Int64]>([]) }
            let numbers = Numbers()
            _ = await (0..<20).asyncConcurrentCount { index in
                guard let number = try? await pick(index, store, replica).write({
                    $0.reserveCustomAttempt(id: "ct-bare", at: 400, ifUnavailable: Refusal.used)
                }).value else { return false }
                numbers.taken.withLock { $0.append(number) }
                return true
            }
            #expect(numbers.taken.withLock { $0.sorted() } == Array(21...40))
            // Refused on a finished, expired or unknown transaction.
            for (id, at) in [("ct-done", Int64(55)), ("ct-bare", Int64(100_000)), ("nope", Int64(1))] {
                await #expect(throws: Refusal.used) {
                    try await store.write { $0.reserveCustomAttempt(id: id, at: at, ifUnavailable: Refusal.used) }
                }
            }
        },
        Check(name: "finishing a custom transaction: one compare-and-set from open and unexpired; completed once; a cancelled or failed one is never completed; refusals write nothing") { store, replica in
            try await store.write { $0.insertCustomProvider(customProvider("sms"), ifTaken: Refusal.taken) }
            for id in ["ct-1", "ct-2", "ct-3", "ct-4"] { try await store.write { $0.insertCustomTransaction(customTransaction(id), ifTaken: Refusal.taken) } }
            try await replica.write {
                $0.finishCustomTransaction(
                    id: "ct-1", state: .completed, userID: "u-alice", registrationID: "reg-1", status: 2000, at: 300, ifUnavailable: Refusal.used)
            }
            var completed = customTransaction("ct-1")
            completed.state = .completed
            completed.userID = "u-alice"
            completed.registrationID = "reg-1"
            completed.lastStatus = 2000
            completed.finishedAt = 300
            #expect(try await store.customTransaction(id: "ct-1") == completed)
            // Completed once: finishing it again is refused, whatever the final state or registration id.
            for final in [CustomTransaction.State.completed, .cancelled, .failed] {
                await #expect(throws: Refusal.used) {
                    try await store.write {
                        $0.finishCustomTransaction(
                            id: "ct-1", state: final, userID: "u-bob", registrationID: "reg-1", status: 2001, at: 310, ifUnavailable: Refusal.used)
                    }
                }
            }
            #expect(try await replica.customTransaction(id: "ct-1") == completed)
            // Cancelled: never completed afterwards, nor counted.
            try await store.write {
                $0.finishCustomTransaction(id: "ct-2", state: .cancelled, userID: nil, registrationID: nil, status: nil, at: 320, ifUnavailable: Refusal.used)
            }
            await #expect(throws: Refusal.used) {
                try await replica.write {
                    $0.finishCustomTransaction(
                        id: "ct-2", state: .completed, userID: "u-bob", registrationID: "reg-2", status: 2000, at: 330, ifUnavailable: Refusal.used)
                }
            }
            await #expect(throws: Refusal.used) {
                try await replica.write { $0.recordCustomAttempt(id: "ct-2", status: 2000, at: 330, ifUnavailable: Refusal.used) }
            }
            var cancelled = customTransaction("ct-2")
            cancelled.state = .cancelled
            cancelled.lastStatus = nil
            cancelled.finishedAt = 320
            #expect(try await store.customTransaction(id: "ct-2") == cancelled)
            // Failed (a 5xxx answer counted and recorded in the same unit): never completed afterwards.
            try await replica.write { transaction in
                transaction.recordCustomAttempt(id: "ct-3", status: 5001, at: 340, ifUnavailable: Refusal.used)
                transaction.finishCustomTransaction(
                    id: "ct-3", state: .failed, userID: nil, registrationID: nil, status: 5001, at: 340, ifUnavailable: Refusal.used)
            }
            await #expect(throws: Refusal.used) {
                try await store.write {
                    $0.finishCustomTransaction(
                        id: "ct-3", state: .completed, userID: "u-bob", registrationID: "reg-3", status: 2000, at: 350, ifUnavailable: Refusal.used)
                }
            }
            var failed = customTransaction("ct-3")
            failed.state = .failed
            failed.attempts = 2
            failed.lastStatus = 5001
            failed.finishedAt = 340
            #expect(try await replica.customTransaction(id: "ct-3") == failed)
            // Expired (at its expiry): refused, and the user the unit created before is not kept.
            await #expect(throws: Refusal.used) {
                try await store.write { transaction in
                    transaction.insertUser(user("late"), ifTaken: Refusal.taken)
                    transaction.finishCustomTransaction(
                        id: "ct-4", state: .completed, userID: "u-late", registrationID: "reg-4", status: 2000, at: 700, ifUnavailable: Refusal.used)
                }
            }
            #expect(try await replica.user(id: "u-late") == nil)
            #expect(try await replica.customTransaction(id: "ct-4") == customTransaction("ct-4"))
            await #expect(throws: Refusal.used) {
                try await store.write {
                    $0.finishCustomTransaction(id: "nope", state: .cancelled, userID: nil, registrationID: nil, status: nil, at: 300, ifUnavailable: Refusal.used)
                }
            }
            #expect(try await store.customTransaction(id: "nope") == nil)
        },
        Check(name: "custom transactions: listed per provider newest first (ties by id), by state or all, at most a limit; counted per state") { store, replica in
            try await store.write { transaction in
                transaction.insertCustomProvider(customProvider("sms"), ifTaken: Refusal.taken)
                transaction.insertCustomProvider(customProvider("invite", flow: .oneStep), ifTaken: Refusal.taken)
            }
            try await replica.write { transaction in
                transaction.insertCustomTransaction(customTransaction("ct-a", createdAt: 100), ifTaken: Refusal.taken)
                transaction.insertCustomTransaction(customTransaction("ct-b", createdAt: 300), ifTaken: Refusal.taken)
                transaction.insertCustomTransaction(customTransaction("ct-c", createdAt: 200), ifTaken: Refusal.taken)
                transaction.insertCustomTransaction(customTransaction("ct-d", createdAt: 300), ifTaken: Refusal.taken)
                transaction.insertCustomTransaction(customTransaction("ct-e", provider: "invite", createdAt: 400), ifTaken: Refusal.taken)
                transaction.finishCustomTransaction(
                    id: "ct-c", state: .completed, userID: "u-c", registrationID: nil, status: 2000, at: 350, ifUnavailable: Refusal.used)
                transaction.finishCustomTransaction(id: "ct-a", state: .failed, userID: nil, registrationID: nil, status: 5000, at: 350, ifUnavailable: Refusal.used)
            }
            @Sendable func listed(_ handle: any LatchStore, _ provider: String, _ state: CustomTransaction.State?, _ limit: Int) async throws -> [String] {
                try await handle.customTransactions(providerID: provider, state: state, limit: limit).map(\.id)
            }
            #expect(try await listed(store, "sms", nil, 10) == ["ct-d", "ct-b", "ct-c", "ct-a"])
            #expect(try await listed(replica, "sms", nil, 2) == ["ct-d", "ct-b"])
            #expect(try await listed(store, "sms", .open, 10) == ["ct-d", "ct-b"])
            #expect(try await listed(replica, "sms", .open, 1) == ["ct-d"])
            #expect(try await listed(store, "sms", .completed, 10) == ["ct-c"])
            #expect(try await listed(store, "sms", .failed, 10) == ["ct-a"])
            #expect(try await listed(replica, "sms", .cancelled, 10).isEmpty)
            #expect(try await listed(replica, "invite", nil, 10) == ["ct-e"])
            #expect(try await listed(store, "nobody", nil, 10).isEmpty)
            var completed = customTransaction("ct-c", createdAt: 200)
            completed.state = .completed
            completed.userID = "u-c"
            completed.finishedAt = 350
            #expect(try await replica.customTransactions(providerID: "sms", state: .completed, limit: 10) == [completed])
            #expect(try await store.customTransactionCounts(providerID: "sms") == [.open: 2, .completed: 1, .failed: 1])
            #expect(try await replica.customTransactionCounts(providerID: "invite") == [.open: 1])
            #expect(try await store.customTransactionCounts(providerID: "nobody").isEmpty)
        },
        Check(name: "custom registration race: 10 concurrent completions of one transaction on two replicas, each creating its user: one completes, one user exists") { store, replica in
            try await store.write { $0.insertCustomProvider(customProvider("sms"), ifTaken: Refusal.taken) }
            try await replica.write { $0.insertCustomTransaction(customTransaction("ct-1"), ifTaken: Refusal.taken) }
            let completed = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<10 {
                    group.addTask {
                        let racer = user("racer-\(index)")
                        do {
                            try await pick(index, store, replica).write { transaction in
                                transaction.insertUser(racer, ifTaken: Refusal.taken)
                                transaction.finishCustomTransaction(
                                    id: "ct-1", state: .completed, userID: racer.id, registrationID: "reg-\(index)", status: 2000, at: 300,
                                    ifUnavailable: Refusal.used)
                            }
                            return 1
                        } catch Refusal.used {
                            return 0
                        }
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(completed == 1)
            let users = try await (0..<10).asyncCount { try await replica.user(id: "u-racer-\($0)") != nil }
            #expect(users == 1)
            let done = try #require(try await store.customTransaction(id: "ct-1"))
            #expect(done.state == .completed)
            let winner = try #require(done.userID)
            #expect(try await replica.user(id: winner) != nil)
            #expect(done.registrationID == "reg-\(winner.dropFirst("u-racer-".count))")
        },
        Check(name: "custom transactions: housekeeping keeps them a week past their expiry, finished or not, then deletes them (their provider stays)") { store, replica in
            try await store.write { $0.insertCustomProvider(customProvider("sms"), ifTaken: Refusal.taken) }
            try await store.write { transaction in
                transaction.insertCustomTransaction(customTransaction("ct-open", expiresAt: 700), ifTaken: Refusal.taken)
                transaction.insertCustomTransaction(customTransaction("ct-done", expiresAt: 800), ifTaken: Refusal.taken)
                transaction.insertCustomTransaction(customTransaction("ct-late", expiresAt: 5000), ifTaken: Refusal.taken)
                transaction.finishCustomTransaction(
                    id: "ct-done", state: .completed, userID: "u-x", registrationID: "reg", status: 2000, at: 300, ifUnavailable: Refusal.used)
            }
            _ = try await replica.purgeExpired(now: 700 + customTransactionRetention - 1, limit: 100)
            for id in ["ct-open", "ct-done", "ct-late"] { #expect(try await store.customTransaction(id: id) != nil, "\(id)") }
            var rounds = 0
            while try await replica.purgeExpired(now: 800 + customTransactionRetention, limit: 1) > 0, rounds < 20 { rounds += 1 }
            #expect(try await store.customTransaction(id: "ct-open") == nil)
            #expect(try await store.customTransaction(id: "ct-done") == nil)
            #expect(try await store.customTransaction(id: "ct-late") == customTransaction("ct-late", expiresAt: 5000))
            #expect(try await replica.customTransactionCounts(providerID: "sms") == [.open: 1])
            #expect(try await replica.customProvider(id: "sms") == customProvider("sms"))
        },
        Check(name: "federation: upstream identity providers round-trip (secret sealed bytes, settings JSON), ids are unique, deleting one ends its web sessions and keeps its users") { store, replica in
            let settings = UpstreamIdP.Settings(
                displayName: "Corp", issuer: "https://idp.example", clientId: "latch", clientAuthentication: .clientSecretBasic,
                scopes: ["openid", "email"], usernameClaim: "email", keptClaims: ["name"], allowedEmailDomains: ["example.com"], useUserinfo: true,
                algorithms: ["RS256"])
            let corp = UpstreamIdP(id: "corp", settings: settings, sealedSecret: Data([1, 2, 3]), createdAt: 10)
            let keyed = UpstreamIdP(id: "keyed", settings: settings, sealedSecret: nil, createdAt: 11)
            try await store.write {
                $0.insertUpstreamIdP(corp, ifTaken: Refusal.taken)
                $0.insertUpstreamIdP(keyed, ifTaken: Refusal.taken)
            }
            await #expect(throws: Refusal.taken) { try await replica.write { $0.insertUpstreamIdP(corp, ifTaken: Refusal.taken) } }
            #expect(try await replica.upstreamIdP(id: "corp") == corp)
            #expect(try await replica.upstreamIdPs() == [corp, keyed])
            let alice = User(id: "u-alice", username: "alice", kind: .oidc, issuer: "https://idp.example", subject: "a-1", claims: [:], createdAt: 1)
            try await store.write { $0.insertUser(alice, ifTaken: Refusal.taken) }
            let web = WebSession(
                id: "w1", userID: alice.id, upstreamIdP: "corp", authTime: 90, sealedUpstreamIDToken: Data([9]), createdAt: 100, expiresAt: 200)
            try await store.write { $0.insertWebSession(web) }
            #expect(try await replica.webSession(id: "w1") == web)
            #expect(try await replica.federatedUser(issuer: "https://idp.example", subject: "a-1")?.kind == .oidc)
            // Ending: once, only while active.
            #expect(try await replica.write { $0.endWebSession(id: "w1", at: 150) }.value == 1)
            #expect(try await store.write { $0.endWebSession(id: "w1", at: 151) }.value == 0)
            #expect(try await store.webSession(id: "w1")?.endedAt == 150)
            try await store.write { $0.insertWebSession(WebSession(id: "w2", userID: alice.id, upstreamIdP: "corp", authTime: 90, sealedUpstreamIDToken: nil, createdAt: 100, expiresAt: 200)) }
            #expect(try await store.write { $0.endWebSession(id: "w2", at: 200) }.value == 0, "an expired web session cannot be ended")
            await #expect(throws: Refusal.missing) { try await replica.write { $0.deleteUpstreamIdP(id: "nobody", ifMissing: Refusal.missing) } }
            try await replica.write { $0.deleteUpstreamIdP(id: "corp", ifMissing: Refusal.missing) }
            #expect(try await store.upstreamIdP(id: "corp") == nil)
            #expect(try await store.webSession(id: "w2") == nil)
            #expect(try await store.user(id: alice.id) != nil)
        },
        Check(name: "federation: web sessions go with their user, and housekeeping deletes expired ones") { store, replica in
            let settings = UpstreamIdP.Settings(
                displayName: "Corp", issuer: "https://idp.example", clientId: "latch", clientAuthentication: .privateKeyJWT, scopes: ["openid"],
                usernameClaim: "sub", keptClaims: [], allowedEmailDomains: nil, useUserinfo: false, algorithms: ["ES256"])
            try await store.write { $0.insertUpstreamIdP(UpstreamIdP(id: "corp", settings: settings, sealedSecret: nil, createdAt: 1), ifTaken: Refusal.taken) }
            try await register(store, user("alice"))
            try await register(store, user("bob"))
            try await store.write { unit in
                unit.insertWebSession(WebSession(id: "wa", userID: "u-alice", upstreamIdP: "corp", authTime: 1, sealedUpstreamIDToken: nil, createdAt: 1, expiresAt: 500))
                unit.insertWebSession(WebSession(id: "wb", userID: "u-bob", upstreamIdP: "corp", authTime: 1, sealedUpstreamIDToken: nil, createdAt: 1, expiresAt: 5000))
                unit.insertWebSession(WebSession(id: "wb2", userID: "u-bob", upstreamIdP: "corp", authTime: 1, sealedUpstreamIDToken: nil, createdAt: 1, expiresAt: 9000))
            }
            _ = try await replica.deleteUser(id: "u-bob")
            #expect(try await store.webSession(id: "wb") == nil)
            #expect(try await store.webSession(id: "wa") != nil)
            var rounds = 0
            while try await replica.purgeExpired(now: 500, limit: 1) > 0, rounds < 20 { rounds += 1 }
            #expect(try await store.webSession(id: "wa") == nil)
        },
        Check(name: "federation: an authorization code's id is spent once across replicas (ten redemptions at once: one session), and a callback's first sign-in creates one user") { store, replica in
            try await register(store, user("alice"))
            let alice = try #require(try await store.user(id: "u-alice"))
            let opened = await (0..<10).asyncConcurrentCount { index in
                let handle = pick(index, store, replica)
                do {
                    try await handle.write { unit in
                        unit.consume(.jti("code-1", issuer: "latch:authorization-code", until: 500), ifUnavailable: Refusal.used)
                        unit.requireUser(id: alice.id, ifMissing: Refusal.missing)
                        unit.insertSession(session("code-session-\(index)", user: alice))
                    }
                    return true
                } catch {
                    return false
                }
            }
            #expect(opened == 1)
            let sessions = try await (0..<10).asyncCount { try await replica.session(id: "code-session-\($0)") != nil }
            #expect(sessions == 1)
            // Ten callbacks of one upstream identity at once (distinct states): one user, the others find it taken.
            let created = await (0..<10).asyncConcurrentCount { index in
                let newcomer = User(
                    id: "u-oidc-\(index)", username: "carol", kind: .oidc, issuer: "https://idp.example", subject: "c-1", claims: [:], createdAt: 1)
                do {
                    try await pick(index, store, replica).write { unit in
                        unit.consume(.jti("state-\(index)", issuer: "latch:upstream-state", until: 500), ifUnavailable: Refusal.used)
                        unit.insertUser(newcomer, ifTaken: Refusal.taken)
                    }
                    return true
                } catch {
                    return false
                }
            }
            #expect(created == 1)
            #expect(try await store.federatedUser(issuer: "https://idp.example", subject: "c-1") != nil)
            // A refused unit spent nothing: the losers' states are still unspent.
            let unspent = try await (0..<10).asyncCount { try await replica.consume(.jti("state-\($0)", issuer: "latch:upstream-state", until: 500)) }
            #expect(unspent == 9)
        },
        Check(name: "observers: every durable commit is reported with its units of work (SQLite: group commits of several; PostgreSQL: one each)") { store, _ in
            guard let observable = store as? any ObservableStore else { return }
            let observer = RecordingStoreObserver()
            observable.observers.set(observer)
            defer { observable.observers.set(nil) }
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
