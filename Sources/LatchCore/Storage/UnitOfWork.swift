import LatchModel

/// Every write primitive a store offers inside one transaction: the composition of the per-domain write
/// protocols. A store's transaction type must conform to all of them, so a backend that lacks one does not compile.
public typealias StoreTransaction = SingleUseWrites & UserWrites & RegistrationWrites & SessionWrites
    & SignOnIssuerWrites & TestRegistrationKeyWrites & ClientWrites & SigningKeyWrites & AdminTokenWrites & HousekeepingWrites
    & EventWrites & AuthenticatorWrites & OutOfBandWrites & IssuerLoginWrites & CustomRegistrationWrites & FederationWrites

/// Groups writes into one transaction: they commit together, or none of them does.
///
/// The body *states* the writes; it does not see their effects. Primitives never throw: each one that can be
/// refused takes the error to throw when it is (`ifTaken:`, `ifMissing:`, `ifUnavailable:`). The first refusal
/// rolls the whole unit back and ``write(_:)`` throws that error; a failure of the store itself throws
/// ``StoreUnavailableError``. What a write reports (how many rows it changed) arrives in a ``WriteResult``,
/// readable once `write` has returned.
///
/// The body runs exactly once — in the caller's task before any write runs (SQLite, PostgreSQL: they record the
/// writes and run them afterwards), or under a lock (in memory) — so it must be quick and must not block. Decisions belong in the engine, before the
/// body, or in a decision function given to ``SessionStore/updateSession(id:_:)``.
///
/// Contract for every backend, checked by the conformance suite:
/// - `write` returns only after the commit is durable.
/// - Writes run in the order the body states them, each seeing the transaction's earlier writes; the first
///   refusal wins and nothing after it runs.
/// - Single-use values are consumed by one atomic statement, never check-then-write, so two concurrent
///   consumers — on one replica or several — cannot both succeed.
public protocol UnitOfWork: Sendable {
    func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) -> T) async throws -> T
}

/// What a write inside a unit of work reported, set by the store before ``UnitOfWork/write(_:)`` returns.
public final class WriteResult<Value: Sendable>: Sendable {
    private let stored: Locked<Value>

    public init(_ initial: Value) { stored = Locked(initial) }

    /// The reported value (the initial one until the write ran).
    public var value: Value { stored.withLock { $0 } }

    /// Called by the store when the write has run.
    public func set(_ value: Value) { stored.withLock { $0 = value } }
}

/// The refusal of a one-write convenience call, which turns it into `false`.
private struct Refused: Error {}

extension UnitOfWork {
    /// Runs one refusable write in a unit of its own; `false` when it was refused.
    func succeeds(_ body: @escaping @Sendable (any StoreTransaction, any Error & Sendable) -> Void) async throws -> Bool {
        do {
            try await write { body($0, Refused()) }
            return true
        } catch is Refused {
            return false
        }
    }

    /// Runs one counting write in a unit of its own and returns its count.
    func count(_ body: @escaping @Sendable (any StoreTransaction) -> WriteResult<Int>) async throws -> Int {
        try await write(body).value
    }
}

/// Everything a full Latch deployment needs from a backend.
public typealias LatchStore = UnitOfWork & UserStore & RegistrationStore & SessionStore & SignOnIssuerStore
    & TestRegistrationKeyStore & ClientStore & SigningKeyStore & AdminTokenStore & AuditChainedStore & AuthenticatorStore & OutOfBandStore
    & IssuerLoginStore & CustomRegistrationStore & FederationStore & SingleUseStore & ObservableStore
