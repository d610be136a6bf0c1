import LatchCore

extension SQLiteTransaction: HousekeepingWrites {
    /// Deletes, in batches of at most `limit` per table: expired `jti`s (and used sign-in nonces), and sessions past their
    /// purge time (absolute expiry, or a day after revocation), out-of-band and custom registration transactions and admin tokens a week past their expiry.
    func purgeExpired(now: Int64, limit: Int) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { db in
            let limit = SQLValue.int(Int64(limit))
            var total = 0
            total += try db.run(
                "DELETE FROM used_jtis WHERE (issuer, jti) IN (SELECT issuer, jti FROM used_jtis WHERE expires_at < ? LIMIT ?)", [.int(now), limit])
            total += try db.run("DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE purge_at <= ? LIMIT ?)", [.int(now), limit])
            total += try db.run(
                "DELETE FROM oob_transactions WHERE id IN (SELECT id FROM oob_transactions WHERE expires_at <= ? LIMIT ?)",
                [.int(now - outOfBandRetention), limit])
            total += try db.run(
                "DELETE FROM custom_transactions WHERE id IN (SELECT id FROM custom_transactions WHERE expires_at <= ? LIMIT ?)",
                [.int(now - customTransactionRetention), limit])
            total += try db.run(
                "DELETE FROM web_sessions WHERE id IN (SELECT id FROM web_sessions WHERE expires_at <= ? LIMIT ?)", [.int(now), limit])
            total += try db.run(
                "DELETE FROM admin_tokens WHERE id IN (SELECT id FROM admin_tokens WHERE expires_at <= ? LIMIT ?)", [.int(now - adminTokenRetention), limit])
            result.set(total)
            return nil
        }
        return result
    }
}
