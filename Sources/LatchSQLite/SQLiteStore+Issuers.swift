import LatchCore
import LatchJOSE

extension SQLiteStore: SignOnIssuerStore {
    static let issuerColumns = "issuer, key_id, algorithm, public_key, audience, allowed_claims, max_lifetime, created_at"

    static func decodeIssuerKey(_ row: SQLRow) throws -> SignOnIssuerKey {
        SignOnIssuerKey(
            issuer: row.text(0), keyID: row.text(1),
            key: try StoredForm.sharedPublicKey(algorithm: row.text(2), der: row.blob(3), column: "issuer_keys.public_key"),
            audience: row.text(4), allowedClaims: try StoredForm.names(row.text(5)), maxLifetime: row.int(6), createdAt: row.int(7))
    }

    public func issuerKey(issuer: String, keyID: String) async throws -> SignOnIssuerKey? {
        try await read { db in
            try db.row("SELECT \(Self.issuerColumns) FROM issuer_keys WHERE issuer = ? AND key_id = ?", [.text(issuer), .text(keyID)])
                .map(Self.decodeIssuerKey)
        }
    }

    public func issuerKeys() async throws -> [SignOnIssuerKey] {
        try await read { db in try db.query("SELECT \(Self.issuerColumns) FROM issuer_keys ORDER BY issuer, key_id").map(Self.decodeIssuerKey) }
    }
}

extension SQLiteTransaction: SignOnIssuerWrites {
    func insertIssuerKey(_ key: SignOnIssuerKey, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO issuer_keys (\(SQLiteStore.issuerColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [
                .text(key.issuer), .text(key.keyID), .text(key.key.algorithm.rawValue), .blob(key.key.derRepresentation), .text(key.audience),
                .text(StoredForm.namesText(key.allowedClaims)), .int(key.maxLifetime), .int(key.createdAt),
            ], orRefuse: refusal)
    }

    func deleteIssuerKeys(issuer: String, keyID: String?) -> WriteResult<Int> {
        if let keyID {
            return counting("DELETE FROM issuer_keys WHERE issuer = ? AND key_id = ?", [.text(issuer), .text(keyID)])
        }
        return counting("DELETE FROM issuer_keys WHERE issuer = ?", [.text(issuer)])
    }
}
