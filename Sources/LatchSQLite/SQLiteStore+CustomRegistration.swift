import Foundation
import LatchCore

extension SQLiteStore: CustomRegistrationStore {
    static let customProviderColumns =
        "id, name, flow, hook_url, sealed_secret, timeout, retries, transaction_lifetime, allowed_claims, enabled, created_at, updated_at"

    static func decodeCustomProvider(_ row: SQLRow) throws -> CustomProvider {
        CustomProvider(
            id: row.text(0), name: row.text(1), flow: try StoredForm.customFlow(row.text(2)), hookURL: row.text(3), sealedSecret: row.blob(4),
            timeout: row.int(5), retries: row.int(6), transactionLifetime: row.int(7), allowedClaims: try StoredForm.names(row.text(8)),
            enabled: row.int(9) != 0, createdAt: row.int(10), updatedAt: row.int(11))
    }

    static let customTransactionColumns =
        "id, provider_id, client_id, state, init_data, attempts, last_status, user_id, registration_id, created_at, expires_at, finished_at"

    static func decodeCustomTransaction(_ row: SQLRow) throws -> CustomTransaction {
        CustomTransaction(
            id: row.text(0), providerID: row.text(1), clientID: row.text(2), state: try StoredForm.customTransactionState(row.text(3)),
            initData: row.optionalText(4), attempts: row.int(5), lastStatus: row.optionalInt(6), userID: row.optionalText(7),
            registrationID: row.optionalText(8), createdAt: row.int(9), expiresAt: row.int(10), finishedAt: row.optionalInt(11))
    }

    public func customProvider(id: String) async throws -> CustomProvider? {
        try await read { db in
            try db.row("SELECT \(Self.customProviderColumns) FROM custom_providers WHERE id = ?", [.text(id)]).map(Self.decodeCustomProvider)
        }
    }

    public func customProviders() async throws -> [CustomProvider] {
        try await read { db in try db.query("SELECT \(Self.customProviderColumns) FROM custom_providers ORDER BY id").map(Self.decodeCustomProvider) }
    }

    public func customTransaction(id: String) async throws -> CustomTransaction? {
        try await read { db in
            try db.row("SELECT \(Self.customTransactionColumns) FROM custom_transactions WHERE id = ?", [.text(id)]).map(Self.decodeCustomTransaction)
        }
    }

    /// Two statements (with and without the state), so that each keeps one plan on the (provider_id, state) index.
    static let customTransactionsInState = """
        SELECT \(customTransactionColumns) FROM custom_transactions WHERE provider_id = ? AND state = ?
        ORDER BY created_at DESC, id DESC LIMIT ?
        """
    static let customTransactionsInAnyState = """
        SELECT \(customTransactionColumns) FROM custom_transactions WHERE provider_id = ?
        ORDER BY created_at DESC, id DESC LIMIT ?
        """

    public func customTransactions(providerID: String, state: CustomTransaction.State?, limit: Int) async throws -> [CustomTransaction] {
        try await read { db in
            let rows =
                if let state {
                    try db.query(Self.customTransactionsInState, [.text(providerID), .text(state.rawValue), .int(Int64(limit))])
                } else {
                    try db.query(Self.customTransactionsInAnyState, [.text(providerID), .int(Int64(limit))])
                }
            return try rows.map(Self.decodeCustomTransaction)
        }
    }

    public func customTransactionCounts(providerID: String) async throws -> [CustomTransaction.State: Int] {
        try await read { db in
            var counts: [CustomTransaction.State: Int] = [:]
            for row in try db.query("SELECT state, count(*) FROM custom_transactions WHERE provider_id = ? GROUP BY state", [.text(providerID)]) {
                counts[try StoredForm.customTransactionState(row.text(0))] = Int(row.int(1))
            }
            return counts
        }
    }
}

extension SQLiteTransaction: CustomRegistrationWrites {
    func insertCustomProvider(_ provider: CustomProvider, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO custom_providers (\(SQLiteStore.customProviderColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [
                .text(provider.id), .text(provider.name), .text(provider.flow.rawValue), .text(provider.hookURL), .blob(provider.sealedSecret),
                .int(provider.timeout), .int(provider.retries), .int(provider.transactionLifetime), .text(StoredForm.namesText(provider.allowedClaims)),
                .int(provider.enabled ? 1 : 0), .int(provider.createdAt), .int(provider.updatedAt),
            ], orRefuse: refusal)
    }

    func updateCustomProvider(_ provider: CustomProvider, ifMissing refusal: any Error & Sendable) {
        changeOne(
            """
            UPDATE custom_providers SET name = ?, flow = ?, hook_url = ?, sealed_secret = ?, timeout = ?, retries = ?, transaction_lifetime = ?,
                allowed_claims = ?, enabled = ?, updated_at = ?
            WHERE id = ?
            """,
            [
                .text(provider.name), .text(provider.flow.rawValue), .text(provider.hookURL), .blob(provider.sealedSecret), .int(provider.timeout),
                .int(provider.retries), .int(provider.transactionLifetime), .text(StoredForm.namesText(provider.allowedClaims)),
                .int(provider.enabled ? 1 : 0), .int(provider.updatedAt), .text(provider.id),
            ], orRefuse: refusal)
    }

    func deleteCustomProvider(id: String) -> WriteResult<Int> {
        // Its transactions go by the foreign key (not counted: changes() counts the provider's row only).
        counting("DELETE FROM custom_providers WHERE id = ?", [.text(id)])
    }

    func insertCustomTransaction(_ transaction: CustomTransaction, ifTaken refusal: any Error & Sendable) {
        changeOne(
            """
            INSERT INTO custom_transactions (\(SQLiteStore.customTransactionColumns)) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
            WHERE EXISTS (SELECT 1 FROM custom_providers WHERE id = ?) ON CONFLICT DO NOTHING
            """,
            [
                .text(transaction.id), .text(transaction.providerID), .text(transaction.clientID), .text(transaction.state.rawValue),
                transaction.initData.sql, .int(transaction.attempts), transaction.lastStatus.sql, transaction.userID.sql,
                transaction.registrationID.sql, .int(transaction.createdAt), .int(transaction.expiresAt), transaction.finishedAt.sql,
                .text(transaction.providerID),
            ], orRefuse: refusal)
    }

    func recordCustomAttempts(
        id: String, attempts: Int64, status: Int64?, initData: String?, at: Int64, ifUnavailable refusal: any Error & Sendable
    ) {
        changeOne(
            """
            UPDATE custom_transactions SET attempts = attempts + ?, last_status = ?, init_data = COALESCE(?, init_data)
            WHERE id = ? AND state = 'open' AND expires_at > ?
            """,
            [.int(attempts), status.sql, initData.sql, .text(id), .int(at)], orRefuse: refusal)
    }

    func reserveCustomAttempt(id: String, at: Int64, ifUnavailable refusal: any Error & Sendable) -> WriteResult<Int64> {
        let result = WriteResult<Int64>(0)
        apply { db in
            guard
                let row = try db.row(
                    "UPDATE custom_transactions SET attempts = attempts + 1 WHERE id = ? AND state = 'open' AND expires_at > ? RETURNING attempts",
                    [.text(id), .int(at)])
            else { return refusal }
            result.set(row.int(0))
            return nil
        }
        return result
    }

    func finishCustomTransaction(
        id: String, state: CustomTransaction.State, userID: String?, registrationID: String?, status: Int64?, at: Int64,
        ifUnavailable refusal: any Error & Sendable
    ) {
        precondition(state.isFinal, "a custom transaction is finished in a final state")
        changeOne(
            """
            UPDATE custom_transactions SET state = ?1, user_id = ?2, registration_id = ?3, last_status = ?4, finished_at = ?5
            WHERE id = ?6 AND state = 'open' AND expires_at > ?5
            """,
            [.text(state.rawValue), userID.sql, registrationID.sql, status.sql, .int(at), .text(id)], orRefuse: refusal)
    }
}
