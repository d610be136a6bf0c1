import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

extension StoreConformance {
    /// Sessions: the refresh rotation rule and its races, jti-guarded sign-ins, revocation, renewal, housekeeping.
    static let sessionChecks: [Check] = [
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
            while try await store.purgeExpired(now: 4001 + revokedSessionRetention, limit: 100) > 0, rounds < 200 { rounds += 1 }
            #expect(try await store.session(id: "revoked") == nil)
            // A purged jti can be used again only because its assertion has expired anyway.
            #expect(try await start(store, session("again", user: alice, now: 90_000), consumes: .jti("keep", issuer: "t", until: 99_999)) == nil)
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
    ]
}
