import Foundation
import LatchCore
import PostgresNIO

extension PostgresStore: AuthenticatorStore {
    typealias AuthenticatorRow = (String, String, Data, Data, Int64, Data, String, String, Bool, Int64, Int64?, Int64, Int64?, Data?)

    static func authenticator(_ row: AuthenticatorRow) throws -> Authenticator {
        Authenticator(
            id: row.0, userID: row.1, credentialID: row.2, publicKeyCOSE: row.3, signCount: try StoredForm.signCount(row.4), aaguid: row.5,
            format: row.6, name: row.7, backupEligible: row.8, createdAt: row.9, lastUsedAt: row.10, failedAttempts: Int(row.11), lastFailedAt: row.12,
            pinBindingKey: row.13)
    }

    public func authenticators(userID: String) async throws -> [Authenticator] {
        try await query("authenticators") { client in
            try await client.query(
                """
                SELECT id, user_id, credential_id, public_key, sign_count, aaguid, format, name, backup_eligible, created_at, last_used_at,
                    failed_attempts, last_failed_at, pin_binding_key
                FROM authenticators WHERE user_id = \(userID) ORDER BY created_at, id
                """
            ).all(AuthenticatorRow.self).map(Self.authenticator)
        }
    }

    public func authenticator(credentialID: Data) async throws -> (User, Authenticator)? {
        try await query("authenticator") { client in
            try await client.query(
                try """
                SELECT u.id, u.username, u.kind, u.issuer, u.subject, u.claims, u.created_at,
                    a.id, a.user_id, a.credential_id, a.public_key, a.sign_count, a.aaguid, a.format, a.name, a.backup_eligible, a.created_at,
                    a.last_used_at, a.failed_attempts, a.last_failed_at, a.pin_binding_key
                FROM authenticators a JOIN users u ON u.id = a.user_id WHERE a.credential_id = \(credentialID)
                """
            ).first((String, String, String, String?, String?, String, Int64, String, String, Data, Data, Int64, Data, String, String, Bool, Int64, Int64?, Int64, Int64?, Data?).self)
            .map { row in
                (
                    try Self.user((row.0, row.1, row.2, row.3, row.4, row.5, row.6)),
                    try Self.authenticator((row.7, row.8, row.9, row.10, row.11, row.12, row.13, row.14, row.15, row.16, row.17, row.18, row.19, row.20))
                )
            }
        }
    }
}

extension PostgresTransaction: AuthenticatorWrites {
    func insertAuthenticator(_ authenticator: Authenticator, ifTaken refusal: any Error & Sendable) {
        changeOne(
            try """
            INSERT INTO authenticators (
                id, user_id, credential_id, public_key, sign_count, aaguid, format, name, backup_eligible, created_at, last_used_at, failed_attempts,
                last_failed_at, pin_binding_key)
            SELECT \(authenticator.id), \(authenticator.userID), \(authenticator.credentialID), \(authenticator.publicKeyCOSE),
                \(Int64(authenticator.signCount)), \(authenticator.aaguid), \(authenticator.format), \(authenticator.name),
                \(authenticator.backupEligible), \(authenticator.createdAt), \(authenticator.lastUsedAt), \(Int64(authenticator.failedAttempts)),
                \(authenticator.lastFailedAt), \(authenticator.pinBindingKey)
            WHERE EXISTS (SELECT 1 FROM users WHERE id = \(authenticator.userID) FOR KEY SHARE)
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func recordAuthenticatorUse(id: String, signCount: UInt32, failedAttempts: Int?, at: Int64, ifChanged refusal: any Error & Sendable) {
        // One statement: a concurrent assertion with the same counter, or a concurrent failed PIN, waits on the row
        // lock, then finds the counter not smaller or the failure count moved.
        let count = Int64(signCount)
        let failures = failedAttempts.map(Int64.init)
        changeOne(
            """
            UPDATE authenticators SET sign_count = \(count), last_used_at = \(at), failed_attempts = 0, last_failed_at = NULL
            WHERE id = \(id) AND (sign_count < \(count) OR (sign_count = 0 AND \(count) = 0)) AND (\(failures)::bigint IS NULL OR failed_attempts = \(failures)) RETURNING 1
            """, orRefuse: refusal)
    }

    func renameAuthenticator(id: String, userID: String, name: String, ifMissing refusal: any Error & Sendable) {
        changeOne("UPDATE authenticators SET name = \(name) WHERE id = \(id) AND user_id = \(userID) RETURNING 1", orRefuse: refusal)
    }

    func deleteAuthenticator(id: String, userID: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM authenticators WHERE id = \(id) AND user_id = \(userID) RETURNING 1", orRefuse: refusal)
    }

    func deleteAuthenticators(userID: String) {
        execute("DELETE FROM authenticators WHERE user_id = \(userID)")
    }

    func reservePinAttempt(id: String, maxAttempts: Int, coolDowns: [Int64], at: Int64, ifRefused refusal: any Error & Sendable) -> WriteResult<Int> {
        // One conditional UPDATE … RETURNING: concurrent reservations on any replicas queue on the row lock, each
        // re-evaluating the condition on the committed count; no lock is held while the proof is verified. A request
        // whose time (read when it began) is earlier than the last failure's — it queued behind a later one, or its
        // replica's clock is behind — is not refused by a cool-down of 0, and does not move the last failure back.
        let result = WriteResult(0)
        let wait = PinPolicy.coolDownSQL("failed_attempts", maxAttempts: maxAttempts, coolDowns: coolDowns)
        let limit = Int64(maxAttempts)
        add { connection in
            let query: PostgresQuery = """
                UPDATE authenticators SET failed_attempts = failed_attempts + 1, last_failed_at = GREATEST(last_failed_at, \(at))
                WHERE id = \(id) AND failed_attempts < \(limit)
                    AND (failed_attempts = 0 OR last_failed_at IS NULL OR \(unescaped: wait) = 0 OR last_failed_at + \(unescaped: wait) <= \(at))
                RETURNING failed_attempts
                """
            guard let count = try await connection.run(query).first(Int64.self) else { return refusal }
            result.set(Int(count))
            return nil
        }
        return result
    }

    func releasePinAttempt(id: String) {
        execute("UPDATE authenticators SET failed_attempts = failed_attempts - 1 WHERE id = \(id) AND failed_attempts > 0")
    }

    func unlockAuthenticator(id: String, userID: String, ifMissing refusal: any Error & Sendable) {
        changeOne(
            "UPDATE authenticators SET failed_attempts = 0, last_failed_at = NULL WHERE id = \(id) AND user_id = \(userID) RETURNING 1",
            orRefuse: refusal)
    }

    func replaceAuthenticatorKey(
        id: String, oldPublicKeyCOSE: Data, publicKeyCOSE: Data, signCount: UInt32, at: Int64, ifChanged refusal: any Error & Sendable
    ) {
        let count = Int64(signCount)
        changeOne(
            try """
            UPDATE authenticators SET public_key = \(publicKeyCOSE), sign_count = \(count), failed_attempts = 0, last_failed_at = NULL,
                last_used_at = \(at)
            WHERE id = \(id) AND public_key = \(oldPublicKeyCOSE) RETURNING 1
            """, orRefuse: refusal)
    }
}
