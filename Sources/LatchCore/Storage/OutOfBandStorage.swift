import Foundation

/// An out-of-band transaction: an enrollment, approval or deregistration the backend (or a signed-in device) asked
/// for, which another device redeems with a single-use token and completes with a FIDO ceremony. Only hashes of the
/// redeem and status tokens are stored.
public struct OutOfBandTransaction: Sendable, Hashable {
    public enum Operation: String, Sendable, CaseIterable, Codable {
        case registration, authentication, deregistration
    }

    /// `pending` until redeemed, `redeemed` while its ceremony runs, then one final state.
    public enum State: String, Sendable, CaseIterable, Codable {
        case pending, redeemed, succeeded, failed, approved, denied

        public var isFinal: Bool { ![.pending, .redeemed].contains(self) }
    }

    public var id: String
    public var userID: String
    public var operation: Operation
    /// SHA-256 of the redeem token.
    public var tokenHash: Data
    /// SHA-256 of the status token.
    public var statusTokenHash: Data
    /// The text an approval shows on the device.
    public var message: String?
    public var state: State
    /// Who asked: `admin` (the operator's backend) or `user` (device linking).
    public var requestedBy: String
    public var createdAt: Int64
    public var expiresAt: Int64
    public var redeemedAt: Int64?
    public var completedAt: Int64?
    /// The authenticator registered (registration) or used (authentication, deregistration).
    public var authenticatorID: String?

    public init(
        id: String, userID: String, operation: Operation, tokenHash: Data, statusTokenHash: Data, message: String?, state: State,
        requestedBy: String, createdAt: Int64, expiresAt: Int64, redeemedAt: Int64? = nil, completedAt: Int64? = nil, authenticatorID: String? = nil
    ) {
        self.id = id
        self.userID = userID
        self.operation = operation
        self.tokenHash = tokenHash
        self.statusTokenHash = statusTokenHash
        self.message = message
        self.state = state
        self.requestedBy = requestedBy
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.redeemedAt = redeemedAt
        self.completedAt = completedAt
        self.authenticatorID = authenticatorID
    }
}

/// Reading out-of-band transactions.
public protocol OutOfBandStore: Sendable {
    func outOfBandTransaction(id: String) async throws -> OutOfBandTransaction?
    /// The transaction whose redeem token hashes to `tokenHash`.
    func outOfBandTransaction(tokenHash: Data) async throws -> OutOfBandTransaction?
    /// The transaction whose status token hashes to `statusTokenHash`.
    func outOfBandTransaction(statusTokenHash: Data) async throws -> OutOfBandTransaction?
}

/// Writing out-of-band transactions inside a unit of work.
public protocol OutOfBandWrites {
    /// Adds a transaction; refuses when its id or a token hash exists, or its user is gone.
    func insertOutOfBandTransaction(_ transaction: OutOfBandTransaction, ifTaken refusal: any Error & Sendable)
    /// Moves a transaction from `pending` to `redeemed` at `at`, in one compare-and-set; refuses when it is not
    /// pending or has expired by `at` — so a token is redeemed once, on any replica.
    func redeemOutOfBandTransaction(id: String, at: Int64, ifUnavailable refusal: any Error & Sendable)
    /// Moves a `redeemed` transaction to the final `state` at `at` (with the authenticator involved); refuses when it is
    /// not redeemed.
    func completeOutOfBandTransaction(
        id: String, state: OutOfBandTransaction.State, authenticatorID: String?, at: Int64, ifUnavailable refusal: any Error & Sendable)
}
