import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ReplicaTests {
    @Test("Custom registration on two replicas: a complete raced ten times creates one user (same registrationId: ten answers of that user); a one-step complete raced with one registrationId too")
    func customRegistrationRaces() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let database = try await TestPostgres.freshDatabase()
        let allow = ["LATCH_HOOKS_ALLOW_PRIVATE_ADDRESSES": "true"]
        let a = try replica(directory, "a", database: database, extra: allow)
        let b = try replica(directory, "b", database: database, extra: allow)
        let sms = try await ExampleHookProcess(
            "SMSHook", secret: "sms-secret-0123456789abcdef", environment: ["SMS_OUTBOX": directory.path + "/outbox.txt", "SMS_FIXED_CODE": "123456"],
            output: directory.path + "/sms.log")
        let invitation = try await ExampleHookProcess(
            "InvitationHook", secret: "invitation-secret-0123456789", environment: ["INVITATION_CODES": "RACE"], output: directory.path + "/inv.log")
        try await a.waitUntilListening()
        try await b.waitUntilListening()
        for (id, flow, hook) in [("sms", "two_step", sms), ("invitation", "one_step", invitation)] {
            let (created, answer) = try await jsonRequest(
                "POST", a.base + "/admin/v1/custom-providers",
                body: AdminCustomProviderRequest(id: id, name: id, flow: flow, hookURL: hook.url, hookSecret: hook.secret), bearer: Self.adminToken)
            #expect(created == 201, "\(answer)")
        }
        func initiate(_ phone: String) async throws -> String {
            let (status, answer) = try await jsonRequest(
                "POST", b.base + "/v1/custom-registrations/init", body: CustomRegistrationInitRequest(identityProvider: "sms", data: ["phone": .string(phone)]))
            #expect(status == 200, "\(answer)")
            return answer["transactionId"]?.stringValue ?? ""
        }
        final class Outcomes: Sendable {
            let statuses = Locked<[Int]>([])
            let users = Locked<Set<String>>([])
            let codes = Locked<[String]>([])
        }
        func race(_ body: CustomRegistrationCompleteRequest) async -> Outcomes {
            let outcomes = Outcomes()
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<10 {
                    group.addTask {
                        let base = worker.isMultiple(of: 2) ? a.base : b.base
                        guard let (status, answer) = try? await jsonRequest("POST", base + "/v1/custom-registrations/complete", body: body) else { return }
                        outcomes.statuses.withLock { $0.append(status) }
                        if let code = answer["error"]?.stringValue { outcomes.codes.withLock { $0.append(code) } }
                        if let user = answer["userId"]?.stringValue { outcomes.users.withLock { _ = $0.insert(user) } }
                    }
                }
            }
            return outcomes
        }
        // 1. No registrationId: one 201, nine 409 (completed by another request).
        let first = try await initiate("+4930000001")
        let plain = await race(CustomRegistrationCompleteRequest(transactionId: first, data: ["code": "123456"]))
        #expect(plain.statuses.withLock { $0.sorted() } == [201] + Array(repeating: 409, count: 9), "\(plain.codes.withLock { $0 })")
        #expect(plain.codes.withLock { $0 } == Array(repeating: "custom_transaction_finished", count: 9))
        // 2. One registrationId: ten answers of one user.
        let second = try await initiate("+4930000002")
        let same = await race(CustomRegistrationCompleteRequest(transactionId: second, data: ["code": "123456"], registrationId: "reg-race-2"))
        #expect(same.statuses.withLock { $0 } == Array(repeating: 201, count: 10), "\(same.codes.withLock { $0 })")
        #expect(same.users.withLock { $0.count } == 1)
        // 3. One-step, one registrationId: one transaction, one user.
        let oneStep = await race(
            CustomRegistrationCompleteRequest(identityProvider: "invitation", data: ["code": "RACE", "username": "racer"], registrationId: "reg-race-3"))
        #expect(oneStep.statuses.withLock { $0 } == Array(repeating: 201, count: 10), "\(oneStep.codes.withLock { $0 })")
        #expect(oneStep.users.withLock { $0.count } == 1)
        let (_, users) = try await http("GET", a.base + "/admin/v1/users?limit=50", bearer: Self.adminToken)
        #expect(users["users"]?.arrayValue?.count == 3, "\(users)")
        _ = await sms.stop()
        _ = await invitation.stop()
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }
}
