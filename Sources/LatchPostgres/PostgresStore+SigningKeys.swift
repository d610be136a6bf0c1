import Foundation
import LatchCore
import LatchJOSE
import PostgresNIO

extension PostgresStore: SigningKeyStore {
    public func signingKeys() async throws -> [SigningKeyRecord] {
        try await query("signingKeys") { client in
            try await client.query(
                "SELECT key_id, algorithm, sealed_private_key, public_key, created_at, retired_at FROM signing_keys ORDER BY created_at, key_id"
            ).all((String, String, Data, Data, Int64, Int64?).self).map { row in
                SigningKeyRecord(
                    keyID: row.0, algorithm: try StoredForm.algorithm(row.1, column: "signing_keys.algorithm"), sealedPrivateKey: row.2,
                    publicKeyDER: row.3, createdAt: row.4, retiredAt: row.5)
            }
        }
    }
}

extension PostgresTransaction: SigningKeyWrites {
    func activateSigningKey(_ key: SigningKeyRecord) {
        execute(
            "UPDATE signing_keys SET retired_at = \(key.createdAt) WHERE retired_at IS NULL AND algorithm = \(key.algorithm.rawValue)",
            try """
            INSERT INTO signing_keys (key_id, algorithm, sealed_private_key, public_key, created_at, retired_at)
            VALUES (\(key.keyID), \(key.algorithm.rawValue), \(key.sealedPrivateKey), \(key.publicKeyDER), \(key.createdAt), NULL)
            """)
    }

    func deleteSigningKeys(retiredBefore cutoff: Int64) -> WriteResult<Int> {
        counting("DELETE FROM signing_keys WHERE retired_at < \(cutoff) RETURNING 1")
    }
}
