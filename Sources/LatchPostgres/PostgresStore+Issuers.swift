import Foundation
import LatchCore
import LatchJOSE
import PostgresNIO

extension PostgresStore: SignOnIssuerStore {
    typealias SignOnIssuerRow = (String, String, String, Data, String, String, Int64, Int64)

    static let issuerColumns = "issuer, key_id, algorithm, public_key, audience, allowed_claims, max_lifetime, created_at"

    static func issuerKey(_ row: SignOnIssuerRow) throws -> SignOnIssuerKey {
        SignOnIssuerKey(
            issuer: row.0, keyID: row.1, key: try StoredForm.sharedPublicKey(algorithm: row.2, der: row.3, column: "issuer_keys.public_key"),
            audience: row.4, allowedClaims: try StoredForm.names(row.5), maxLifetime: row.6, createdAt: row.7)
    }

    public func issuerKey(issuer: String, keyID: String) async throws -> SignOnIssuerKey? {
        try await query("issuerKey") { client in
            try await client.query("SELECT \(unescaped: Self.issuerColumns) FROM issuer_keys WHERE issuer = \(issuer) AND key_id = \(keyID)")
                .first(SignOnIssuerRow.self).map(Self.issuerKey)
        }
    }

    public func issuerKeys() async throws -> [SignOnIssuerKey] {
        try await query("issuerKeys") { client in
            try await client.query("SELECT \(unescaped: Self.issuerColumns) FROM issuer_keys ORDER BY issuer, key_id").all(SignOnIssuerRow.self)
                .map(Self.issuerKey)
        }
    }
}

extension PostgresTransaction: SignOnIssuerWrites {
    func insertIssuerKey(_ key: SignOnIssuerKey, ifTaken refusal: any Error & Sendable) {
        let allowed = StoredForm.namesText(key.allowedClaims)
        changeOne(
            try """
            INSERT INTO issuer_keys (issuer, key_id, algorithm, public_key, audience, allowed_claims, max_lifetime, created_at)
            VALUES (\(key.issuer), \(key.keyID), \(key.key.algorithm.rawValue), \(key.key.derRepresentation), \(key.audience),
                    \(allowed), \(key.maxLifetime), \(key.createdAt))
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func deleteIssuerKeys(issuer: String, keyID: String?) -> WriteResult<Int> {
        if let keyID {
            return counting("DELETE FROM issuer_keys WHERE issuer = \(issuer) AND key_id = \(keyID) RETURNING 1")
        }
        return counting("DELETE FROM issuer_keys WHERE issuer = \(issuer) RETURNING 1")
    }
}
