import Foundation
import LatchCore

extension SQLiteStore: AuthenticatorStore {
    static let authenticatorColumns =
        "id, user_id, credential_id, public_key, sign_count, aaguid, format, name, backup_eligible, created_at, last_used_at, failed_attempts, last_failed_at, pin_binding_key"

    static func decodeAuthenticator(_ row: SQLRow, offset: Int = 0) throws -> Authenticator {
        Authenticator(
            id: row.text(offset), userID: row.text(offset + 1), credentialID: row.blob(offset + 2), publicKeyCOSE: row.blob(offset + 3),
            signCount: try StoredForm.signCount(row.int(offset + 4)), aaguid: row.blob(offset + 5), format: row.text(offset + 6),
            name: row.text(offset + 7), backupEligible: row.int(offset + 8) != 0, createdAt: row.int(offset + 9),
            lastUsedAt: row.optionalInt(offset + 10), failedAttempts: Int(row.int(offset + 11)), lastFailedAt: row.optionalInt(offset + 12),
            pinBindingKey: row.optionalBlob(offset + 13))
    }

    public func authenticators(userID: String) async throws -> [Authenticator] {
        try await read { db in
            try db.query("SELECT \(Self.authenticatorColumns) FROM authenticators WHERE user_id = ? ORDER BY created_at, id", [.text(userID)])
                .map { try Self.decodeAuthenticator($0) }
        }
    }

    static let authenticatorWithUser = """
        SELECT \(qualified(userColumns, "u")), \(qualified(authenticatorColumns, "a"))
        FROM authenticators a JOIN users u ON u.id = a.user_id WHERE a.credential_id = ?
        """

    public func authenticator(credentialID: Data) async throws -> (User, Authenticator)? {
        try await read { db in
            try db.row(Self.authenticatorWithUser, [.blob(credentialID)]).map { row in
                (try Self.decodeUser(row), try Self.decodeAuthenticator(row, offset: 7))
            }
        }
    }
}

extension SQLiteTransaction: AuthenticatorWrites {
    func insertAuthenticator(_ authenticator: Authenticator, ifTaken refusal: any Error & Sendable) {
        changeOne(
            """
            INSERT INTO authenticators (\(SQLiteStore.authenticatorColumns)) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
            WHERE EXISTS (SELECT 1 FROM users WHERE id = ?) ON CONFLICT DO NOTHING
            """,
            [
                .text(authenticator.id), .text(authenticator.userID), .blob(authenticator.credentialID), .blob(authenticator.publicKeyCOSE),
                .int(Int64(authenticator.signCount)), .blob(authenticator.aaguid), .text(authenticator.format), .text(authenticator.name),
                .int(authenticator.backupEligible ? 1 : 0), .int(authenticator.createdAt), authenticator.lastUsedAt.sql, .int(Int64(authenticator.failedAttempts)), authenticator.lastFailedAt.sql,
                authenticator.pinBindingKey.map { .blob($0) } ?? .null,
                .text(authenticator.userID),
            ], orRefuse: refusal)
    }

    func recordAuthenticatorUse(id: String, signCount: UInt32, failedAttempts: Int?, at: Int64, ifChanged refusal: any Error & Sendable) {
        changeOne(
            """
            UPDATE authenticators SET sign_count = ?, last_used_at = ?, failed_attempts = 0, last_failed_at = NULL
            WHERE id = ? AND (sign_count < ? OR (sign_count = 0 AND ? = 0)) AND (? IS NULL OR failed_attempts = ?)
            """,
            [
                .int(Int64(signCount)), .int(at), .text(id), .int(Int64(signCount)), .int(Int64(signCount)), failedAttempts.map { .int(Int64($0)) } ?? .null,
                failedAttempts.map { .int(Int64($0)) } ?? .null,
            ],
            orRefuse: refusal)
    }

    func renameAuthenticator(id: String, userID: String, name: String, ifMissing refusal: any Error & Sendable) {
        changeOne("UPDATE authenticators SET name = ? WHERE id = ? AND user_id = ?", [.text(name), .text(id), .text(userID)], orRefuse: refusal)
    }

    func deleteAuthenticator(id: String, userID: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM authenticators WHERE id = ? AND user_id = ?", [.text(id), .text(userID)], orRefuse: refusal)
    }

    func deleteAuthenticators(userID: String) {
        _ = counting("DELETE FROM authenticators WHERE user_id = ?", [.text(userID)])
    }

    func reservePinAttempt(id: String, maxAttempts: Int, coolDowns: [Int64], at: Int64, ifRefused refusal: any Error & Sendable) -> WriteResult<Int> {
        let result = WriteResult(0)
        let wait = PinPolicy.coolDownSQL("failed_attempts", maxAttempts: maxAttempts, coolDowns: coolDowns)
        apply { db in
            guard
                let row = try db.row(
                    """
                    UPDATE authenticators SET failed_attempts = failed_attempts + 1, last_failed_at = max(coalesce(last_failed_at, ?1), ?1)
                    WHERE id = ?2 AND failed_attempts < ?3
                        AND (failed_attempts = 0 OR last_failed_at IS NULL OR \(wait) = 0 OR last_failed_at + \(wait) <= ?1)
                    RETURNING failed_attempts
                    """,
                    [.int(at), .text(id), .int(Int64(maxAttempts))])
            else { return refusal }
            result.set(Int(row.int(0)))
            return nil
        }
        return result
    }

    func releasePinAttempt(id: String) {
        _ = counting("UPDATE authenticators SET failed_attempts = failed_attempts - 1 WHERE id = ? AND failed_attempts > 0", [.text(id)])
    }

    func unlockAuthenticator(id: String, userID: String, ifMissing refusal: any Error & Sendable) {
        changeOne(
            "UPDATE authenticators SET failed_attempts = 0, last_failed_at = NULL WHERE id = ? AND user_id = ?", [.text(id), .text(userID)],
            orRefuse: refusal)
    }

    func replaceAuthenticatorKey(
        id: String, oldPublicKeyCOSE: Data, publicKeyCOSE: Data, signCount: UInt32, at: Int64, ifChanged refusal: any Error & Sendable
    ) {
        changeOne(
            """
            UPDATE authenticators SET public_key = ?, sign_count = ?, failed_attempts = 0, last_failed_at = NULL, last_used_at = ?
            WHERE id = ? AND public_key = ?
            """,
            [.blob(publicKeyCOSE), .int(Int64(signCount)), .int(at), .text(id), .blob(oldPublicKeyCOSE)], orRefuse: refusal)
    }
}
