import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

extension StoreConformance {
    /// Devices: attested device keys, authenticators and their failures, PIN attempts and binding keys, out-of-band transactions.
    static let deviceChecks: [Check] = [
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
            // A reservation whose time is earlier than the last failure's (it queued behind a later one, or its replica's
            // clock lags) is counted where the cool-down is 0, and the last failure stays the later one.
            #expect(try await store.write { $0.reservePinAttempt(id: "r1", maxAttempts: 3, coolDowns: [0], at: 36, ifRefused: Refusal.used) }.value == 1)
            #expect(try await replica.write { $0.reservePinAttempt(id: "r1", maxAttempts: 3, coolDowns: [0], at: 35, ifRefused: Refusal.used) }.value == 2)
            #expect(try await store.authenticator(credentialID: Data(repeating: 1, count: 32))?.1.lastFailedAt == 36)
            try await store.write { $0.recordAuthenticatorUse(id: "r1", signCount: 0, failedAttempts: nil, at: 37, ifChanged: Refusal.used) }
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
    ]
}
