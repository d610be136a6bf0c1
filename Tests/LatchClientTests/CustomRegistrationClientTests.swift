import Foundation
import LatchApp
import LatchClient
import LatchModel
import LatchSQLite
import LatchTesting
import Testing

/// A ``CustomRegistrationHandler`` answering from a script (`.cancel` once a script runs out), recording every call.
actor ScriptedCustomHandler: CustomRegistrationHandler {
    struct Call: Sendable {
        var step: String
        var info: CustomRegistrationInfo
        var previousError: CustomRegistrationRetry?
    }

    private var initAnswers: [CustomRegistrationAnswer]
    private var finishAnswers: [CustomRegistrationAnswer]
    private let beforeFinish: @Sendable () -> Void
    private(set) var calls: [Call] = []

    init(init initAnswers: [CustomRegistrationAnswer] = [], finish: [CustomRegistrationAnswer], beforeFinish: @escaping @Sendable () -> Void = {}) {
        self.initAnswers = initAnswers
        self.finishAnswers = finish
        self.beforeFinish = beforeFinish
    }

    func initChallenge(_ info: CustomRegistrationInfo, previousError: CustomRegistrationRetry?) async -> CustomRegistrationAnswer {
        calls.append(Call(step: "init", info: info, previousError: previousError))
        return initAnswers.isEmpty ? .cancel : initAnswers.removeFirst()
    }

    func finishChallenge(_ info: CustomRegistrationInfo, previousError: CustomRegistrationRetry?) async -> CustomRegistrationAnswer {
        calls.append(Call(step: "complete", info: info, previousError: previousError))
        beforeFinish()
        return finishAnswers.isEmpty ? .cancel : finishAnswers.removeFirst()
    }
}

/// The example hooks (`Examples/InvitationHook`, `Examples/SMSHook`) as processes, registered as custom providers of a
/// ``LiveLatch`` that allows hooks on loopback.
struct CustomHookFixture {
    static let invitationSecret = "invitation-secret-0123456789"
    static let smsSecret = "sms-hook-secret-0123456789"

    /// Runs `body` with a live server allowing loopback hooks, the invitation hook (codes ALPHA, BETA) as one-step
    /// provider `invitation` and the SMS hook (code 123456) as two-step provider `sms`.
    static func run(smsLifetime: Int? = nil, _ body: @Sendable (LiveLatch) async throws -> Void) async throws {
        let directory = TemporaryDirectory(prefix: "latch-custom-sdk")
        defer { directory.remove() }
        let invitation = try await ExampleHookProcess(
            "InvitationHook", secret: invitationSecret, environment: ["INVITATION_CODES": "ALPHA,BETA"], output: directory.path + "/invitation.log")
        let sms: ExampleHookProcess
        do {
            sms = try await ExampleHookProcess(
                "SMSHook", secret: smsSecret, environment: ["SMS_FIXED_CODE": "123456", "SMS_OUTBOX": directory.path + "/outbox.txt"],
                output: directory.path + "/sms.log")
        } catch {
            _ = await invitation.stop()
            throw error
        }
        do {
            try await LiveLatch.run(configure: { $0.hooksAllowPrivateAddresses = true }) { latch in
                try await addProvider(latch, AdminCustomProviderRequest(
                    id: "invitation", name: "Invitation code", flow: "one_step", hookURL: invitation.url, hookSecret: invitationSecret))
                try await addProvider(latch, AdminCustomProviderRequest(
                    id: "sms", name: "Text message", flow: "two_step", hookURL: sms.url, hookSecret: smsSecret, transactionLifetime: smsLifetime))
                try await body(latch)
            }
        } catch {
            _ = await invitation.stop()
            _ = await sms.stop()
            throw error
        }
        _ = await invitation.stop()
        _ = await sms.stop()
    }

    static func addProvider(_ latch: LiveLatch, _ request: AdminCustomProviderRequest) async throws {
        let response = try await admin(latch, "POST", "admin/v1/custom-providers", body: request)
        try #require(response.status == 201, "adding custom provider \(request.id): \(String(decoding: response.body, as: UTF8.self))")
    }

    static func transactions(_ latch: LiveLatch, provider: String) async throws -> AdminCustomTransactions {
        let response = try await admin(latch, "GET", "admin/v1/custom-providers/\(provider)/transactions")
        try #require(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
        return try JSONDecoder().decode(AdminCustomTransactions.self, from: response.body)
    }

    static func admin(_ latch: LiveLatch, _ method: String, _ path: String, body: (some Encodable)? = Optional<String>.none) async throws
        -> HTTPResponseData
    {
        var request = HTTPRequestData(
            method: method, url: latch.url.appendingPathComponent(path), headers: ["Authorization": "Bearer \(LiveLatch.adminToken)"])
        if let body {
            request.headers["Content-Type"] = "application/json"
            request.body = try JSONEncoder().encode(body)
        }
        return try await URLSessionTransport().send(request)
    }
}

@Suite("UserClient custom registration against a live server and the example hooks", .serialized)
struct CustomRegistrationClientTests {
    static let phone: JSONValue = ["phone": "+4930123456"]

    static func code(_ code: String) -> CustomRegistrationAnswer { .respond(["code": .string(code)]) }

    /// The error `body` throws; nil when it succeeds.
    static func failure(_ body: () async throws -> CustomRegistrationResult) async -> UserClientError? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error as? UserClientError ?? .invalidInput("not a UserClientError: \(error)")
        }
    }

    @Test("One-step: the providers list; an unknown code is retried on the answer's transaction; success registers a key that signs in")
    func oneStep() async throws {
        try await CustomHookFixture.run { latch in
            let transport = RecordingTransport()
            let client = try latch.device(transport: transport)
            let providers = try await client.customProviders()
            #expect(Set(providers) == [
                CustomIdentityProvider(id: "invitation", name: "Invitation code", flow: .oneStep),
                CustomIdentityProvider(id: "sms", name: "Text message", flow: .twoStep),
            ])

            let handler = ScriptedCustomHandler(finish: [
                .respond(["code": "GAMMA", "username": "alice"]), .respond(["code": "ALPHA", "username": "alice"]),
            ])
            let result = try await client.registerWithCustomProvider("invitation", handler: handler)
            #expect(result.username == "alice" && result.status == 2000)
            let calls = await handler.calls
            try #require(calls.count == 2)
            #expect(calls.allSatisfy { $0.step == "complete" && $0.info.flow == .oneStep && $0.info.providerId == "invitation" })
            #expect(calls[0].info.transactionId == nil && calls[0].previousError == nil && calls[0].info.data == nil)
            let retry = try #require(calls[1].previousError)
            #expect(retry.status == 4001 && retry.data?["message"] == "unknown invitation code")
            #expect(calls[1].info.transactionId == retry.transactionId)
            #expect(transport.count("/v1/custom-registrations/complete") == 2)
            #expect(transport.count("/v1/custom-registrations/init") == 0)

            // Registered like any key registration: the username and id are kept, and the device key signs in.
            #expect(await client.isRegistered())
            #expect(await client.userName() == "alice")
            #expect(await client.subject() == result.userId)
            try await client.signInWithKey()
            #expect(await client.signInStatus == .signedIn)
            #expect(try await client.userClaim("sub")?.stringValue == result.userId)
            await #expect(throws: UserClientError.alreadyRegistered) {
                try await client.registerWithCustomProvider("invitation", flow: .oneStep, handler: ScriptedCustomHandler(finish: []))
            }

            // Another device with the used code: the hook's 5001 ends the registration.
            let other = try latch.device()
            let used = await Self.failure {
                try await other.registerWithCustomProvider(
                    "invitation", flow: .oneStep, handler: ScriptedCustomHandler(finish: [.respond(["code": "ALPHA", "username": "bob"])]))
            }
            guard let used, used.code == .registrationRestartRequired else {
                Issue.record("a used invitation: \(String(describing: used))")
                return
            }
            let (status, data) = (used.hookStatus, used.hookData)
            #expect(status == 5001 && data?["message"] == "this invitation was used")
            #expect(await other.isRegistered() == false)
        }
    }

    @Test("Two-step: a bad phone number repeats init; a wrong code (4001) asks finishChallenge again with previousError; then success")
    func twoStep() async throws {
        try await CustomHookFixture.run { latch in
            let transport = RecordingTransport()
            let client = try latch.device(transport: transport)
            let handler = ScriptedCustomHandler(init: [.respond(["phone": "call me"]), .respond(Self.phone)], finish: [Self.code("999999"), Self.code("123456")])
            let result = try await client.registerWithCustomProvider("sms", handler: handler)
            #expect(result.username == "+4930123456")

            let calls = await handler.calls
            try #require(calls.map(\.step) == ["init", "init", "complete", "complete"])
            // init: first without a transaction; after the 4xxx, on the transaction the answer named.
            #expect(calls[0].info.transactionId == nil && calls[0].previousError == nil && calls[0].info.flow == .twoStep)
            let initRetry = try #require(calls[1].previousError)
            #expect(initRetry.status == 4002 && calls[1].info.transactionId == initRetry.transactionId)
            // complete: shown init's answer; the transaction is the one init retried on.
            let transaction = try #require(calls[2].info.transactionId)
            #expect(transaction == initRetry.transactionId)
            #expect(calls[2].info.status == 2000 && calls[2].info.data?["phoneHint"] == "…56" && calls[2].previousError == nil)
            let wrong = try #require(calls[3].previousError)
            #expect(wrong.status == 4001 && wrong.transactionId == transaction && wrong.data?["remainingAttempts"] == 2)
            #expect(calls[3].info.transactionId == transaction && calls[3].info.data?["phoneHint"] == "…56")
            #expect(transport.count("/v1/custom-registrations/providers") == 1, "the flow was looked up")
            #expect(transport.count("/v1/custom-registrations/init") == 2)
            #expect(transport.count("/v1/custom-registrations/complete") == 2)

            try await client.signInWithKey()
            #expect(await client.userName() == "+4930123456")
            let listed = try await CustomHookFixture.transactions(latch, provider: "sms")
            #expect(listed.counts["completed"] == 1 && listed.counts["open"] == 0)
        }
    }

    @Test("Three wrong codes: the hook's 5001 throws registrationRestartRequired; a new registration then succeeds")
    func restart() async throws {
        try await CustomHookFixture.run { latch in
            let client = try latch.device()
            let handler = ScriptedCustomHandler(
                init: [.respond(Self.phone)], finish: [Self.code("000000"), Self.code("000001"), Self.code("000002"), Self.code("123456")])
            let failure = await Self.failure { try await client.registerWithCustomProvider("sms", flow: .twoStep, handler: handler) }
            guard let failure, failure.code == .registrationRestartRequired else {
                Issue.record("three wrong codes: \(String(describing: failure))")
                return
            }
            let (status, data) = (failure.hookStatus, failure.hookData)
            #expect(status == 5001 && data?["message"] == "too many attempts")
            #expect(await handler.calls.count == 4, "init and three completes; the fourth answer was never asked for")
            #expect(await client.isRegistered() == false)
            #expect(try await CustomHookFixture.transactions(latch, provider: "sms").counts["failed"] == 1)

            let result = try await client.registerWithCustomProvider(
                "sms", flow: .twoStep, handler: ScriptedCustomHandler(init: [.respond(Self.phone)], finish: [Self.code("123456")]))
            #expect(result.username == "+4930123456")
            try await client.signInWithKey()
        }
    }

    @Test("Cancel: after init the transaction is cancelled on the server; before any transaction nothing is sent")
    func cancel() async throws {
        try await CustomHookFixture.run { latch in
            let transport = RecordingTransport()
            let client = try latch.device(transport: transport)
            await #expect(throws: UserClientError.customRegistrationCancelled) {
                try await client.registerWithCustomProvider("sms", handler: ScriptedCustomHandler(init: [.respond(Self.phone)], finish: [.cancel]))
            }
            #expect(transport.count("/v1/custom-registrations/cancel") == 1)
            let listed = try await CustomHookFixture.transactions(latch, provider: "sms")
            #expect(listed.counts["cancelled"] == 1 && listed.counts["open"] == 0)
            #expect(await client.isRegistered() == false)

            // Cancelled at the first question: no transaction exists, so there is nothing to cancel.
            await #expect(throws: UserClientError.customRegistrationCancelled) {
                try await client.registerWithCustomProvider("sms", flow: .twoStep, handler: ScriptedCustomHandler(init: [.cancel], finish: []))
            }
            await #expect(throws: UserClientError.customRegistrationCancelled) {
                try await client.registerWithCustomProvider("invitation", flow: .oneStep, handler: ScriptedCustomHandler(finish: [.cancel]))
            }
            #expect(transport.count("/v1/custom-registrations/cancel") == 1)
            #expect(transport.count("/v1/custom-registrations/init") == 1)

            // Cancelled after a retryable answer (one-step): the transaction that answer named is cancelled.
            await #expect(throws: UserClientError.customRegistrationCancelled) {
                try await client.registerWithCustomProvider(
                    "invitation", flow: .oneStep, handler: ScriptedCustomHandler(finish: [.respond(["code": "NOPE", "username": "carol"]), .cancel]))
            }
            #expect(transport.count("/v1/custom-registrations/cancel") == 2)
            #expect(try await CustomHookFixture.transactions(latch, provider: "invitation").counts["cancelled"] == 1)
        }
    }

    @Test("A lost complete answer: the next call resends the same request (no new question) and gets the same user")
    func lostAnswer() async throws {
        try await CustomHookFixture.run { latch in
            let transport = RecordingTransport()
            let client = try latch.device(transport: transport)
            let handler = ScriptedCustomHandler(finish: [.respond(["code": "BETA", "username": "dave"])])
            transport.dropNextAnswer.withLock { _ = $0.insert("/v1/custom-registrations/complete") }
            await #expect(throws: UserClientError.network(underlying: URLError(.networkConnectionLost))) {
                try await client.registerWithCustomProvider("invitation", flow: .oneStep, handler: handler)
            }
            #expect(await client.isRegistered() == false)
            let result = try await client.registerWithCustomProvider("invitation", flow: .oneStep, handler: handler)
            #expect(result.username == "dave")
            #expect(await handler.calls.count == 1, "the kept request was resent without asking again")
            #expect(transport.count("/v1/custom-registrations/complete") == 2)
            #expect(try await latch.store.users(after: nil, limit: 10).count == 1)
            try await client.signInWithKey()
        }
    }

    @Test("An expired transaction throws registrationRestartRequired without a hook status")
    func expired() async throws {
        try await CustomHookFixture.run(smsLifetime: 30) { latch in
            let client = try latch.device()
            let serverClock = latch.clock
            let handler = ScriptedCustomHandler(init: [.respond(Self.phone)], finish: [Self.code("123456")]) { serverClock.advance(by: 31) }
            await #expect(throws: UserClientError.registrationRestartRequired(status: nil, data: nil)) {
                try await client.registerWithCustomProvider("sms", flow: .twoStep, handler: handler)
            }
            #expect(await client.isRegistered() == false)
        }
    }

    @Test("An unknown provider, or the wrong flow, is a configuration error")
    func configurationErrors() async throws {
        try await CustomHookFixture.run { latch in
            let client = try latch.device()
            let never = ScriptedCustomHandler(init: [], finish: [])
            await #expect(throws: UserClientError.invalidConfiguration("")) { try await client.registerWithCustomProvider("nope", handler: never) }
            await #expect(throws: UserClientError.invalidConfiguration("")) {
                try await client.registerWithCustomProvider("nope", flow: .oneStep, handler: ScriptedCustomHandler(finish: [Self.code("x")]))
            }
            // init on a one-step provider.
            await #expect(throws: UserClientError.invalidConfiguration("")) {
                try await client.registerWithCustomProvider("invitation", flow: .twoStep, handler: ScriptedCustomHandler(init: [.respond(nil)], finish: []))
            }
            #expect(await never.calls.isEmpty)
        }
    }
}
