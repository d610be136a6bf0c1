import Foundation
import LatchCore
import LatchModel

/// A store in memory, for unit tests of the engines. It passes the same conformance suite as SQLite and
/// PostgreSQL (``StoreConformance``): one lock serializes every unit of work, and a unit that is refused leaves
/// the state as it was.
public final class InMemoryStore: LatchStore {
    /// Every table, as plain values: a unit of work edits a copy and swaps it in on success.
    struct State {
        var users: [String: User] = [:]
        var deviceKeys: [DeviceKeyID: DeviceKey] = [:]
        var registrations: [String: RegistrationRecord] = [:]
        var usedJTIs: [JTI: Int64] = [:]
        var sessions: [String: Session] = [:]
        /// When housekeeping may delete a session: its expiry, or a day after revocation.
        var sessionPurgeAt: [String: Int64] = [:]
        var issuerKeys: [IssuerKeyID: IssuerKey] = [:]
        var testKeys: [String: TestRegistrationKey] = [:]
        var clients: [String: Client] = [:]
        var signingCertificates: [SigningCertificateID: SigningCertificate] = [:]
        var authenticators: [String: Authenticator] = [:]
        var outOfBand: [String: OutOfBandTransaction] = [:]
        var loginIssuers: [String: LoginIssuer] = [:]
        /// The (issuer, consumer) pairs of each session that holds any; they go with their session.
        var sessionConsumers: [String: Set<ConsumerPair>] = [:]
        var resourceServers: [String: ResourceServer] = [:]
        var customProviders: [String: CustomProvider] = [:]
        /// Custom registration transactions; they go with their provider.
        var customTransactions: [String: CustomTransaction] = [:]
        var signingKeys: [String: SigningKeyRecord] = [:]
        var adminTokens: [String: AdminTokenRecord] = [:]
        var adminAccounts: [String: AdminAccount] = [:]
        var revokedAdminTokens: [Data: Int64] = [:]
        /// Admin passkeys by id; they go with their account.
        var adminPasskeys: [String: AdminPasskey] = [:]
        /// The audit log by record number (sealed records first, in chain order; then the unsealed), and its anchor and
        /// head; the next record's number.
        var audit: [AuditRecord] = []
        var auditNextSeq: Int64 = 1
        var auditAnchor = AuditAnchor(anchorSeq: 0, anchorMAC: AuditChain.genesis, headSeq: 0, headMAC: AuditChain.genesis)
        var upstreamIdPs: [String: UpstreamIdP] = [:]
        /// Web sessions; they go with their user and their upstream.
        var webSessions: [String: WebSession] = [:]

        /// Deletes a session with what goes with it (as the SQL stores' foreign keys cascade).
        mutating func removeSession(id: String) {
            sessions[id] = nil
            sessionPurgeAt[id] = nil
            sessionConsumers[id] = nil
        }
    }

    struct DeviceKeyID: Hashable {
        let userID: String
        let keyID: String
    }

    struct SigningCertificateID: Hashable, Comparable {
        let clientID: String
        let sha256: String
        static func < (lhs: Self, rhs: Self) -> Bool { (lhs.clientID, lhs.sha256) < (rhs.clientID, rhs.sha256) }
    }

    struct JTI: Hashable {
        let issuer: String
        let jti: String
    }

    struct IssuerKeyID: Hashable, Comparable {
        let issuer: String
        let keyID: String
        static func < (lhs: Self, rhs: Self) -> Bool { (lhs.issuer, lhs.keyID) < (rhs.issuer, rhs.keyID) }
    }

    private let state = Locked(State())
    /// Chains the audit records this store writes.
    public let auditChain = AuditChain()

    public init() {}

    /// How many rows a table holds (to prove a refused request wrote nothing).
    public func count(_ table: Table) -> Int {
        state.withLock { state in
            switch table {
            case .users: state.users.count
            case .deviceKeys: state.deviceKeys.count
            case .registrations: state.registrations.count
            case .usedJTIs: state.usedJTIs.count
            case .sessions: state.sessions.count
            case .sessionConsumers: state.sessionConsumers.values.reduce(0) { $0 + $1.count }
            case .events: state.audit.count
            }
        }
    }

    /// The tables ``count(_:)`` can count.
    public enum Table: CaseIterable, Sendable {
        case users, deviceKeys, registrations, usedJTIs, sessions, sessionConsumers, events
    }

    // MARK: Unit of work

    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) -> T) async throws -> T {
        try state.withLock { state throws -> T in
            let transaction = Transaction(state, chain: auditChain)
            let result = body(transaction)
            if let refusal = transaction.refusal { throw refusal }
            state = transaction.state
            return result
        }
    }

    public func updateSession<Result: Sendable>(
        id: String, _ decide: @escaping @Sendable (Session, User) -> SessionUpdate<Result>
    ) async throws -> Result? {
        state.withLock { state -> Result? in
            guard let session = state.sessions[id], let user = state.users[session.userID] else { return nil }
            let update = decide(session, user)
            if let changed = update.session {
                var stored = session
                stored.generation = changed.generation
                stored.retryGeneration = changed.retryGeneration
                stored.rotatedAt = changed.rotatedAt
                if stored.revokedAt == nil, let revokedAt = changed.revokedAt {
                    stored.revokedAt = revokedAt
                    state.sessionPurgeAt[id] = min(state.sessionPurgeAt[id] ?? .max, revokedAt + 86_400)
                }
                state.sessions[id] = stored
            }
            return update.result
        }
    }

    /// The writes of one unit, applied to a copy of the state; the first refusal stops them.
    final class Transaction: StoreTransaction {
        var state: State
        var refusal: (any Error & Sendable)?
        let chain: AuditChain

        init(_ state: State, chain: AuditChain) {
            self.state = state
            self.chain = chain
        }

        /// Runs `change` unless the unit was refused already; a returned refusal refuses it.
        private func apply(_ change: (inout State) -> (any Error & Sendable)?) {
            guard refusal == nil else { return }
            refusal = change(&state)
        }

        func consume(_ value: SingleUse, ifUnavailable refusal: any Error & Sendable) {
            apply { state in
                switch value {
                case .jti(let jti, let issuer, let until):
                    let key = JTI(issuer: issuer, jti: jti)
                    guard state.usedJTIs[key] == nil else { return refusal }
                    state.usedJTIs[key] = until
                }
                return nil
            }
        }

        func insertUser(_ user: User, ifTaken refusal: any Error & Sendable) {
            apply { state in
                let taken = state.users.values.contains {
                    $0.id == user.id || ($0.source == user.source && $0.username == user.username)
                        || (user.issuer != nil && $0.issuer == user.issuer && $0.subject == user.subject)
                }
                if taken { return refusal }
                state.users[user.id] = user
                return nil
            }
        }

        func insertDeviceKey(_ key: DeviceKey, ifTaken refusal: any Error & Sendable) {
            apply { state in
                let id = DeviceKeyID(userID: key.userID, keyID: key.keyID)
                guard state.users[key.userID] != nil else { preconditionFailure("device key of an unknown user") }
                guard state.deviceKeys[id] == nil else { return refusal }
                state.deviceKeys[id] = key
                return nil
            }
        }

        func insertOutOfBandTransaction(_ transaction: OutOfBandTransaction, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.users[transaction.userID] != nil, state.outOfBand[transaction.id] == nil,
                    !state.outOfBand.values.contains(where: {
                        $0.tokenHash == transaction.tokenHash || $0.statusTokenHash == transaction.statusTokenHash
                    })
                else { return refusal }
                state.outOfBand[transaction.id] = transaction
                return nil
            }
        }

        func redeemOutOfBandTransaction(id: String, at: Int64, ifUnavailable refusal: any Error & Sendable) {
            apply { state in
                guard let stored = state.outOfBand[id], stored.state == .pending, at < stored.expiresAt else { return refusal }
                state.outOfBand[id]?.state = .redeemed
                state.outOfBand[id]?.redeemedAt = at
                return nil
            }
        }

        func completeOutOfBandTransaction(
            id: String, state final: OutOfBandTransaction.State, authenticatorID: String?, at: Int64, ifUnavailable refusal: any Error & Sendable
        ) {
            apply { state in
                guard state.outOfBand[id]?.state == .redeemed else { return refusal }
                state.outOfBand[id]?.state = final
                state.outOfBand[id]?.completedAt = at
                state.outOfBand[id]?.authenticatorID = authenticatorID
                return nil
            }
        }

        func insertAuthenticator(_ authenticator: Authenticator, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.users[authenticator.userID] != nil, state.authenticators[authenticator.id] == nil,
                    !state.authenticators.values.contains(where: { $0.credentialID == authenticator.credentialID })
                else { return refusal }
                state.authenticators[authenticator.id] = authenticator
                return nil
            }
        }

        func recordAuthenticatorUse(id: String, signCount: UInt32, failedAttempts: Int?, at: Int64, ifChanged refusal: any Error & Sendable) {
            apply { state in
                guard let stored = state.authenticators[id], stored.signCount < signCount || (stored.signCount == 0 && signCount == 0),
                    failedAttempts.map({ stored.failedAttempts == $0 }) ?? true
                else { return refusal }
                state.authenticators[id]?.signCount = signCount
                state.authenticators[id]?.lastUsedAt = at
                state.authenticators[id]?.failedAttempts = 0
                state.authenticators[id]?.lastFailedAt = nil
                return nil
            }
        }

        func deleteAuthenticators(userID: String) {
            apply { state in
                state.authenticators = state.authenticators.filter { $0.value.userID != userID }
                return nil
            }
        }

        func reservePinAttempt(id: String, maxAttempts: Int, coolDowns: [Int64], at: Int64, ifRefused refusal: any Error & Sendable) -> WriteResult<Int> {
            let result = WriteResult(0)
            apply { state in
                guard let stored = state.authenticators[id], stored.failedAttempts < maxAttempts else { return refusal }
                if stored.failedAttempts > 0, let last = stored.lastFailedAt,
                    last.adding(seconds: PinPolicy.coolDown(after: stored.failedAttempts, of: coolDowns)) > at
                { return refusal }
                state.authenticators[id]?.failedAttempts = stored.failedAttempts + 1
                state.authenticators[id]?.lastFailedAt = at
                result.set(stored.failedAttempts + 1)
                return nil
            }
            return result
        }

        func releasePinAttempt(id: String) {
            apply { state in
                if let stored = state.authenticators[id], stored.failedAttempts > 0 { state.authenticators[id]?.failedAttempts = stored.failedAttempts - 1 }
                return nil
            }
        }

        func unlockAuthenticator(id: String, userID: String, ifMissing refusal: any Error & Sendable) {
            apply { state in
                guard state.authenticators[id]?.userID == userID else { return refusal }
                state.authenticators[id]?.failedAttempts = 0
                state.authenticators[id]?.lastFailedAt = nil
                return nil
            }
        }

        func replaceAuthenticatorKey(
            id: String, oldPublicKeyCOSE: Data, publicKeyCOSE: Data, signCount: UInt32, at: Int64, ifChanged refusal: any Error & Sendable
        ) {
            apply { state in
                guard state.authenticators[id]?.publicKeyCOSE == oldPublicKeyCOSE else { return refusal }
                state.authenticators[id]?.publicKeyCOSE = publicKeyCOSE
                state.authenticators[id]?.signCount = signCount
                state.authenticators[id]?.failedAttempts = 0
                state.authenticators[id]?.lastFailedAt = nil
                state.authenticators[id]?.lastUsedAt = at
                return nil
            }
        }

        func renameAuthenticator(id: String, userID: String, name: String, ifMissing refusal: any Error & Sendable) {
            apply { state in
                guard state.authenticators[id]?.userID == userID else { return refusal }
                state.authenticators[id]?.name = name
                return nil
            }
        }

        func deleteAuthenticator(id: String, userID: String, ifMissing refusal: any Error & Sendable) {
            apply { state in
                guard state.authenticators[id]?.userID == userID else { return refusal }
                state.authenticators[id] = nil
                return nil
            }
        }

        func advanceSignCount(userID: String, keyID: String, to signCount: UInt32, ifNotGreater refusal: any Error & Sendable) {
            apply { state in
                let id = DeviceKeyID(userID: userID, keyID: keyID)
                guard let stored = state.deviceKeys[id]?.attestation, stored.signCount < signCount else { return refusal }
                state.deviceKeys[id]?.attestation?.signCount = signCount
                return nil
            }
        }

        func requireUser(id: String, ifMissing refusal: any Error & Sendable) {
            apply { state in state.users[id] == nil ? refusal : nil }
        }

        func updateClaims(userID: String, claims: [String: JSONValue]) {
            apply { state in
                state.users[userID]?.claims = claims
                return nil
            }
        }

        func deleteUser(id: String, ifMissing refusal: any Error & Sendable) {
            apply { state in
                guard state.users.removeValue(forKey: id) != nil else { return refusal }
                state.deviceKeys = state.deviceKeys.filter { $0.key.userID != id }
                state.authenticators = state.authenticators.filter { $0.value.userID != id }
                state.outOfBand = state.outOfBand.filter { $0.value.userID != id }
                state.registrations = state.registrations.filter { $0.value.userID != id }
                for (sessionID, session) in state.sessions where session.userID == id { state.removeSession(id: sessionID) }
                state.webSessions = state.webSessions.filter { $0.value.userID != id }
                return nil
            }
        }

        func requireNoRegistration(id: String, ifExists refusal: any Error & Sendable) {
            apply { state in state.registrations[id] == nil ? nil : refusal }
        }

        func insertRegistration(_ record: RegistrationRecord, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.registrations[record.id] == nil else { return refusal }
                state.registrations[record.id] = record
                return nil
            }
        }

        func insertSession(_ session: Session) {
            apply { state in
                state.sessions[session.id] = session
                state.sessionPurgeAt[session.id] = session.expiresAt
                return nil
            }
        }

        private func revoke(where matches: (Session, State) -> Bool, at now: Int64, liveOnly: Bool) -> WriteResult<Int> {
            let result = WriteResult(0)
            apply { state in
                var count = 0
                for (id, session) in state.sessions where matches(session, state) && session.revokedAt == nil && (!liveOnly || session.expiresAt > now) {
                    state.sessions[id]?.revokedAt = now
                    state.sessionPurgeAt[id] = min(state.sessionPurgeAt[id] ?? .max, now + 86_400)
                    count += 1
                }
                result.set(count)
                return nil
            }
            return result
        }

        func revokeSession(id: String, at now: Int64) -> WriteResult<Int> {
            revoke(where: { session, _ in session.id == id }, at: now, liveOnly: false)
        }

        func revokeSessions(userID: String, at now: Int64) -> WriteResult<Int> {
            revoke(where: { session, _ in session.userID == userID }, at: now, liveOnly: true)
        }

        func insertLoginIssuer(_ issuer: LoginIssuer, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.loginIssuers[issuer.id] == nil else { return refusal }
                state.loginIssuers[issuer.id] = issuer
                return nil
            }
        }

        func deleteLoginIssuer(id: String) -> WriteResult<Int> {
            let result = WriteResult(0)
            apply { state in
                result.set(state.loginIssuers.removeValue(forKey: id) == nil ? 0 : 1)
                return nil
            }
            return result
        }

        func insertSessionConsumers(sessionID: String, _ pairs: [ConsumerPair], at: Int64) {
            guard !pairs.isEmpty else { return }
            apply { state in
                guard state.sessions[sessionID] != nil else { preconditionFailure("consumers of an unknown session") }
                state.sessionConsumers[sessionID, default: []].formUnion(pairs)
                return nil
            }
        }

        func renewLogin(sessionID: String, authTime: Int64, expiresAt: Int64, ifUnavailable refusal: any Error & Sendable) {
            apply { state in
                guard let session = state.sessions[sessionID], session.revokedAt == nil, session.expiresAt > authTime else { return refusal }
                state.sessions[sessionID]?.authTime = authTime
                state.sessions[sessionID]?.expiresAt = expiresAt
                state.sessionPurgeAt[sessionID] = expiresAt
                return nil
            }
        }

        func revokeSessions(holdingAny pairs: [ConsumerPair], at now: Int64) -> WriteResult<Int> {
            let wanted = Set(pairs)
            return revoke(where: { session, state in !(state.sessionConsumers[session.id] ?? []).isDisjoint(with: wanted) }, at: now, liveOnly: true)
        }

        func insertResourceServer(_ server: ResourceServer, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.resourceServers[server.id] == nil else { return refusal }
                state.resourceServers[server.id] = server
                return nil
            }
        }

        func deleteResourceServer(id: String) -> WriteResult<Int> {
            let result = WriteResult(0)
            apply { state in
                result.set(state.resourceServers.removeValue(forKey: id) == nil ? 0 : 1)
                return nil
            }
            return result
        }

        func insertCustomProvider(_ provider: CustomProvider, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.customProviders[provider.id] == nil else { return refusal }
                state.customProviders[provider.id] = provider
                return nil
            }
        }

        func updateCustomProvider(_ provider: CustomProvider, ifMissing refusal: any Error & Sendable) {
            apply { state in
                guard let stored = state.customProviders[provider.id] else { return refusal }
                var updated = provider
                updated.createdAt = stored.createdAt
                state.customProviders[provider.id] = updated
                return nil
            }
        }

        func deleteCustomProvider(id: String) -> WriteResult<Int> {
            let result = WriteResult(0)
            apply { state in
                guard state.customProviders.removeValue(forKey: id) != nil else { return nil }
                state.customTransactions = state.customTransactions.filter { $0.value.providerID != id }
                result.set(1)
                return nil
            }
            return result
        }

        func insertCustomTransaction(_ transaction: CustomTransaction, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.customProviders[transaction.providerID] != nil, state.customTransactions[transaction.id] == nil else { return refusal }
                state.customTransactions[transaction.id] = transaction
                return nil
            }
        }

        func recordCustomAttempts(
            id: String, attempts: Int64, status: Int64?, initData: String?, at: Int64, ifUnavailable refusal: any Error & Sendable
        ) {
            apply { state in
                guard let stored = state.customTransactions[id], stored.state == .open, at < stored.expiresAt else { return refusal }
                state.customTransactions[id]?.attempts += attempts
                state.customTransactions[id]?.lastStatus = status
                if let initData { state.customTransactions[id]?.initData = initData }
                return nil
            }
        }

        func reserveCustomAttempt(id: String, at: Int64, ifUnavailable refusal: any Error & Sendable) -> WriteResult<Int64> {
            let result = WriteResult<Int64>(0)
            apply { state in
                guard let stored = state.customTransactions[id], stored.state == .open, at < stored.expiresAt else { return refusal }
                state.customTransactions[id]?.attempts += 1
                result.set(stored.attempts + 1)
                return nil
            }
            return result
        }

        func finishCustomTransaction(
            id: String, state final: CustomTransaction.State, userID: String?, registrationID: String?, status: Int64?, at: Int64,
            ifUnavailable refusal: any Error & Sendable
        ) {
            precondition(final.isFinal, "a custom transaction is finished in a final state")
            apply { state in
                guard let stored = state.customTransactions[id], stored.state == .open, at < stored.expiresAt else { return refusal }
                state.customTransactions[id]?.state = final
                state.customTransactions[id]?.userID = userID
                state.customTransactions[id]?.registrationID = registrationID
                state.customTransactions[id]?.lastStatus = status
                state.customTransactions[id]?.finishedAt = at
                return nil
            }
        }

        func insertIssuerKey(_ key: IssuerKey, ifTaken refusal: any Error & Sendable) {
            apply { state in
                let id = IssuerKeyID(issuer: key.issuer, keyID: key.keyID)
                guard state.issuerKeys[id] == nil else { return refusal }
                state.issuerKeys[id] = key
                return nil
            }
        }

        func deleteIssuerKeys(issuer: String, keyID: String?) -> WriteResult<Int> {
            let result = WriteResult(0)
            apply { state in
                let doomed = state.issuerKeys.keys.filter { $0.issuer == issuer && (keyID == nil || $0.keyID == keyID) }
                for id in doomed { state.issuerKeys[id] = nil }
                result.set(doomed.count)
                return nil
            }
            return result
        }

        func insertTestRegistrationKey(_ key: TestRegistrationKey, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.testKeys[key.keyID] == nil else { return refusal }
                state.testKeys[key.keyID] = key
                return nil
            }
        }

        func deleteTestRegistrationKey(id: String, ifMissing refusal: any Error & Sendable) {
            apply { state in state.testKeys.removeValue(forKey: id) == nil ? refusal : nil }
        }

        func deleteTestRegistrationKeys(owner: String) {
            apply { state in
                state.testKeys = state.testKeys.filter { $0.value.owner != owner }
                return nil
            }
        }

        func insertClient(_ client: Client, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.clients[client.id] == nil else { return refusal }
                state.clients[client.id] = client
                return nil
            }
        }

        func updateClientEvidence(id: String, evidence: ClientEvidence, ifMissing refusal: any Error & Sendable) {
            apply { state in
                guard state.clients[id] != nil else { return refusal }
                state.clients[id]?.evidence = evidence
                return nil
            }
        }

        func insertSigningCertificate(_ certificate: SigningCertificate, ifTaken refusal: any Error & Sendable) {
            apply { state in
                let id = SigningCertificateID(clientID: certificate.clientID, sha256: certificate.sha256)
                guard state.clients[certificate.clientID] != nil, state.signingCertificates[id] == nil else { return refusal }
                state.signingCertificates[id] = certificate
                return nil
            }
        }

        func deleteSigningCertificate(clientID: String, sha256: String, ifMissing refusal: any Error & Sendable) {
            apply { state in
                state.signingCertificates.removeValue(forKey: SigningCertificateID(clientID: clientID, sha256: sha256)) == nil ? refusal : nil
            }
        }

        func deleteSigningCertificates(owner: String) {
            apply { state in
                state.signingCertificates = state.signingCertificates.filter { $0.value.owner != owner }
                return nil
            }
        }

        func deleteClient(id: String, ifMissing refusal: any Error & Sendable) {
            apply { state in
                guard state.clients.removeValue(forKey: id) != nil else { return refusal }
                state.signingCertificates = state.signingCertificates.filter { $0.key.clientID != id }
                for (sessionID, session) in state.sessions where session.clientID == id { state.removeSession(id: sessionID) }
                return nil
            }
        }

        func activateSigningKey(_ key: SigningKeyRecord) {
            apply { state in
                for (id, record) in state.signingKeys where record.retiredAt == nil && record.algorithm == key.algorithm {
                    state.signingKeys[id]?.retiredAt = key.createdAt
                }
                state.signingKeys[key.keyID] = key
                return nil
            }
        }

        func deleteSigningKeys(retiredBefore cutoff: Int64) -> WriteResult<Int> {
            let result = WriteResult(0)
            apply { state in
                let doomed = state.signingKeys.values.filter { ($0.retiredAt ?? .max) < cutoff }.map(\.keyID)
                for id in doomed { state.signingKeys[id] = nil }
                result.set(doomed.count)
                return nil
            }
            return result
        }

        func putAdminToken(_ token: AdminTokenRecord) {
            apply { state in
                state.adminTokens[token.id] = token
                return nil
            }
        }

        func putAdminTokenOfAccount(_ token: AdminTokenRecord, ifAccountMissing refusal: any Error & Sendable) {
            apply { state in
                guard state.adminAccounts[token.accountID] != nil else { return refusal }
                state.adminTokens[token.id] = token
                return nil
            }
        }

        func deleteAdminToken(id: String, ifMissing refusal: any Error & Sendable) {
            apply { state in state.adminTokens.removeValue(forKey: id) == nil ? refusal : nil }
        }

        func insertAdminAccount(_ account: AdminAccount, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.adminAccounts[account.id] == nil, !state.adminAccounts.values.contains(where: { $0.usernameKey == account.usernameKey })
                else { return refusal }
                state.adminAccounts[account.id] = account
                return nil
            }
        }

        func ensureRootAdminAccount(createdAt: Int64) {
            apply { state in
                let root = AdminAccount.root(createdAt: createdAt)
                if state.adminAccounts[root.id] == nil, !state.adminAccounts.values.contains(where: { $0.usernameKey == root.usernameKey }) {
                    state.adminAccounts[root.id] = root
                }
                return nil
            }
        }

        func deleteAdminAccount(id: String, ifMissing refusal: any Error & Sendable, ifLastOwner lastOwner: any Error & Sendable) {
            apply { state in
                guard let account = state.adminAccounts[id] else { return refusal }
                if account.role == .owner, !state.adminAccounts.values.contains(where: { $0.role == .owner && $0.id != id }) { return lastOwner }
                state.adminAccounts[id] = nil
                state.adminTokens = state.adminTokens.filter { $0.value.accountID != id }
                state.adminPasskeys = state.adminPasskeys.filter { $0.value.accountID != id }
                return nil
            }
        }

        func insertAdminPasskey(_ passkey: AdminPasskey, ifRefused refusal: any Error & Sendable) {
            apply { state in
                guard state.adminAccounts[passkey.accountID] != nil, state.adminPasskeys[passkey.id] == nil,
                    !state.adminPasskeys.values.contains(where: { $0.credentialID == passkey.credentialID })
                else { return refusal }
                state.adminPasskeys[passkey.id] = passkey
                return nil
            }
        }

        func useAdminPasskey(id: String, signCount: UInt32, newSignCount: UInt32, at: Int64, ifRaced refusal: any Error & Sendable) {
            apply { state in
                guard state.adminPasskeys[id]?.signCount == signCount else { return refusal }
                state.adminPasskeys[id]?.signCount = newSignCount
                state.adminPasskeys[id]?.lastUsedAt = at
                return nil
            }
        }

        func deleteAdminPasskey(id: String, accountID: String, ifMissing refusal: any Error & Sendable) {
            apply { state in
                guard state.adminPasskeys[id]?.accountID == accountID else { return refusal }
                state.adminPasskeys[id] = nil
                return nil
            }
        }

        func rememberRevokedAdminToken(hash: Data, id: String, at: Int64) {
            apply { state in
                if state.revokedAdminTokens[hash] == nil { state.revokedAdminTokens[hash] = at }
                return nil
            }
        }

        func record(_ event: SecurityEvent) {
            apply { [chain] state in
                let seq = state.auditNextSeq
                state.auditNextSeq += 1
                state.audit.append(AuditRecord(seq: seq, event: event, entryMAC: chain.entryMAC(body: AuditChain.body(of: event))))
                return nil
            }
        }

        func sealAudit(limit: Int) -> WriteResult<Int?> {
            let result = WriteResult<Int?>(0)
            apply { [chain] state in
                // Units run one at a time under the store's lock: what is in the state has committed, in the order of
                // the numbers.
                let pending = state.audit.indices.filter { state.audit[$0].position == nil }.prefix(limit)
                let sealed = chain.seal(pending.map { state.audit[$0] }, after: (state.auditAnchor.headSeq, state.auditAnchor.headMAC))
                for (index, seal) in zip(pending, sealed.seals) {
                    state.audit[index].position = seal.position
                    state.audit[index].mac = seal.mac
                }
                (state.auditAnchor.headSeq, state.auditAnchor.headMAC) = sealed.head
                result.set(pending.count)
                return nil
            }
            return result
        }

        func purgeAudit(recordedBefore at: Int64) -> WriteResult<Int> {
            let result = WriteResult(0)
            apply { state in
                guard let last = state.audit.last(where: { $0.position != nil && $0.event.at < at }), let cut = last.position else { return nil }
                let purged = { (record: AuditRecord) in record.position.map { $0 <= cut } ?? false }
                result.set(state.audit.count(where: purged))
                state.audit.removeAll(where: purged)
                if let mac = last.mac, state.auditAnchor.anchorSeq < cut {
                    state.auditAnchor.anchorSeq = cut
                    state.auditAnchor.anchorMAC = mac
                }
                return nil
            }
            return result
        }

        func insertUpstreamIdP(_ idp: UpstreamIdP, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.upstreamIdPs[idp.id] == nil else { return refusal }
                state.upstreamIdPs[idp.id] = idp
                return nil
            }
        }

        func deleteUpstreamIdP(id: String, ifMissing refusal: any Error & Sendable) {
            apply { state in
                guard state.upstreamIdPs.removeValue(forKey: id) != nil else { return refusal }
                state.webSessions = state.webSessions.filter { $0.value.upstreamIdP != id }
                return nil
            }
        }

        func insertWebSession(_ session: WebSession) {
            apply { state in
                // As the SQL stores' foreign keys: the user and the upstream must exist.
                guard state.users[session.userID] != nil, state.upstreamIdPs[session.upstreamIdP] != nil else {
                    return StoreUnavailableError("web_sessions: foreign key")
                }
                state.webSessions[session.id] = session
                return nil
            }
        }

        func endWebSession(id: String, at now: Int64) -> WriteResult<Int> {
            let result = WriteResult(0)
            apply { state in
                guard let session = state.webSessions[id], session.isActive(at: now) else { return nil }
                state.webSessions[id]?.endedAt = now
                result.set(1)
                return nil
            }
            return result
        }

        func purgeExpired(now: Int64, limit: Int) -> WriteResult<Int> {
            let result = WriteResult(0)
            apply { state in
                let jtis = state.usedJTIs.filter { $0.value < now }.keys.prefix(limit)
                for jti in jtis { state.usedJTIs[jti] = nil }
                let sessions = state.sessionPurgeAt.filter { $0.value <= now }.keys.sorted().prefix(limit)
                for id in sessions { state.removeSession(id: id) }
                let transactions = state.outOfBand.filter { $0.value.expiresAt <= now - outOfBandRetention }.keys.sorted().prefix(limit)
                for id in transactions { state.outOfBand[id] = nil }
                let custom = state.customTransactions.filter { $0.value.expiresAt <= now - customTransactionRetention }.keys.sorted().prefix(limit)
                for id in custom { state.customTransactions[id] = nil }
                let web = state.webSessions.filter { $0.value.expiresAt <= now }.keys.sorted().prefix(limit)
                for id in web { state.webSessions[id] = nil }
                let tokens = state.adminTokens.filter { ($0.value.expiresAt ?? .max) <= now - adminTokenRetention }.keys.sorted().prefix(limit)
                for id in tokens { state.adminTokens[id] = nil }
                result.set(jtis.count + sessions.count + transactions.count + custom.count + web.count + tokens.count)
                return nil
            }
            return result
        }
    }

    // MARK: Reads

    public func upstreamIdP(id: String) async throws -> UpstreamIdP? { state.withLock { $0.upstreamIdPs[id] } }

    public func upstreamIdPs() async throws -> [UpstreamIdP] { state.withLock { $0.upstreamIdPs.values.sorted { $0.id < $1.id } } }

    public func webSession(id: String) async throws -> WebSession? { state.withLock { $0.webSessions[id] } }

    public func user(id: String) async throws -> User? { state.withLock { $0.users[id] } }

    public func user(username: String) async throws -> User? {
        state.withLock { $0.users.values.first { $0.source == "" && $0.username == username } }
    }

    public func federatedUser(issuer: String, subject: String) async throws -> User? {
        state.withLock { $0.users.values.first { $0.issuer == issuer && $0.subject == subject } }
    }

    public func users(after cursor: String?, limit: Int) async throws -> [User] {
        state.withLock { state in
            Array(state.users.values.filter { $0.id > (cursor ?? "") }.sorted { $0.id < $1.id }.prefix(limit))
        }
    }

    public func deviceKeys(userID: String) async throws -> [DeviceKey] {
        state.withLock { state in
            state.deviceKeys.values.filter { $0.userID == userID }.sorted { ($0.createdAt, $0.keyID) < ($1.createdAt, $1.keyID) }
        }
    }

    public func activeSessions(userID: String, now: Int64, limit: Int) async throws -> [Session] {
        state.withLock { state in
            Array(
                state.sessions.values.filter { $0.userID == userID && $0.isActive(at: now) }
                    .sorted { ($0.createdAt, $1.id) > ($1.createdAt, $0.id) }.prefix(limit))
        }
    }

    public func deviceKey(userID: String, keyID: String) async throws -> DeviceKey? {
        state.withLock { $0.deviceKeys[DeviceKeyID(userID: userID, keyID: keyID)] }
    }

    public func deviceSignInKey(username: String, keyID: String) async throws -> (User, DeviceKey)? {
        state.withLock { state in
            guard let user = state.users.values.first(where: { $0.source == "" && $0.username == username }),
                let key = state.deviceKeys[DeviceKeyID(userID: user.id, keyID: keyID)]
            else { return nil }
            return (user, key)
        }
    }

    public func outOfBandTransaction(id: String) async throws -> OutOfBandTransaction? {
        state.withLock { $0.outOfBand[id] }
    }

    public func outOfBandTransaction(tokenHash: Data) async throws -> OutOfBandTransaction? {
        state.withLock { state in state.outOfBand.values.first { $0.tokenHash == tokenHash } }
    }

    public func outOfBandTransaction(statusTokenHash: Data) async throws -> OutOfBandTransaction? {
        state.withLock { state in state.outOfBand.values.first { $0.statusTokenHash == statusTokenHash } }
    }

    public func authenticators(userID: String) async throws -> [Authenticator] {
        state.withLock { state in state.authenticators.values.filter { $0.userID == userID }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) } }
    }

    public func authenticator(credentialID: Data) async throws -> (User, Authenticator)? {
        state.withLock { state in
            guard let found = state.authenticators.values.first(where: { $0.credentialID == credentialID }), let user = state.users[found.userID] else {
                return nil
            }
            return (user, found)
        }
    }

    public func attestedDeviceKey(keyID: String, type: String) async throws -> (User, DeviceKey)? {
        state.withLock { state in
            let matches = state.deviceKeys.values.filter { $0.keyID == keyID && $0.attestation?.type == type }
            guard matches.count == 1, let key = matches.first, let user = state.users[key.userID] else { return nil }
            return (user, key)
        }
    }

    public func registration(id: String) async throws -> RegistrationRecord? { state.withLock { $0.registrations[id] } }

    public func session(id: String) async throws -> Session? { state.withLock { $0.sessions[id] } }

    public func sessionWithUser(id: String) async throws -> (Session, User)? {
        state.withLock { state in
            guard let session = state.sessions[id], let user = state.users[session.userID] else { return nil }
            return (session, user)
        }
    }

    public func issuerKey(issuer: String, keyID: String) async throws -> IssuerKey? {
        state.withLock { $0.issuerKeys[IssuerKeyID(issuer: issuer, keyID: keyID)] }
    }

    public func issuerKeys() async throws -> [IssuerKey] {
        state.withLock { state in state.issuerKeys.sorted { $0.key < $1.key }.map(\.value) }
    }

    public func testRegistrationKey(id: String) async throws -> TestRegistrationKey? { state.withLock { $0.testKeys[id] } }

    public func testRegistrationKeys() async throws -> [TestRegistrationKey] {
        state.withLock { state in state.testKeys.values.sorted { $0.keyID < $1.keyID } }
    }

    public func clients() async throws -> [Client] {
        state.withLock { state in state.clients.values.sorted { $0.id < $1.id } }
    }

    public func signingCertificates() async throws -> [SigningCertificate] {
        state.withLock { state in state.signingCertificates.sorted { $0.key < $1.key }.map(\.value) }
    }

    public func signingKeys() async throws -> [SigningKeyRecord] {
        state.withLock { state in state.signingKeys.values.sorted { ($0.createdAt, $0.keyID) < ($1.createdAt, $1.keyID) } }
    }

    public func auditRecords(matching query: AuditQuery) async throws -> [AuditRecord] {
        state.withLock { state in Array(state.audit.reversed().filter(query.matches).prefix(query.limit)) }
    }

    public func auditChain(after position: Int64, limit: Int) async throws -> [AuditRecord] {
        state.withLock { state in Array(state.audit.filter { ($0.position ?? 0) > position }.prefix(limit)) }
    }

    public func unsealedAudit(after seq: Int64, limit: Int) async throws -> [AuditRecord] {
        state.withLock { state in Array(state.audit.filter { $0.position == nil && $0.seq > seq }.prefix(limit)) }
    }

    public func auditAnchor() async throws -> AuditAnchor { state.withLock { $0.auditAnchor } }

    public func adminTokens() async throws -> [AdminTokenRecord] {
        state.withLock { state in state.adminTokens.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) } }
    }

    public func isUsed(_ value: SingleUse) async throws -> Bool {
        switch value {
        case .jti(let jti, let issuer, _): state.withLock { $0.usedJTIs[JTI(issuer: issuer, jti: jti)] != nil }
        }
    }

    public func adminPasskeys(accountID: String) async throws -> [AdminPasskey] {
        state.withLock { state in
            state.adminPasskeys.values.filter { $0.accountID == accountID }.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) }
        }
    }

    public func adminPasskey(credentialID: Data) async throws -> AdminPasskey? {
        state.withLock { state in state.adminPasskeys.values.first { $0.credentialID == credentialID } }
    }

    public func isRevokedAdminToken(hash: Data) async throws -> Bool {
        state.withLock { $0.revokedAdminTokens[hash] != nil }
    }

    public func adminAccounts() async throws -> [AdminAccount] {
        state.withLock { state in state.adminAccounts.values.sorted { ($0.createdAt, $0.id) < ($1.createdAt, $1.id) } }
    }

    public func loginIssuers() async throws -> [LoginIssuer] {
        state.withLock { state in state.loginIssuers.values.sorted { $0.id < $1.id } }
    }

    public func loginIssuer(id: String) async throws -> LoginIssuer? { state.withLock { $0.loginIssuers[id] } }

    public func sessionConsumers(sessionID: String) async throws -> [ConsumerPair] {
        state.withLock { state in (state.sessionConsumers[sessionID] ?? []).sorted() }
    }

    public func resourceServer(id: String) async throws -> ResourceServer? { state.withLock { $0.resourceServers[id] } }

    public func resourceServers() async throws -> [ResourceServer] {
        state.withLock { state in state.resourceServers.values.sorted { $0.id < $1.id } }
    }

    public func customProvider(id: String) async throws -> CustomProvider? { state.withLock { $0.customProviders[id] } }

    public func customProviders() async throws -> [CustomProvider] {
        state.withLock { state in state.customProviders.values.sorted { $0.id < $1.id } }
    }

    public func customTransaction(id: String) async throws -> CustomTransaction? { state.withLock { $0.customTransactions[id] } }

    public func customTransactions(providerID: String, state wanted: CustomTransaction.State?, limit: Int) async throws -> [CustomTransaction] {
        state.withLock { state in
            let matching = state.customTransactions.values.filter { $0.providerID == providerID && (wanted == nil || $0.state == wanted) }
            return Array(matching.sorted { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }.prefix(limit))
        }
    }

    public func customTransactionCounts(providerID: String) async throws -> [CustomTransaction.State: Int] {
        state.withLock { state in
            var counts: [CustomTransaction.State: Int] = [:]
            for transaction in state.customTransactions.values where transaction.providerID == providerID { counts[transaction.state, default: 0] += 1 }
            return counts
        }
    }
}

/// A ``StoreObserver`` that remembers what it was told (for the stores' tests).
public final class RecordingStoreObserver: StoreObserver {
    private let state = Locked<(commits: [Int], failures: [String], reads: Int)>(([], [], 0))

    public init() {}

    public func committed(units: Int, nanoseconds: Int64) { state.withLock { $0.commits.append(units) } }
    public func failed(_ operation: String) { state.withLock { $0.failures.append(operation) } }
    public func read(nanoseconds: Int64) { state.withLock { $0.reads += 1 } }

    /// Reads reported.
    public var reads: Int { state.withLock { $0.reads } }

    /// Units of work per commit, in order.
    public var commits: [Int] { state.withLock { $0.commits } }
    public var failures: [String] { state.withLock { $0.failures } }
}
