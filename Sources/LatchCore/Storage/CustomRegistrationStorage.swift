import Foundation

/// A custom identity provider (OneWelcome's "custom registration"): the operator's own service, called as an HTTP hook,
/// decides whether a registration succeeds.
public struct CustomProvider: Sendable, Hashable {
    public enum Flow: String, Sendable, CaseIterable, Codable {
        /// `complete` only.
        case oneStep = "one_step"
        /// `init`, then `complete`.
        case twoStep = "two_step"
    }

    public var id: String
    public var name: String
    public var flow: Flow
    /// Where Latch POSTs each step (http or https).
    public var hookURL: String
    /// The hook's HMAC secret, sealed with the deployment's key-encryption key (write-only through the API).
    public var sealedSecret: Data
    /// Seconds one hook call may take.
    public var timeout: Int64
    /// Further attempts after a network error or an HTTP 5xx/429 answer.
    public var retries: Int64
    /// Seconds a transaction stays usable after `init`.
    public var transactionLifetime: Int64
    /// The hook user's attributes kept as claims.
    public var allowedClaims: [String]
    public var enabled: Bool
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(
        id: String, name: String, flow: Flow, hookURL: String, sealedSecret: Data, timeout: Int64, retries: Int64, transactionLifetime: Int64,
        allowedClaims: [String], enabled: Bool, createdAt: Int64, updatedAt: Int64
    ) {
        self.id = id
        self.name = name
        self.flow = flow
        self.hookURL = hookURL
        self.sealedSecret = sealedSecret
        self.timeout = timeout
        self.retries = retries
        self.transactionLifetime = transactionLifetime
        self.allowedClaims = allowedClaims
        self.enabled = enabled
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One custom registration in progress (or its outcome).
public struct CustomTransaction: Sendable, Hashable {
    public enum State: String, Sendable, CaseIterable, Codable {
        /// Started (`init` answered 2xxx, or a step answered 4xxx): `complete` may be tried.
        case open
        /// The user exists.
        case completed
        /// The app cancelled it.
        case cancelled
        /// The hook answered 5xxx: the flow restarts with a new transaction.
        case failed

        public var isFinal: Bool { self != .open }
    }

    public var id: String
    public var providerID: String
    /// The client that started it; only that client may continue it.
    public var clientID: String
    public var state: State
    /// The `data` the hook answered at `init`, sent back to it as `initData` at `complete` (JSON text).
    public var initData: String?
    /// Hook calls made for this transaction.
    public var attempts: Int64
    /// The last OneWelcome status the hook answered.
    public var lastStatus: Int64?
    /// The user created (completed).
    public var userID: String?
    /// The app's idempotency key of the completing request.
    public var registrationID: String?
    public var createdAt: Int64
    public var expiresAt: Int64
    public var finishedAt: Int64?

    public init(
        id: String, providerID: String, clientID: String, state: State, initData: String?, attempts: Int64, lastStatus: Int64?, userID: String?,
        registrationID: String?, createdAt: Int64, expiresAt: Int64, finishedAt: Int64?
    ) {
        self.id = id
        self.providerID = providerID
        self.clientID = clientID
        self.state = state
        self.initData = initData
        self.attempts = attempts
        self.lastStatus = lastStatus
        self.userID = userID
        self.registrationID = registrationID
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.finishedAt = finishedAt
    }
}

/// How long a custom registration transaction is kept after it expired (finished or not; listed until then): 7 days.
public let customTransactionRetention: Int64 = 7 * 86_400

/// Reading custom providers and their transactions.
public protocol CustomRegistrationStore: Sendable {
    func customProvider(id: String) async throws -> CustomProvider?
    /// Every provider, ordered by id.
    func customProviders() async throws -> [CustomProvider]
    func customTransaction(id: String) async throws -> CustomTransaction?
    /// A provider's transactions in `state` (every state when nil), newest first, at most `limit`.
    func customTransactions(providerID: String, state: CustomTransaction.State?, limit: Int) async throws -> [CustomTransaction]
    /// How many of a provider's transactions are in each state.
    func customTransactionCounts(providerID: String) async throws -> [CustomTransaction.State: Int]
}

/// Writing custom providers and transactions inside a unit of work.
public protocol CustomRegistrationWrites {
    /// Inserts a provider; refuses when its id exists.
    func insertCustomProvider(_ provider: CustomProvider, ifTaken refusal: any Error & Sendable)
    /// Replaces a provider's mutable fields (all but `id` and `createdAt`); refuses when there is none.
    func updateCustomProvider(_ provider: CustomProvider, ifMissing refusal: any Error & Sendable)
    /// Deletes a provider and its transactions; reports 1 when it existed.
    func deleteCustomProvider(id: String) -> WriteResult<Int>
    /// Inserts a transaction; refuses when its id exists.
    func insertCustomTransaction(_ transaction: CustomTransaction, ifTaken refusal: any Error & Sendable)
    /// Counts `attempts` hook calls on an open transaction unexpired at `at`, recording the last status (nil: no
    /// usable answer) and, when given, the `data` the hook answered to a successful `init`; refuses otherwise.
    func recordCustomAttempts(
        id: String, attempts: Int64, status: Int64?, initData: String?, at: Int64, ifUnavailable refusal: any Error & Sendable)
    /// Takes the next attempt number of an open transaction unexpired at `at` (its attempt count, plus one): every hook
    /// call gets its own number — and so its own `Idempotency-Key` — even when two replicas call at once. Refuses
    /// otherwise.
    func reserveCustomAttempt(id: String, at: Int64, ifUnavailable refusal: any Error & Sendable) -> WriteResult<Int64>
    /// Moves an open transaction unexpired at `at` to a final `state` (with the user created and the registration id),
    /// in one compare-and-set — so a transaction is completed once, on any replica; refuses otherwise.
    func finishCustomTransaction(
        id: String, state: CustomTransaction.State, userID: String?, registrationID: String?, status: Int64?, at: Int64,
        ifUnavailable refusal: any Error & Sendable)
}

extension CustomRegistrationWrites {
    /// Counts one hook call on an open transaction unexpired at `at`, recording its status; refuses otherwise.
    public func recordCustomAttempt(id: String, status: Int64?, at: Int64, ifUnavailable refusal: any Error & Sendable) {
        recordCustomAttempts(id: id, attempts: 1, status: status, initData: nil, at: at, ifUnavailable: refusal)
    }
}
