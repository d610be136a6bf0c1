import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

extension StoreConformance {
    /// Admin accounts, tokens and passkeys.
    static let adminChecks: [Check] = [
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
    ]
}
