import Crypto
import Foundation
import LatchHookKit
import LatchJOSE
import LatchModel
import Logging

/// Custom registration (OneWelcome's custom identity providers): the operator's own service, called as a signed HTTP
/// hook, decides each step; Latch keeps the transaction, creates the user and registers the device key.
///
/// Each step calls the hook (retried after network errors, timeouts and HTTP 5xx/429, with backoff) and then writes
/// the outcome in one unit of work: a step that fails writes nothing but the attempt on an existing transaction, and a
/// completing step finishes the transaction (one compare-and-set, so once on any replica) together with the user, the
/// device key, the registration record and the event — never a user half-created.
public struct CustomRegistrationService: Sendable {
    let store: any (UnitOfWork & CustomRegistrationStore & UserStore & RegistrationStore)
    let clients: ClientRegistry
    let sealer: KeySealer
    let caller: any HookCaller
    let policy: HookAddressPolicy
    /// Keys the transaction id of a one-step `complete` that carries a `registrationId` (see ``oneStepTransactionID``).
    let transactionKey: SymmetricKey
    let clock: LatchClock
    let random: RandomSource
    /// Waits between hook attempts (milliseconds); injected so tests do not wait.
    let sleep: @Sendable (Int) async -> Void
    let logger: Logger

    /// Largest `data` an app may send for a step, and a hook may answer, as JSON.
    public static let maximumDataBytes = 16 * 1024
    /// Most transactions one admin listing shows.
    public static let maximumListing = 200

    public init(
        store: any (UnitOfWork & CustomRegistrationStore & UserStore & RegistrationStore), clients: ClientRegistry, sealer: KeySealer, caller: any HookCaller, policy: HookAddressPolicy,
        transactionKey: SymmetricKey, clock: LatchClock, random: RandomSource,
        sleep: @escaping @Sendable (Int) async -> Void = { try? await Task.sleep(for: .milliseconds($0)) },
        logger: Logger = Logger(label: "latch.custom-registration")
    ) {
        self.store = store
        self.clients = clients
        self.sealer = sealer
        self.caller = caller
        self.policy = policy
        self.transactionKey = transactionKey
        self.clock = clock
        self.random = random
        self.sleep = sleep
        self.logger = logger
    }

    // MARK: The app's side

    /// `GET /v1/custom-registrations/providers`: the enabled providers.
    public func enabledProviders() async throws -> CustomProviderList {
        CustomProviderList(
            providers: try await store.customProviders().filter(\.enabled).map { CustomProviderInfo(id: $0.id, name: $0.name, flow: $0.flow.rawValue) })
    }

    /// `POST /v1/custom-registrations/init` (two-step providers): calls the hook's `init` on a new transaction, or again
    /// on `transactionId` after a 4xxx.
    public func initiate(_ request: CustomRegistrationInitRequest) async throws -> CustomRegistrationInitResponse {
        let client = try await clients.resolve(request.clientId)
        try Self.checkData(request.data)
        let provider = try await enabledProvider(request.identityProvider)
        guard provider.flow == .twoStep else {
            throw LatchError(.customFlowMismatch, "\(provider.id) is a one-step provider: send complete with identityProvider, no init")
        }
        var existing: CustomTransaction?
        if let id = request.transactionId {
            let transaction = try await openTransaction(id, client: client.id, now: clock.seconds())
            guard transaction.providerID == provider.id else { throw Self.unknownTransaction }
            guard transaction.initData == nil else {
                throw LatchError(.customStepOutOfOrder, "init succeeded on this transaction already: send complete")
            }
            existing = transaction
        }
        let transactionID = existing?.id ?? random.timeOrderedID(now: clock.now())
        let hookRequest = HookRequest(
            step: .`init`, transactionId: transactionID, identityProvider: provider.id, clientId: client.id, data: request.data ?? .null)
        let attempts: Int
        let outcome: Result<HookResponse, LatchError>
        do {
            (attempts, outcome) = try await call(provider, hookRequest, reserving: existing != nil)
        } catch Refusal.transactionGone {
            throw try await gone(transactionID, at: clock.seconds())
        }
        let now = clock.seconds()
        switch outcome {
        case .failure(let error):
            if existing != nil { try await recordFailure(transactionID, attempts: attempts, at: now) }
            throw error
        case .success(let answer):
            let status = Int64(answer.status)
            switch answer.outcome {
            case .success:
                let initData = String(decoding: (answer.data ?? .null).serialized(), as: UTF8.self)
                if existing != nil {
                    try await update(transactionID, at: now) {
                        $0.recordCustomAttempts(id: transactionID, attempts: Int64(attempts), status: status, initData: initData, at: now, ifUnavailable: $1)
                    }
                } else {
                    try await insert(newTransaction(transactionID, provider, client.id, state: .open, initData: initData, attempts: attempts, status: status))
                }
                logger.info("custom registration started", metadata: ["provider": "\(provider.id)", "transaction": "\(transactionID)"])
                return CustomRegistrationInitResponse(transactionId: transactionID, status: answer.status, data: answer.data)
            case .retry:
                try await recordRetry(existing, transactionID, provider, client.id, attempts: attempts, status: status, at: now)
                throw Self.retry(answer, transactionID: transactionID)
            case .restart, .invalid:
                try await recordRestart(existing, transactionID, provider, client.id, attempts: attempts, status: status, at: now)
                throw Self.restart(answer)
            }
        }
    }

    /// `POST /v1/custom-registrations/complete`: calls the hook's `complete` and, on success, creates the user (with the
    /// device key the app sent) and finishes the transaction in one unit of work.
    public func complete(_ request: CustomRegistrationCompleteRequest) async throws -> CustomRegistrationCompleteResponse {
        let client = try await clients.resolve(request.clientId)
        try Self.checkData(request.data)
        if let id = request.registrationId, !RegistrationService.isIdentifier(id) {
            throw LatchError.invalidInput("registrationId must be 1–128 printable characters")
        }
        let deviceKey = try request.publicKey?.checked()
        let now = clock.seconds()
        // The provider and the transaction, if there is one yet.
        let provider: CustomProvider
        var existing: CustomTransaction?
        let transactionID: String
        switch (request.transactionId, request.identityProvider) {
        case (let id?, nil):
            guard let transaction = try await store.customTransaction(id: id) else { throw Self.unknownTransaction }
            guard let found = try await store.customProvider(id: transaction.providerID) else { throw Self.unknownTransaction }
            provider = found
            existing = transaction
            transactionID = id
        case (nil, let name?):
            provider = try await enabledProvider(name)
            guard provider.flow == .oneStep else {
                throw LatchError(
                    .customFlowMismatch, "\(provider.id) is a two-step provider: send init, then complete with its transactionId")
            }
            // A one-step complete with a registrationId has one transaction per (provider, client, registrationId): a
            // retry after a lost answer or a 4xxx lands on it.
            transactionID = request.registrationId.map { oneStepTransactionID(provider: provider.id, client: client.id, registrationID: $0) }
                ?? random.timeOrderedID(now: clock.now())
            existing = try await store.customTransaction(id: transactionID)
            if existing == nil, request.registrationId != nil {
                // Claimed before the hook is called: concurrent retries of this request share the transaction and
                // take distinct attempt numbers.
                let claim = newTransaction(transactionID, provider, client.id, state: .open, initData: nil, attempts: 0, status: nil)
                let claimed = try await store.succeeds { $0.insertCustomTransaction(claim, ifTaken: $1) }
                existing = claimed ? claim : try await store.customTransaction(id: transactionID)
            }
        default:
            throw LatchError.invalidInput("send transactionId or identityProvider (one-step providers), not both")
        }
        let proofHash = Self.proofHash(provider: provider.id, request.publicKey)
        if let transaction = existing {
            guard transaction.clientID == client.id else {
                throw LatchError(.customTransactionClientMismatch, "this transaction was started by another client")
            }
            // A completed transaction answers its user again to the request that completed it (same registrationId).
            if transaction.state == .completed, let id = request.registrationId, transaction.registrationID == id {
                return try await replay(transaction, registrationID: id, proofHash: proofHash)
            }
            try Self.checkOpen(transaction, now: now)
        }
        guard provider.enabled else { throw LatchError(.customProviderDisabled, "the custom identity provider \(provider.id) is disabled") }
        if provider.flow == .twoStep, existing?.initData == nil {
            throw LatchError(.customStepOutOfOrder, "init has not succeeded on this transaction: send init first")
        }
        let hookRequest = HookRequest(
            step: .complete, transactionId: transactionID, identityProvider: provider.id, clientId: client.id, data: request.data ?? .null,
            initData: provider.flow == .twoStep ? existing?.initData.flatMap { try? JSONValue.parse(Array($0.utf8)) } ?? .null : nil)
        let attempts: Int
        let outcome: Result<HookResponse, LatchError>
        do {
            (attempts, outcome) = try await call(provider, hookRequest, reserving: existing != nil)
        } catch Refusal.transactionGone {
            return try await settled(transactionID, registrationID: request.registrationId, proofHash: proofHash, at: clock.seconds())
        }
        let after = clock.seconds()
        let answer: HookResponse
        switch outcome {
        case .failure(let error):
            if existing != nil { try await recordFailure(transactionID, attempts: attempts, at: after) }
            throw error
        case .success(let answered):
            answer = answered
        }
        let status = Int64(answer.status)
        switch answer.outcome {
        case .success: break
        case .retry:
            try await recordRetry(existing, transactionID, provider, client.id, attempts: attempts, status: status, at: after)
            throw Self.retry(answer, transactionID: transactionID)
        case .restart, .invalid:
            try await recordRestart(existing, transactionID, provider, client.id, attempts: attempts, status: status, at: after)
            throw Self.restart(answer)
        }
        // The hook said yes: the user it names.
        let user: User
        do {
            user = try newUser(answer.user, provider: provider, now: after)
        } catch {
            if existing != nil { try await recordFailure(transactionID, attempts: attempts, at: after) }
            throw error
        }
        let key = deviceKey.map { DeviceKey(userID: user.id, keyID: $0.keyID, key: $0.key, createdAt: after) }
        let record = request.registrationId.map { RegistrationRecord(id: $0, userID: user.id, proofHash: proofHash, createdAt: after) }
        let amr = (answer.user?.amr ?? []).prefix(8).map { String($0.prefix(32)) }
        let event = SecurityEvent.now(
            .userRegistered, actor: "user", userID: user.id,
            detail: "CUSTOM:\(provider.id)" + (amr.isEmpty ? "" : " amr=\(amr.joined(separator: ","))"), clock: clock, random: random)
        let completed = newTransaction(
            transactionID, provider, client.id, state: .completed, initData: nil, attempts: attempts, status: status, userID: user.id,
            registrationID: request.registrationId, finishedAt: after)
        let continuing = existing != nil
        do {
            try await store.write { transaction in
                if continuing {
                    transaction.recordCustomAttempts(
                        id: transactionID, attempts: Int64(attempts), status: status, initData: nil, at: after, ifUnavailable: Refusal.transactionGone)
                    transaction.finishCustomTransaction(
                        id: transactionID, state: .completed, userID: user.id, registrationID: request.registrationId, status: status, at: after,
                        ifUnavailable: Refusal.transactionGone)
                } else {
                    transaction.insertCustomTransaction(completed, ifTaken: Refusal.transactionGone)
                }
                if let record { transaction.requireNoRegistration(id: record.id, ifExists: Refusal.registrationExists) }
                transaction.insertUser(user, ifTaken: Refusal.usernameTaken)
                if let key { transaction.insertDeviceKey(key, ifTaken: Refusal.usernameTaken) }
                if let record { transaction.insertRegistration(record, ifTaken: Refusal.registrationExists) }
                transaction.record(event)
            }
        } catch let refusal as Refusal {
            switch refusal {
            case .transactionGone:
                return try await settled(transactionID, registrationID: request.registrationId, proofHash: proofHash, at: after)
            case .registrationExists:
                if existing != nil { try? await recordFailure(transactionID, attempts: attempts, status: status, at: after) }
                throw LatchError(.registrationConflict, "this registrationId was used for another registration")
            case .usernameTaken:
                if existing != nil { try? await recordFailure(transactionID, attempts: attempts, status: status, at: after) }
                throw LatchError(.alreadyRegistered, "a user named \(user.username) is already registered")
            }
        }
        logger.info(
            "registered", metadata: ["user": "\(user.id)", "type": "CUSTOM", "provider": "\(provider.id)", "transaction": "\(transactionID)"])
        return CustomRegistrationCompleteResponse(userId: user.id, username: user.username, status: answer.status, data: answer.data)
    }

    /// `POST /v1/custom-registrations/cancel`: an open transaction becomes `cancelled` (again: no change).
    public func cancel(_ request: CustomRegistrationCancelRequest) async throws {
        let client = try await clients.resolve(request.clientId)
        guard let transaction = try await store.customTransaction(id: request.transactionId) else { throw Self.unknownTransaction }
        guard transaction.clientID == client.id else {
            throw LatchError(.customTransactionClientMismatch, "this transaction was started by another client")
        }
        if transaction.state == .cancelled { return }
        let now = clock.seconds()
        try Self.checkOpen(transaction, now: now)
        try await update(transaction.id, at: now) {
            $0.finishCustomTransaction(
                id: transaction.id, state: .cancelled, userID: nil, registrationID: nil, status: transaction.lastStatus, at: now, ifUnavailable: $1)
        }
        logger.info("custom registration cancelled", metadata: ["transaction": "\(transaction.id)"])
    }

    // MARK: Steps

    /// Why a completing unit of work was refused.
    enum Refusal: Error {
        case transactionGone, registrationExists, usernameTaken
    }

    static let unknownTransaction = LatchError(.customTransactionUnknown, "no custom registration transaction has this id")

    static func finished(_ state: CustomTransaction.State) -> LatchError {
        LatchError(
            .customTransactionFinished, "this transaction is \(state.rawValue): start a new one", members: ["state": .string(state.rawValue)])
    }

    /// The answer to a `complete` whose transaction another request finished (or that expired) while this one ran: the
    /// same user when that request was this one again (the same `registrationId`), else why it cannot continue.
    func settled(_ id: String, registrationID: String?, proofHash: Data, at now: Int64) async throws -> CustomRegistrationCompleteResponse {
        if let registrationID, let transaction = try await store.customTransaction(id: id), transaction.state == .completed,
            transaction.registrationID == registrationID
        {
            return try await replay(transaction, registrationID: registrationID, proofHash: proofHash)
        }
        throw try await gone(id, at: now)
    }

    /// Why a transaction that was open a moment ago cannot continue.
    func gone(_ id: String, at now: Int64) async throws -> LatchError {
        guard let transaction = try await store.customTransaction(id: id) else { return Self.unknownTransaction }
        try Self.checkOpen(transaction, now: now)
        return Self.finished(transaction.state)
    }

    /// Refuses a finished or expired transaction.
    static func checkOpen(_ transaction: CustomTransaction, now: Int64) throws(LatchError) {
        guard transaction.state == .open else { throw finished(transaction.state) }
        guard now < transaction.expiresAt else {
            throw LatchError(.customTransactionExpired, "this transaction expired: start again")
        }
    }

    /// An open, unexpired transaction of `client`.
    func openTransaction(_ id: String, client: String, now: Int64) async throws -> CustomTransaction {
        guard let transaction = try await store.customTransaction(id: id) else { throw Self.unknownTransaction }
        guard transaction.clientID == client else {
            throw LatchError(.customTransactionClientMismatch, "this transaction was started by another client")
        }
        try Self.checkOpen(transaction, now: now)
        return transaction
    }

    func knownProvider(_ id: String) async throws -> CustomProvider {
        guard Self.isProviderID(id), let provider = try await store.customProvider(id: id) else {
            throw LatchError(.customProviderUnknown, "no custom identity provider has this id")
        }
        return provider
    }

    func enabledProvider(_ id: String) async throws -> CustomProvider {
        let provider = try await knownProvider(id)
        guard provider.enabled else { throw LatchError(.customProviderDisabled, "the custom identity provider \(provider.id) is disabled") }
        return provider
    }

    static func checkData(_ data: JSONValue?) throws(LatchError) {
        guard let data else { return }
        guard data.serialized().count <= maximumDataBytes else {
            throw LatchError(.requestTooLarge, "data exceeds \(maximumDataBytes) bytes as JSON")
        }
    }

    /// The id of a one-step transaction with a `registrationId`: an HMAC of provider, client and registration id under a
    /// key of the deployment — stable for retries, unguessable without the key.
    func oneStepTransactionID(provider: String, client: String, registrationID: String) -> String {
        var mac = HMAC<SHA256>(key: transactionKey)
        for part in [provider, client, registrationID] {
            mac.update(data: Array(part.utf8))
            mac.update(data: [0])
        }
        return "r" + Base64URL.encode(Array(mac.finalize()).prefix(18))
    }

    /// What a `registrationId` is bound to: the provider and the device key.
    static func proofHash(provider: String, _ key: RegistrationPublicKey?) -> Data {
        var hasher = SHA256()
        for part in ["CUSTOM", provider, key?.keyId ?? "", key?.algorithm ?? "", key?.publicKey ?? ""] {
            hasher.update(data: Array(part.utf8))
            hasher.update(data: [0])
        }
        return Data(hasher.finalize())
    }

    /// The answer to a `complete` repeated after it succeeded: the same user, when the registration id is bound to the
    /// same provider and device key.
    func replay(_ transaction: CustomTransaction, registrationID: String, proofHash: Data) async throws -> CustomRegistrationCompleteResponse {
        guard let record = try await store.registration(id: registrationID), let user = try await store.user(id: record.userID) else {
            throw LatchError(.registrationConflict, "this registrationId belongs to a deleted user")
        }
        guard user.id == transaction.userID, RegistrationService.Idempotency.sameProof(record.proofHash, proofHash) else {
            throw LatchError(.registrationConflict, "this registrationId was used for another registration")
        }
        return CustomRegistrationCompleteResponse(userId: user.id, username: user.username, status: Int(transaction.lastStatus ?? 2000))
    }

    /// The user a successful `complete` names, in Latch's own username namespace.
    func newUser(_ hookUser: HookUser?, provider: CustomProvider, now: Int64) throws(LatchError) -> User {
        guard let hookUser else { throw LatchError(.hookInvalidAnswer, "the hook answered success without a user") }
        let username: String
        do {
            username = try Usernames.native(hookUser.username)
        } catch {
            throw LatchError(.hookInvalidAnswer, "the hook's username is not acceptable: it \(error)")
        }
        if let id = hookUser.id, !(1...255).contains(id.utf8.count) || id.containsControlCharacters {
            throw LatchError(.hookInvalidAnswer, "the hook's user id must be 1–255 bytes without control characters")
        }
        let claims = FederatedAssertion.keptClaims(hookUser.attributes ?? [:], allowed: provider.allowedClaims)
        return User(id: random.uuid(), username: username, kind: .custom, issuer: nil, subject: hookUser.id, claims: claims, createdAt: now)
    }

    func newTransaction(
        _ id: String, _ provider: CustomProvider, _ client: String, state: CustomTransaction.State, initData: String?, attempts: Int, status: Int64?,
        userID: String? = nil, registrationID: String? = nil, finishedAt: Int64? = nil
    ) -> CustomTransaction {
        let now = clock.seconds()
        return CustomTransaction(
            id: id, providerID: provider.id, clientID: client, state: state, initData: initData, attempts: Int64(attempts), lastStatus: status,
            userID: userID, registrationID: registrationID, createdAt: now, expiresAt: now + provider.transactionLifetime,
            finishedAt: finishedAt ?? (state.isFinal ? now : nil))
    }

    /// Inserts a new transaction; an id taken meanwhile (a concurrent one-step retry) is that request's.
    func insert(_ transaction: CustomTransaction) async throws {
        do {
            try await store.write { $0.insertCustomTransaction(transaction, ifTaken: Refusal.transactionGone) }
        } catch Refusal.transactionGone {
            throw LatchError(.conflict, "a concurrent request is using this transaction; try again")
        }
    }

    /// Runs a write on an existing transaction; a refusal means it was finished or expired meanwhile.
    func update(_ id: String, at now: Int64, _ body: @escaping @Sendable (any StoreTransaction, any Error & Sendable) -> Void) async throws {
        guard try await !store.succeeds(body) else { return }
        throw try await gone(id, at: now)
    }

    /// Counts hook calls that gave no usable answer (or an answer Latch could not act on) on an existing transaction.
    func recordFailure(_ id: String, attempts: Int, status: Int64? = nil, at now: Int64) async throws {
        try await update(id, at: now) {
            $0.recordCustomAttempts(id: id, attempts: Int64(attempts), status: status, initData: nil, at: now, ifUnavailable: $1)
        }
    }

    /// A 4xxx: the transaction stays open (created open when new).
    func recordRetry(
        _ existing: CustomTransaction?, _ id: String, _ provider: CustomProvider, _ client: String, attempts: Int, status: Int64, at now: Int64
    ) async throws {
        if existing != nil {
            try await recordFailure(id, attempts: attempts, status: status, at: now)
        } else {
            try await insert(newTransaction(id, provider, client, state: .open, initData: nil, attempts: attempts, status: status))
        }
    }

    /// A 5xxx: the transaction is dead (created failed when new, so the admin's counts see it).
    func recordRestart(
        _ existing: CustomTransaction?, _ id: String, _ provider: CustomProvider, _ client: String, attempts: Int, status: Int64, at now: Int64
    ) async throws {
        if existing != nil {
            try await update(id, at: now) { transaction, refusal in
                transaction.recordCustomAttempts(id: id, attempts: Int64(attempts), status: status, initData: nil, at: now, ifUnavailable: refusal)
                transaction.finishCustomTransaction(
                    id: id, state: .failed, userID: nil, registrationID: nil, status: status, at: now, ifUnavailable: refusal)
            }
        } else {
            try await insert(newTransaction(id, provider, client, state: .failed, initData: nil, attempts: attempts, status: status))
        }
    }

    static func retry(_ answer: HookResponse, transactionID: String) -> LatchError {
        LatchError(
            .customRegistrationRetry, "the step may be tried again on this transaction (hook status \(answer.status))",
            members: ["status": .int(Int64(answer.status)), "data": answer.data ?? .null, "transactionId": .string(transactionID)])
    }

    static func restart(_ answer: HookResponse) -> LatchError {
        LatchError(
            .customRegistrationRestart, "the registration cannot continue: start again (hook status \(answer.status))",
            members: ["status": .int(Int64(answer.status)), "data": answer.data ?? .null])
    }
}
