import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

extension StoreConformance {
    /// Users and registration records: unique usernames and federated identities, single-use jtis, deletion, paging.
    static let userChecks: [Check] = [
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
    ]
}
