import Foundation
import LatchCore

extension SQLiteStore: OutOfBandStore {
    static let outOfBandColumns =
        "id, user_id, operation, token_hash, status_token_hash, message, state, requested_by, created_at, expires_at, redeemed_at, completed_at, authenticator_id"

    static func decodeOutOfBand(_ row: SQLRow) throws -> OutOfBandTransaction {
        let (operation, state) = try StoredForm.outOfBand(operation: row.text(2), state: row.text(6))
        return OutOfBandTransaction(
            id: row.text(0), userID: row.text(1), operation: operation, tokenHash: row.blob(3), statusTokenHash: row.blob(4),
            message: row.optionalText(5), state: state, requestedBy: row.text(7), createdAt: row.int(8), expiresAt: row.int(9),
            redeemedAt: row.optionalInt(10), completedAt: row.optionalInt(11), authenticatorID: row.optionalText(12))
    }

    func outOfBand(where condition: String, _ value: SQLValue) async throws -> OutOfBandTransaction? {
        try await read { db in
            try db.row("SELECT \(Self.outOfBandColumns) FROM oob_transactions WHERE \(condition) = ?", [value]).map(Self.decodeOutOfBand)
        }
    }

    public func outOfBandTransaction(id: String) async throws -> OutOfBandTransaction? { try await outOfBand(where: "id", .text(id)) }

    public func outOfBandTransaction(tokenHash: Data) async throws -> OutOfBandTransaction? { try await outOfBand(where: "token_hash", .blob(tokenHash)) }

    public func outOfBandTransaction(statusTokenHash: Data) async throws -> OutOfBandTransaction? {
        try await outOfBand(where: "status_token_hash", .blob(statusTokenHash))
    }
}

extension SQLiteTransaction: OutOfBandWrites {
    func insertOutOfBandTransaction(_ transaction: OutOfBandTransaction, ifTaken refusal: any Error & Sendable) {
        changeOne(
            """
            INSERT INTO oob_transactions (\(SQLiteStore.outOfBandColumns)) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
            WHERE EXISTS (SELECT 1 FROM users WHERE id = ?) ON CONFLICT DO NOTHING
            """,
            [
                .text(transaction.id), .text(transaction.userID), .text(transaction.operation.rawValue), .blob(transaction.tokenHash),
                .blob(transaction.statusTokenHash), transaction.message.sql, .text(transaction.state.rawValue), .text(transaction.requestedBy),
                .int(transaction.createdAt), .int(transaction.expiresAt), transaction.redeemedAt.sql, transaction.completedAt.sql,
                transaction.authenticatorID.sql, .text(transaction.userID),
            ], orRefuse: refusal)
    }

    func redeemOutOfBandTransaction(id: String, at: Int64, ifUnavailable refusal: any Error & Sendable) {
        changeOne(
            "UPDATE oob_transactions SET state = 'redeemed', redeemed_at = ? WHERE id = ? AND state = 'pending' AND expires_at > ?",
            [.int(at), .text(id), .int(at)], orRefuse: refusal)
    }

    func completeOutOfBandTransaction(
        id: String, state: OutOfBandTransaction.State, authenticatorID: String?, at: Int64, ifUnavailable refusal: any Error & Sendable
    ) {
        changeOne(
            "UPDATE oob_transactions SET state = ?, completed_at = ?, authenticator_id = ? WHERE id = ? AND state = 'redeemed'",
            [.text(state.rawValue), .int(at), authenticatorID.sql, .text(id)], orRefuse: refusal)
    }
}
