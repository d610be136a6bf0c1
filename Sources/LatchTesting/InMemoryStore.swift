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
        var issuerKeys: [SignOnIssuerKeyID: SignOnIssuerKey] = [:]
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

    struct SignOnIssuerKeyID: Hashable, Comparable {
        let issuer: String
        let keyID: String
        static func < (lhs: Self, rhs: Self) -> Bool { (lhs.issuer, lhs.keyID) < (rhs.issuer, rhs.keyID) }
    }

    private let state = Locked(State())
    /// Chains the audit records this store writes.
    public let auditChain = AuditChain()
    /// Told of every unit of work it commits (as a group commit of one), like the durable stores.
    public let observers = StoreObservers()
    /// None: nothing is pooled in memory.
    public var connectionPool: (any PooledStore)? { nil }

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
        let started = ContinuousClock.now
        let result = try state.withLock { state throws -> T in
            let transaction = Transaction(state, chain: auditChain)
            let result = body(transaction)
            if let refusal = transaction.refusal { throw refusal }
            state = transaction.state
            return result
        }
        observers.observer?.committed(units: 1, nanoseconds: (ContinuousClock.now - started).nanoseconds)
        return result
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
                    state.sessionPurgeAt[id] = min(state.sessionPurgeAt[id] ?? .max, revokedAt + revokedSessionRetention)
                }
                state.sessions[id] = stored
            }
            return update.result
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

    public func issuerKey(issuer: String, keyID: String) async throws -> SignOnIssuerKey? {
        state.withLock { $0.issuerKeys[SignOnIssuerKeyID(issuer: issuer, keyID: keyID)] }
    }

    public func issuerKeys() async throws -> [SignOnIssuerKey] {
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
