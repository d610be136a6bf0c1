import Foundation
import LatchCore
import LatchHookKit
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// A hook behind the `HookCaller` seam that answers from a script: each call's `Latch-Signature` is checked with the
/// provider's secret (a real HMAC) and its body decoded, so a test sees what Latch sent; an empty script answers a
/// network error.
final class ScriptedHook: HookCaller {
    struct Call: Sendable {
        var request: HookRequest
        var idempotencyKey: HookIdempotencyKey?
        var signed: Bool
        var url: String
        var timeout: Int64
    }

    private let state = Locked<(answers: [Result<HookAnswer, HookCallError>], calls: [Call])>(([], []))
    let secret: String
    let clock: TestClock

    init(secret: String, clock: TestClock) {
        self.secret = secret
        self.clock = clock
    }

    /// Queues answers, one per call.
    func script(_ answers: Result<HookAnswer, HookCallError>...) { state.withLock { $0.answers += answers } }

    var calls: [Call] { state.withLock { $0.calls } }

    /// The waits between attempts (milliseconds) the service asked for, in order.
    private let waits = Locked<[Int]>([])
    func sleep(_ milliseconds: Int) { waits.withLock { $0.append(milliseconds) } }
    var slept: [Int] { waits.withLock { $0 } }

    /// An HTTP 200 answer `{status, user?, data?}`.
    static func json(_ status: Int, user: JSONValue? = nil, data: JSONValue? = nil) -> Result<HookAnswer, HookCallError> {
        var object: [String: JSONValue] = ["status": .int(Int64(status))]
        object["user"] = user
        object["data"] = data
        return .success(HookAnswer(status: 200, body: Array(JSONValue.object(object).serialized())))
    }

    func post(url: String, body: [UInt8], headers: [(String, String)], timeoutSeconds: Int64) async -> Result<HookAnswer, HookCallError> {
        func header(_ name: String) -> String? { headers.first { $0.0 == name }?.1 }
        let signed = (try? HookSignature.verify(header: header(HookSignature.headerName) ?? "", body: body, secret: secret, now: clock.now)) != nil
        guard let request = try? JSONDecoder().decode(HookRequest.self, from: Data(body)) else { return .failure(.network("undecodable request")) }
        let call = Call(
            request: request, idempotencyKey: header(HookSignature.idempotencyKeyHeaderName).flatMap(HookIdempotencyKey.init), signed: signed, url: url,
            timeout: timeoutSeconds)
        return state.withLock { state in
            state.calls.append(call)
            return state.answers.isEmpty ? .failure(.network("nothing scripted")) : state.answers.removeFirst()
        }
    }
}

/// Custom registration on the in-memory store with a scripted hook: the flow rules (one step, two steps, out of order),
/// the hook's answers mapped to Latch's codes (2xxx complete, 4xxx retry on the transaction, 5xxx restart; transport
/// failures and unusable answers each their own code), retries with their idempotency keys, expiry, cancellation,
/// idempotent completion by `registrationId` — and that a refusal never leaves a user half-created.
@Suite("CustomRegistrationService on the in-memory store")
struct CustomRegistrationServiceTests {
    static let secret = "hook-secret-0123456789"
    static let hookURL = "https://hooks.example.com/register"

    let engines: Engines
    let hook: ScriptedHook
    let service: CustomRegistrationService

    init() async throws {
        engines = try await Engines.make()
        hook = ScriptedHook(secret: Self.secret, clock: engines.clock)
        let hook = hook
        service = CustomRegistrationService(
            store: engines.store, clients: engines.clients, sealer: try KeySealer(keyEncryptionKey: [UInt8](repeating: 1, count: 32)), caller: hook,
            policy: HookAddressPolicy(allowPrivateAddresses: false),
            transactionKey: KeySealer.derivedKey(from: [UInt8](repeating: 2, count: 32), purpose: "custom test"), clock: engines.clock.clock,
            random: engines.random, sleep: { hook.sleep($0) })
    }

    /// Creates provider `id` (one step unless told otherwise), keeping claim `tier`.
    @discardableResult
    func provider(_ id: String = "invite", flow: String = "one_step", retries: Int = 0, lifetime: Int = 600, enabled: Bool = true) async throws
        -> AdminCustomProvider
    {
        try await service.createProvider(
            AdminCustomProviderRequest(
                id: id, name: "Provider \(id)", flow: flow, hookURL: Self.hookURL, hookSecret: Self.secret, timeout: 7, retries: retries,
                transactionLifetime: lifetime, allowedClaims: ["tier"], enabled: enabled))
    }

    static let user: JSONValue = ["id": "crm-7", "username": "Carol", "attributes": ["tier": "gold", "secret": "x"], "amr": ["otp"]]

    var deviceKey: RegistrationPublicKey {
        RegistrationPublicKey(keyId: "device-1", algorithm: "ES256", publicKey: TestKeys.p256.publicKey.pemRepresentation)
    }

    func complete(
        provider: String? = "invite", transaction: String? = nil, registrationID: String? = nil, key: RegistrationPublicKey? = nil, client: String? = nil,
        data: JSONValue? = nil
    ) async throws -> CustomRegistrationCompleteResponse {
        try await service.complete(
            CustomRegistrationCompleteRequest(
                transactionId: transaction, identityProvider: transaction == nil ? provider : nil, data: data, publicKey: key, registrationId: registrationID,
                clientId: client))
    }

    func stored(_ id: String) async throws -> CustomTransaction { try #require(try await engines.store.customTransaction(id: id)) }

    func transactions(_ provider: String = "invite") async throws -> [CustomTransaction] {
        try await engines.store.customTransactions(providerID: provider, state: nil, limit: 50)
    }

    // MARK: One step

    @Test("One step: the hook's user is created with the device key, only allowed claims, in Latch's username namespace; the call is signed")
    func oneStep() async throws {
        try await provider()
        hook.script(ScriptedHook.json(2000, user: Self.user, data: ["welcome": true]))
        let done = try await complete(key: deviceKey, data: ["invitation": "abc"])
        #expect(done.username == "carol" && done.status == 2000 && done.data == ["welcome": true])
        let user = try #require(try await engines.store.user(id: done.userId))
        #expect(user.kind == .custom && user.subject == "crm-7" && user.claims == ["tier": "gold"])
        #expect(try await engines.store.deviceKey(userID: done.userId, keyID: "device-1") != nil)
        let call = try #require(hook.calls.first)
        #expect(hook.calls.count == 1 && call.signed && call.url == Self.hookURL && call.timeout == 7)
        #expect(call.request.step == .complete && call.request.clientId == "default" && call.request.data == ["invitation": "abc"])
        #expect(call.idempotencyKey == HookIdempotencyKey(transactionId: call.request.transactionId, step: .complete, attempt: 1))
        let transaction = try await stored(call.request.transactionId)
        #expect(transaction.state == .completed && transaction.userID == done.userId && transaction.lastStatus == 2000 && transaction.attempts == 1)
        let registered = try await engines.store.auditRecords(matching: AuditQuery(kinds: ["user.registered"])).map(\.event.detail)
        #expect(registered == ["CUSTOM:invite amr=otp"])
    }

    @Test("A username already taken is already_registered; the unit that would create the user writes nothing")
    func usernameTaken() async throws {
        try await provider()
        _ = try await engines.addUser("carol")
        let before = engines.rowCounts
        hook.script(ScriptedHook.json(2000, user: Self.user))
        await expectCode(.alreadyRegistered) { _ = try await complete(key: deviceKey) }
        #expect(engines.rowCounts == before)
        #expect(try await transactions().isEmpty)
    }

    @Test("registrationId: a repeated complete answers the same user without calling the hook; another device key under it is a conflict")
    func idempotentComplete() async throws {
        try await provider()
        hook.script(ScriptedHook.json(2000, user: Self.user))
        let first = try await complete(registrationID: "r-1", key: deviceKey)
        let again = try await complete(registrationID: "r-1", key: deviceKey)
        #expect(again.userId == first.userId && again.username == first.username && hook.calls.count == 1)
        let otherKey = RegistrationPublicKey(keyId: "device-2", algorithm: "ES256", publicKey: TestKeys.p256b.publicKey.pemRepresentation)
        await expectCode(.registrationConflict) { _ = try await complete(registrationID: "r-1", key: otherKey) }
        #expect(try await transactions().count == 1 && engines.store.count(.users) == 1)
    }

    // MARK: Two steps

    @Test("Two steps: init opens the transaction with the hook's data, complete sends it back as initData, then the user exists")
    func twoSteps() async throws {
        try await provider("sms", flow: "two_step")
        hook.script(ScriptedHook.json(2000, data: ["sent": "+41…12"]))
        let started = try await service.initiate(CustomRegistrationInitRequest(identityProvider: "sms", data: ["phone": "+41791234512"]))
        #expect(started.status == 2000 && started.data == ["sent": "+41…12"])
        var transaction = try await stored(started.transactionId)
        #expect(transaction.state == .open && transaction.initData == #"{"sent":"+41…12"}"# && transaction.expiresAt == engines.now + 600)
        // Init again on an initialised transaction: out of order, no call.
        await expectCode(.customStepOutOfOrder) {
            _ = try await service.initiate(CustomRegistrationInitRequest(identityProvider: "sms", transactionId: started.transactionId))
        }
        hook.script(ScriptedHook.json(2001, user: Self.user))
        let done = try await complete(transaction: started.transactionId, data: ["code": "123456"])
        let calls = hook.calls
        #expect(calls.count == 2 && calls[1].request.initData == ["sent": "+41…12"] && calls[1].request.transactionId == started.transactionId)
        // On an existing transaction, attempts are numbered by the store.
        #expect(calls[1].idempotencyKey?.attempt == 2)
        transaction = try await stored(started.transactionId)
        #expect(transaction.state == .completed && transaction.userID == done.userId && transaction.lastStatus == 2001)
    }

    @Test("Flow rules: init on a one-step provider, complete by provider on a two-step one, complete before init — refused without a hook call")
    func flowRules() async throws {
        try await provider()
        try await provider("sms", flow: "two_step")
        await expectCode(.customFlowMismatch) { _ = try await service.initiate(CustomRegistrationInitRequest(identityProvider: "invite")) }
        await expectCode(.customFlowMismatch) { _ = try await complete(provider: "sms") }
        // A two-step transaction whose init got a 4xxx is open without initData: complete is out of order.
        hook.script(ScriptedHook.json(4001))
        await expectCode(.customRegistrationRetry) { _ = try await service.initiate(CustomRegistrationInitRequest(identityProvider: "sms")) }
        let open = try #require(try await transactions("sms").first)
        #expect(open.state == .open && open.initData == nil)
        await expectCode(.customStepOutOfOrder) { _ = try await complete(transaction: open.id) }
        await expectCode(.invalidInput) {
            _ = try await service.complete(CustomRegistrationCompleteRequest(transactionId: open.id, identityProvider: "sms"))
        }
        #expect(hook.calls.count == 1)
    }

    @Test("Unknown and disabled providers, unknown transactions, another client's transaction, oversized data: each its code, no hook call")
    func badRequests() async throws {
        try await provider()
        try await provider("off", enabled: false)
        await expectCode(.customProviderUnknown) { _ = try await complete(provider: "nope") }
        await expectCode(.customProviderUnknown) { _ = try await complete(provider: "bad id!") }
        await expectCode(.customProviderDisabled) { _ = try await complete(provider: "off") }
        await expectCode(.customTransactionUnknown) { _ = try await complete(transaction: "t-unknown") }
        await expectCode(.customTransactionUnknown) { try await service.cancel(CustomRegistrationCancelRequest(transactionId: "t-unknown")) }
        await expectCode(.requestTooLarge) { _ = try await complete(data: .string(String(repeating: "x", count: 16 * 1024))) }
        await expectCode(.invalidClient) { _ = try await complete(client: "stranger") }
        #expect(hook.calls.isEmpty)
        hook.script(ScriptedHook.json(4000))
        let retry = await FidoServiceTests.refusal(.customRegistrationRetry) { _ = try await complete() }
        let id = try #require(retry?.members["transactionId"]?.stringValue)
        await expectCode(.customTransactionClientMismatch) { _ = try await complete(transaction: id, client: "other") }
        await expectCode(.customTransactionClientMismatch) { try await service.cancel(CustomRegistrationCancelRequest(transactionId: id, clientId: "other")) }
        #expect(hook.calls.count == 1 && engines.store.count(.users) == 0)
    }

    // MARK: The hook's statuses

    @Test("4xxx: custom_registration_retry with the transaction, status and data; the transaction stays open and completes on the next try")
    func retryStatus() async throws {
        try await provider()
        hook.script(ScriptedHook.json(4002, data: ["reason": "expired invitation"]))
        let refused = await FidoServiceTests.refusal(.customRegistrationRetry) { _ = try await complete() }
        #expect(refused?.members["status"] == 4002 && refused?.members["data"] == ["reason": "expired invitation"])
        let id = try #require(refused?.members["transactionId"]?.stringValue)
        var transaction = try await stored(id)
        #expect(transaction.state == .open && transaction.lastStatus == 4002 && transaction.attempts == 1)
        #expect(engines.store.count(.users) == 0)
        hook.script(ScriptedHook.json(2000, user: Self.user))
        _ = try await complete(transaction: id)
        transaction = try await stored(id)
        #expect(transaction.state == .completed && transaction.attempts == 2)
    }

    @Test("5xxx: custom_registration_restart; the transaction is failed and refuses every later step as finished")
    func restartStatus() async throws {
        try await provider()
        hook.script(ScriptedHook.json(4000))
        let id = try #require(await FidoServiceTests.refusal(.customRegistrationRetry) { _ = try await complete() }?.members["transactionId"]?.stringValue)
        hook.script(ScriptedHook.json(5001, data: ["reason": "blocked"]))
        let restart = await FidoServiceTests.refusal(.customRegistrationRestart) { _ = try await complete(transaction: id) }
        #expect(restart?.members["status"] == 5001)
        #expect(try await stored(id).state == .failed)
        let finished = await FidoServiceTests.refusal(.customTransactionFinished) { _ = try await complete(transaction: id) }
        #expect(finished?.members["state"] == "failed")
        await expectCode(.customTransactionFinished) { try await service.cancel(CustomRegistrationCancelRequest(transactionId: id)) }
        #expect(hook.calls.count == 2 && engines.store.count(.users) == 0)
    }

    @Test("A 5xxx on a new one-step transaction records it failed, so the admin's counts see it")
    func restartOnNew() async throws {
        try await provider()
        hook.script(ScriptedHook.json(5000))
        await expectCode(.customRegistrationRestart) { _ = try await complete() }
        let counts = try await service.transactions(providerID: "invite", state: nil, limit: nil).counts
        #expect(counts == ["open": 0, "completed": 0, "cancelled": 0, "failed": 1])
    }

    /// A hook failure and the code the app gets.
    static let failures: [(String, Result<HookAnswer, HookCallError>, ErrorCode)] = [
        ("timeout", .failure(.timeout), .hookTimeout),
        ("network", .failure(.network("connection refused")), .hookUnavailable),
        ("redirect", .failure(.redirect(302)), .hookInvalidAnswer),
        ("too large", .failure(.tooLarge), .hookInvalidAnswer),
        ("address refused", .failure(.refused("10.0.0.1")), .hookAddressRefused),
        ("HTTP 503", .success(HookAnswer(status: 503, body: [])), .hookUnavailable),
        ("HTTP 429", .success(HookAnswer(status: 429, body: [])), .hookUnavailable),
        ("HTTP 404", .success(HookAnswer(status: 404, body: [])), .hookInvalidAnswer),
        ("not JSON", .success(HookAnswer(status: 200, body: Array("<html>".utf8))), .hookInvalidAnswer),
        ("status 1999", ScriptedHook.json(1999), .hookInvalidAnswer),
        ("status 6000", ScriptedHook.json(6000), .hookInvalidAnswer),
        ("status a string", .success(HookAnswer(status: 200, body: Array(#"{"status":"2000"}"#.utf8))), .hookInvalidAnswer),
        ("success without a user", ScriptedHook.json(2000), .hookInvalidAnswer),
        ("user without username", ScriptedHook.json(2000, user: ["id": "x"]), .hookInvalidAnswer),
        ("unusable username", ScriptedHook.json(2000, user: ["username": ""]), .hookInvalidAnswer),
        ("amr not strings", ScriptedHook.json(2000, user: ["username": "dave", "amr": [1]]), .hookInvalidAnswer),
    ]

    @Test("Each hook failure maps to its code; on an open transaction it is counted and the transaction stays usable; no user is created",
        arguments: 0..<CustomRegistrationServiceTests.failures.count)
    func hookFailures(_ index: Int) async throws {
        let (_, answer, code) = Self.failures[index]
        try await provider()
        // A new one-step transaction without registrationId: nothing is written.
        hook.script(answer)
        await expectCode(code) { _ = try await complete() }
        #expect(try await transactions().isEmpty && engines.store.count(.users) == 0)
        // On an open transaction: the attempt is counted, the state stays open.
        hook.script(ScriptedHook.json(4000))
        let id = try #require(await FidoServiceTests.refusal(.customRegistrationRetry) { _ = try await complete() }?.members["transactionId"]?.stringValue)
        hook.script(answer)
        await expectCode(code) { _ = try await complete(transaction: id) }
        let transaction = try await stored(id)
        #expect(transaction.state == .open && transaction.attempts == 2 && engines.store.count(.users) == 0)
    }

    @Test("Retries: network errors and 5xx/429 are tried again with backoff and new idempotency keys; a 4xxx answer is not retried")
    func retries() async throws {
        try await provider(retries: 2)
        hook.script(.failure(.network("reset")), .success(HookAnswer(status: 503, body: [])), ScriptedHook.json(2000, user: Self.user))
        _ = try await complete()
        #expect(hook.calls.map { $0.idempotencyKey?.attempt } == [1, 2, 3])
        #expect(Set(hook.calls.map(\.request.transactionId)).count == 1)
        #expect(hook.slept == [100, 200])
        // All attempts fail: the last failure is the answer.
        hook.script(.failure(.timeout), .failure(.timeout), .failure(.timeout))
        let refused = await FidoServiceTests.refusal(.hookTimeout) { _ = try await complete() }
        #expect(refused?.message.contains("3 attempts") == true && hook.calls.count == 6)
        hook.script(ScriptedHook.json(4000))
        await expectCode(.customRegistrationRetry) { _ = try await complete() }
        #expect(hook.calls.count == 7)
    }

    // MARK: Expiry and cancellation

    @Test("Past the provider's transaction lifetime a step is custom_transaction_expired and the hook is not called")
    func expiry() async throws {
        try await provider("sms", flow: "two_step", lifetime: 60)
        hook.script(ScriptedHook.json(2000))
        let started = try await service.initiate(CustomRegistrationInitRequest(identityProvider: "sms"))
        engines.clock.advance(by: 59)
        hook.script(ScriptedHook.json(4001))
        await expectCode(.customRegistrationRetry) { _ = try await complete(transaction: started.transactionId) }
        engines.clock.advance(by: 1)
        await expectCode(.customTransactionExpired) { _ = try await complete(transaction: started.transactionId) }
        await expectCode(.customTransactionExpired) { try await service.cancel(CustomRegistrationCancelRequest(transactionId: started.transactionId)) }
        #expect(hook.calls.count == 2 && engines.store.count(.users) == 0)
    }

    @Test("Cancel: an open transaction becomes cancelled; cancelling again changes nothing; a later step is finished")
    func cancel() async throws {
        try await provider("sms", flow: "two_step")
        hook.script(ScriptedHook.json(2000))
        let started = try await service.initiate(CustomRegistrationInitRequest(identityProvider: "sms"))
        try await service.cancel(CustomRegistrationCancelRequest(transactionId: started.transactionId))
        let cancelled = try await stored(started.transactionId)
        #expect(cancelled.state == .cancelled && cancelled.finishedAt == engines.now)
        engines.clock.advance(by: 10)
        try await service.cancel(CustomRegistrationCancelRequest(transactionId: started.transactionId))
        #expect(try await stored(started.transactionId) == cancelled)
        await expectCode(.customTransactionFinished) { _ = try await complete(transaction: started.transactionId) }
        #expect(hook.calls.count == 1)
    }

    // MARK: Admin

    @Test("Provider settings are checked: id, flow, hook URL (no private addresses), secret length, bounds, reserved claims; nothing stored")
    func providerValidation() async throws {
        func create(_ change: (inout AdminCustomProviderRequest) -> Void) async throws {
            var request = AdminCustomProviderRequest(id: "p1", name: "P", flow: "one_step", hookURL: Self.hookURL, hookSecret: Self.secret)
            change(&request)
            _ = try await service.createProvider(request)
        }
        await expectCode(.invalidInput) { try await create { $0.id = "bad id" } }
        await expectCode(.invalidInput) { try await create { $0.flow = "three_step" } }
        await expectCode(.invalidInput) { try await create { $0.hookURL = "http://127.0.0.1/hook" } }
        await expectCode(.invalidInput) { try await create { $0.hookURL = "ftp://hooks.example.com/" } }
        await expectCode(.invalidInput) { try await create { $0.hookSecret = "short" } }
        await expectCode(.invalidInput) { try await create { $0.timeout = 61 } }
        await expectCode(.invalidInput) { try await create { $0.retries = 6 } }
        await expectCode(.invalidInput) { try await create { $0.transactionLifetime = 29 } }
        await expectCode(.invalidInput) { try await create { $0.allowedClaims = ["sub"] } }
        await expectCode(.invalidInput) { try await create { $0.allowedClaims = ["a", "a"] } }
        #expect(try await service.providers().customProviders.isEmpty)
        try await create { _ in }
        await expectCode(.conflict) { try await create { _ in } }
        // The secret is stored sealed, never in the clear.
        let stored = try #require(try await engines.store.customProvider(id: "p1"))
        #expect(!stored.sealedSecret.isEmpty && stored.sealedSecret.range(of: Data(Self.secret.utf8)) == nil)
    }
}
