import LatchCore
import LatchJOSE

extension SQLiteStore: SigningKeyStore {
    public func signingKeys() async throws -> [SigningKeyRecord] {
        try await read { db in
            try db.query(
                "SELECT key_id, algorithm, sealed_private_key, public_key, created_at, retired_at FROM signing_keys ORDER BY created_at, key_id"
            ).map { row in
                SigningKeyRecord(
                    keyID: row.text(0), algorithm: try StoredForm.algorithm(row.text(1), column: "signing_keys.algorithm"),
                    sealedPrivateKey: row.blob(2), publicKeyDER: row.blob(3), createdAt: row.int(4), retiredAt: row.optionalInt(5))
            }
        }
    }
}

extension SQLiteTransaction: SigningKeyWrites {
    func activateSigningKey(_ key: SigningKeyRecord) {
        apply { db in
            try db.run("UPDATE signing_keys SET retired_at = ? WHERE retired_at IS NULL AND algorithm = ?", [.int(key.createdAt), .text(key.algorithm.rawValue)])
            try db.run(
                "INSERT INTO signing_keys (key_id, algorithm, sealed_private_key, public_key, created_at, retired_at) VALUES (?, ?, ?, ?, ?, NULL)",
                [.text(key.keyID), .text(key.algorithm.rawValue), .blob(key.sealedPrivateKey), .blob(key.publicKeyDER), .int(key.createdAt)])
            return nil
        }
    }

    func deleteSigningKeys(retiredBefore cutoff: Int64) -> WriteResult<Int> {
        counting("DELETE FROM signing_keys WHERE retired_at < ?", [.int(cutoff)])
    }
}
