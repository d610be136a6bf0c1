import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Testing

extension StoreConformance {
    /// Custom registration: providers, transactions, their finishing compare-and-set, races and housekeeping.
    static let customRegistrationChecks: [Check] = [
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
    ]
}
