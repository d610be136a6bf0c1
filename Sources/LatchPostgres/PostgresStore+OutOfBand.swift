import Foundation
import LatchCore
import PostgresNIO

extension PostgresStore: OutOfBandStore {
    typealias OutOfBandRow = (String, String, String, Data, Data, String?, String, String, Int64, Int64, Int64?, Int64?, String?)

    static func outOfBand(_ row: OutOfBandRow) throws -> OutOfBandTransaction {
        let (operation, state) = try StoredForm.outOfBand(operation: row.2, state: row.6)
        return OutOfBandTransaction(
            id: row.0, userID: row.1, operation: operation, tokenHash: row.3, statusTokenHash: row.4, message: row.5, state: state,
            requestedBy: row.7, createdAt: row.8, expiresAt: row.9, redeemedAt: row.10, completedAt: row.11, authenticatorID: row.12)
    }

    static let outOfBandColumns =
        "id, user_id, operation, token_hash, status_token_hash, message, state, requested_by, created_at, expires_at, redeemed_at, completed_at, authenticator_id"

    func outOfBand(_ statement: PostgresQuery) async throws -> OutOfBandTransaction? {
        try await query("out-of-band transaction") { client in try await client.query(statement).first(OutOfBandRow.self).map(Self.outOfBand) }
    }

    public func outOfBandTransaction(id: String) async throws -> OutOfBandTransaction? {
        try await outOfBand("SELECT \(unescaped: Self.outOfBandColumns) FROM oob_transactions WHERE id = \(id)")
    }

    public func outOfBandTransaction(tokenHash: Data) async throws -> OutOfBandTransaction? {
        try await outOfBand("SELECT \(unescaped: Self.outOfBandColumns) FROM oob_transactions WHERE token_hash = \(tokenHash)")
    }

    public func outOfBandTransaction(statusTokenHash: Data) async throws -> OutOfBandTransaction? {
        try await outOfBand("SELECT \(unescaped: Self.outOfBandColumns) FROM oob_transactions WHERE status_token_hash = \(statusTokenHash)")
    }
}

extension PostgresTransaction: OutOfBandWrites {
    func insertOutOfBandTransaction(_ transaction: OutOfBandTransaction, ifTaken refusal: any Error & Sendable) {
        changeOne(
            try """
            INSERT INTO oob_transactions (
                id, user_id, operation, token_hash, status_token_hash, message, state, requested_by, created_at, expires_at, redeemed_at,
                completed_at, authenticator_id)
            SELECT \(transaction.id), \(transaction.userID), \(transaction.operation.rawValue), \(transaction.tokenHash),
                \(transaction.statusTokenHash), \(transaction.message), \(transaction.state.rawValue), \(transaction.requestedBy),
                \(transaction.createdAt), \(transaction.expiresAt), \(transaction.redeemedAt), \(transaction.completedAt), \(transaction.authenticatorID)
            WHERE EXISTS (SELECT 1 FROM users WHERE id = \(transaction.userID) FOR KEY SHARE)
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func redeemOutOfBandTransaction(id: String, at: Int64, ifUnavailable refusal: any Error & Sendable) {
        changeOne(
            """
            UPDATE oob_transactions SET state = 'redeemed', redeemed_at = \(at)
            WHERE id = \(id) AND state = 'pending' AND expires_at > \(at) RETURNING 1
            """, orRefuse: refusal)
    }

    func completeOutOfBandTransaction(
        id: String, state: OutOfBandTransaction.State, authenticatorID: String?, at: Int64, ifUnavailable refusal: any Error & Sendable
    ) {
        changeOne(
            """
            UPDATE oob_transactions SET state = \(state.rawValue), completed_at = \(at), authenticator_id = \(authenticatorID)
            WHERE id = \(id) AND state = 'redeemed' RETURNING 1
            """, orRefuse: refusal)
    }
}
