import LatchCore
import PostgresNIO

extension PostgresTransaction: HousekeepingWrites {
    /// The advisory lock that makes one replica at a time purge.
    static let purgeLockKey: Int64 = 0x4C41_5443_4850_5247  // "LATCHPRG"

    /// Deletes expired rows in batches of at most `limit` per table. Only the replica holding the purge lock
    /// works; the others report 0 at once.
    func purgeExpired(now: Int64, limit: Int) -> WriteResult<Int> {
        let result = WriteResult(0)
        add(statements: 7) { connection in
            let locked: Bool? = try await connection.run("SELECT pg_try_advisory_xact_lock(\(Self.purgeLockKey))").first(Bool.self)
            guard locked ?? false else { return nil }
            var total = 0
            total += try await connection.run(
                """
                DELETE FROM used_jtis WHERE (issuer, jti) IN
                    (SELECT issuer, jti FROM used_jtis WHERE expires_at < \(now) LIMIT \(limit)) RETURNING 1
                """
            ).all(Int.self).count
            total += try await connection.run(
                "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE purge_at <= \(now) LIMIT \(limit)) RETURNING 1"
            ).all(Int.self).count
            let oobBefore = now - outOfBandRetention
            total += try await connection.run(
                "DELETE FROM oob_transactions WHERE id IN (SELECT id FROM oob_transactions WHERE expires_at <= \(oobBefore) LIMIT \(limit)) RETURNING 1"
            ).all(Int.self).count
            let customBefore = now - customTransactionRetention
            total += try await connection.run(
                """
                DELETE FROM custom_transactions WHERE id IN
                    (SELECT id FROM custom_transactions WHERE expires_at <= \(customBefore) LIMIT \(limit)) RETURNING 1
                """
            ).all(Int.self).count
            total += try await connection.run(
                "DELETE FROM web_sessions WHERE id IN (SELECT id FROM web_sessions WHERE expires_at <= \(now) LIMIT \(limit)) RETURNING 1"
            ).all(Int.self).count
            let tokensBefore = now - adminTokenRetention
            total += try await connection.run(
                "DELETE FROM admin_tokens WHERE id IN (SELECT id FROM admin_tokens WHERE expires_at <= \(tokensBefore) LIMIT \(limit)) RETURNING 1"
            ).all(Int.self).count
            result.set(total)
            return nil
        }
        return result
    }
}
