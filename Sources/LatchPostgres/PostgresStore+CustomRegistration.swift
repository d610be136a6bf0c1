import Foundation
import LatchCore
import PostgresNIO

extension PostgresStore: CustomRegistrationStore {
    typealias CustomProviderRow = (String, String, String, String, Data, Int64, Int64, Int64, String, Bool, Int64, Int64)

    static let customProviderColumns =
        "id, name, flow, hook_url, sealed_secret, timeout, retries, transaction_lifetime, allowed_claims, enabled, created_at, updated_at"

    static func customProvider(_ row: CustomProviderRow) throws -> CustomProvider {
        CustomProvider(
            id: row.0, name: row.1, flow: try StoredForm.customFlow(row.2), hookURL: row.3, sealedSecret: row.4, timeout: row.5, retries: row.6,
            transactionLifetime: row.7, allowedClaims: try StoredForm.names(row.8), enabled: row.9, createdAt: row.10, updatedAt: row.11)
    }

    typealias CustomTransactionRow = (String, String, String, String, String?, Int64, Int64?, String?, String?, Int64, Int64, Int64?)

    static let customTransactionColumns =
        "id, provider_id, client_id, state, init_data, attempts, last_status, user_id, registration_id, created_at, expires_at, finished_at"

    static func customTransaction(_ row: CustomTransactionRow) throws -> CustomTransaction {
        CustomTransaction(
            id: row.0, providerID: row.1, clientID: row.2, state: try StoredForm.customTransactionState(row.3), initData: row.4, attempts: row.5,
            lastStatus: row.6, userID: row.7, registrationID: row.8, createdAt: row.9, expiresAt: row.10, finishedAt: row.11)
    }

    public func customProvider(id: String) async throws -> CustomProvider? {
        try await query("customProvider") { client in
            try await client.query("SELECT \(unescaped: Self.customProviderColumns) FROM custom_providers WHERE id = \(id)")
                .first(CustomProviderRow.self).map(Self.customProvider)
        }
    }

    public func customProviders() async throws -> [CustomProvider] {
        try await query("customProviders") { client in
            try await client.query("SELECT \(unescaped: Self.customProviderColumns) FROM custom_providers ORDER BY id").all(CustomProviderRow.self)
                .map(Self.customProvider)
        }
    }

    public func customTransaction(id: String) async throws -> CustomTransaction? {
        try await query("customTransaction") { client in
            try await client.query("SELECT \(unescaped: Self.customTransactionColumns) FROM custom_transactions WHERE id = \(id)")
                .first(CustomTransactionRow.self).map(Self.customTransaction)
        }
    }

    public func customTransactions(providerID: String, state: CustomTransaction.State?, limit: Int) async throws -> [CustomTransaction] {
        try await query("customTransactions") { client in
            // Two statements (with and without the state), each with its own plan on the (provider_id, state) index.
            let statement: PostgresQuery =
                if let state {
                    """
                    SELECT \(unescaped: Self.customTransactionColumns) FROM custom_transactions
                    WHERE provider_id = \(providerID) AND state = \(state.rawValue) ORDER BY created_at DESC, id DESC LIMIT \(limit)
                    """
                } else {
                    """
                    SELECT \(unescaped: Self.customTransactionColumns) FROM custom_transactions
                    WHERE provider_id = \(providerID) ORDER BY created_at DESC, id DESC LIMIT \(limit)
                    """
                }
            return try await client.query(statement).all(CustomTransactionRow.self).map(Self.customTransaction)
        }
    }

    public func customTransactionCounts(providerID: String) async throws -> [CustomTransaction.State: Int] {
        try await query("customTransactionCounts") { client in
            var counts: [CustomTransaction.State: Int] = [:]
            let rows = try await client.query("SELECT state, count(*) FROM custom_transactions WHERE provider_id = \(providerID) GROUP BY state")
                .all((String, Int64).self)
            for (state, count) in rows { counts[try StoredForm.customTransactionState(state)] = Int(count) }
            return counts
        }
    }
}

extension PostgresTransaction: CustomRegistrationWrites {
    func insertCustomProvider(_ provider: CustomProvider, ifTaken refusal: any Error & Sendable) {
        let claims = StoredForm.namesText(provider.allowedClaims)
        changeOne(
            try """
            INSERT INTO custom_providers (
                id, name, flow, hook_url, sealed_secret, timeout, retries, transaction_lifetime, allowed_claims, enabled, created_at, updated_at)
            VALUES (\(provider.id), \(provider.name), \(provider.flow.rawValue), \(provider.hookURL), \(provider.sealedSecret), \(provider.timeout),
                \(provider.retries), \(provider.transactionLifetime), \(claims), \(provider.enabled), \(provider.createdAt), \(provider.updatedAt))
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func updateCustomProvider(_ provider: CustomProvider, ifMissing refusal: any Error & Sendable) {
        let claims = StoredForm.namesText(provider.allowedClaims)
        changeOne(
            try """
            UPDATE custom_providers SET name = \(provider.name), flow = \(provider.flow.rawValue), hook_url = \(provider.hookURL),
                sealed_secret = \(provider.sealedSecret), timeout = \(provider.timeout), retries = \(provider.retries),
                transaction_lifetime = \(provider.transactionLifetime), allowed_claims = \(claims), enabled = \(provider.enabled),
                updated_at = \(provider.updatedAt)
            WHERE id = \(provider.id) RETURNING 1
            """, orRefuse: refusal)
    }

    func deleteCustomProvider(id: String) -> WriteResult<Int> {
        // Its transactions go by the foreign key (RETURNING counts the provider's row only).
        counting("DELETE FROM custom_providers WHERE id = \(id) RETURNING 1")
    }

    func insertCustomTransaction(_ transaction: CustomTransaction, ifTaken refusal: any Error & Sendable) {
        changeOne(
            """
            INSERT INTO custom_transactions (
                id, provider_id, client_id, state, init_data, attempts, last_status, user_id, registration_id, created_at, expires_at, finished_at)
            SELECT \(transaction.id), \(transaction.providerID), \(transaction.clientID), \(transaction.state.rawValue), \(transaction.initData),
                \(transaction.attempts), \(transaction.lastStatus), \(transaction.userID), \(transaction.registrationID), \(transaction.createdAt),
                \(transaction.expiresAt), \(transaction.finishedAt)
            WHERE EXISTS (SELECT 1 FROM custom_providers WHERE id = \(transaction.providerID) FOR KEY SHARE)
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func recordCustomAttempts(
        id: String, attempts: Int64, status: Int64?, initData: String?, at: Int64, ifUnavailable refusal: any Error & Sendable
    ) {
        changeOne(
            """
            UPDATE custom_transactions SET attempts = attempts + \(attempts), last_status = \(status), init_data = COALESCE(\(initData), init_data)
            WHERE id = \(id) AND state = 'open' AND expires_at > \(at) RETURNING 1
            """, orRefuse: refusal)
    }

    func reserveCustomAttempt(id: String, at: Int64, ifUnavailable refusal: any Error & Sendable) -> WriteResult<Int64> {
        let result = WriteResult<Int64>(0)
        add { connection in
            let query: PostgresQuery = """
                UPDATE custom_transactions SET attempts = attempts + 1 WHERE id = \(id) AND state = 'open' AND expires_at > \(at) RETURNING attempts
                """
            guard let attempts = try await connection.run(query).first(Int64.self) else { return refusal }
            result.set(attempts)
            return nil
        }
        return result
    }

    func finishCustomTransaction(
        id: String, state: CustomTransaction.State, userID: String?, registrationID: String?, status: Int64?, at: Int64,
        ifUnavailable refusal: any Error & Sendable
    ) {
        precondition(state.isFinal, "a custom transaction is finished in a final state")
        // One compare-and-set: a concurrent finisher waits for the row, then finds it no longer open.
        changeOne(
            """
            UPDATE custom_transactions SET state = \(state.rawValue), user_id = \(userID), registration_id = \(registrationID),
                last_status = \(status), finished_at = \(at)
            WHERE id = \(id) AND state = 'open' AND expires_at > \(at) RETURNING 1
            """, orRefuse: refusal)
    }
}
