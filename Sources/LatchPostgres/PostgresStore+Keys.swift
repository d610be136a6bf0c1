import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import PostgresNIO

extension PostgresStore: IssuerStore, TestKeyStore, ClientStore, SigningKeyStore, AdminTokenStore, HousekeepingStore {
    // MARK: Issuers

    typealias IssuerRow = (String, String, String, Data, String, String, Int64, Int64)

    static func issuerKey(_ row: IssuerRow) -> IssuerKey? {
        guard let algorithm = JWSAlgorithm(rawValue: row.2), let key = try? PublicKey(der: row.3, algorithm: algorithm) else { return nil }
        let allowed = (try? JSONValue.parse(Data(row.5.utf8)))?.arrayValue?.compactMap(\.stringValue) ?? []
        return IssuerKey(issuer: row.0, keyID: row.1, key: key, audience: row.4, allowedClaims: allowed, maxLifetime: row.6, createdAt: row.7)
    }

    static let issuerColumns = "issuer, key_id, algorithm, public_key, audience, allowed_claims, max_lifetime, created_at"

    public func addIssuerKey(_ key: IssuerKey) async throws -> Bool {
        let allowed = String(decoding: JSONValue.array(key.allowedClaims.map(JSONValue.string)).serialized(), as: UTF8.self)
        return try await query("addIssuerKey") { client in
            try await client.query(
                """
                INSERT INTO issuer_keys (issuer, key_id, algorithm, public_key, audience, allowed_claims, max_lifetime, created_at)
                VALUES (\(key.issuer), \(key.keyID), \(key.key.algorithm.rawValue), \(key.key.derRepresentation), \(key.audience),
                        \(allowed), \(key.maxLifetime), \(key.createdAt))
                ON CONFLICT DO NOTHING RETURNING key_id
                """
            ).first(String.self) != nil
        }
    }

    public func issuerKey(issuer: String, keyID: String) async throws -> IssuerKey? {
        try await query("issuerKey") { client in
            try await client.query("SELECT \(unescaped: Self.issuerColumns) FROM issuer_keys WHERE issuer = \(issuer) AND key_id = \(keyID)")
                .first(IssuerRow.self).flatMap(Self.issuerKey)
        }
    }

    public func issuerKeys() async throws -> [IssuerKey] {
        try await query("issuerKeys") { client in
            try await client.query("SELECT \(unescaped: Self.issuerColumns) FROM issuer_keys ORDER BY issuer, key_id").all(IssuerRow.self)
                .compactMap(Self.issuerKey)
        }
    }

    public func deleteIssuer(_ issuer: String, keyID: String?) async throws -> Int {
        try await query("deleteIssuer") { client in
            if let keyID {
                return try await client.query("DELETE FROM issuer_keys WHERE issuer = \(issuer) AND key_id = \(keyID) RETURNING key_id").all(String.self).count
            }
            return try await client.query("DELETE FROM issuer_keys WHERE issuer = \(issuer) RETURNING key_id").all(String.self).count
        }
    }

    // MARK: Test keys

    static func testKey(_ row: (String, String, Data, Int64)) -> TestKey? {
        guard let algorithm = JWSAlgorithm(rawValue: row.1), let key = try? PublicKey(der: row.2, algorithm: algorithm) else { return nil }
        return TestKey(keyID: row.0, key: key, createdAt: row.3)
    }

    public func addTestKey(_ key: TestKey) async throws -> Bool {
        try await query("addTestKey") { client in
            try await client.query(
                """
                INSERT INTO test_keys (key_id, algorithm, public_key, created_at)
                VALUES (\(key.keyID), \(key.key.algorithm.rawValue), \(key.key.derRepresentation), \(key.createdAt))
                ON CONFLICT DO NOTHING RETURNING key_id
                """
            ).first(String.self) != nil
        }
    }

    public func testKey(id: String) async throws -> TestKey? {
        try await query("testKey") { client in
            try await client.query("SELECT key_id, algorithm, public_key, created_at FROM test_keys WHERE key_id = \(id)")
                .first((String, String, Data, Int64).self).flatMap(Self.testKey)
        }
    }

    public func testKeys() async throws -> [TestKey] {
        try await query("testKeys") { client in
            try await client.query("SELECT key_id, algorithm, public_key, created_at FROM test_keys ORDER BY key_id")
                .all((String, String, Data, Int64).self).compactMap(Self.testKey)
        }
    }

    public func deleteTestKey(id: String) async throws -> Bool {
        try await query("deleteTestKey") { client in
            try await client.query("DELETE FROM test_keys WHERE key_id = \(id) RETURNING key_id").first(String.self) != nil
        }
    }

    // MARK: Clients

    public func addClient(_ client: Client) async throws -> Bool {
        try await query("addClient") { connection in
            try await connection.query(
                "INSERT INTO clients (id, name, created_at) VALUES (\(client.id), \(client.name), \(client.createdAt)) ON CONFLICT DO NOTHING RETURNING id"
            ).first(String.self) != nil
        }
    }

    public func clients() async throws -> [Client] {
        try await query("clients") { client in
            try await client.query("SELECT id, name, created_at FROM clients ORDER BY id").all((String, String, Int64).self)
                .map { Client(id: $0.0, name: $0.1, createdAt: $0.2) }
        }
    }

    public func deleteClient(id: String) async throws -> Bool {
        try await transaction("deleteClient") { connection in
            try await connection.run("DELETE FROM sessions WHERE client_id = \(id)")
            return try await connection.run("DELETE FROM clients WHERE id = \(id) RETURNING id").first(String.self) != nil
        }
    }

    // MARK: Signing keys

    public func signingKeys() async throws -> [SigningKeyRecord] {
        try await query("signingKeys") { client in
            try await client.query(
                "SELECT key_id, algorithm, sealed_private_key, public_key, created_at, retired_at FROM signing_keys ORDER BY created_at"
            ).all((String, String, Data, Data, Int64, Int64?).self).compactMap { row in
                guard let algorithm = JWSAlgorithm(rawValue: row.1) else { return nil }
                return SigningKeyRecord(
                    keyID: row.0, algorithm: algorithm, sealedPrivateKey: row.2, publicKeyDER: row.3, createdAt: row.4, retiredAt: row.5)
            }
        }
    }

    public func activateSigningKey(_ key: SigningKeyRecord) async throws {
        try await transaction("activateSigningKey") { connection in
            try await connection.run("UPDATE signing_keys SET retired_at = \(key.createdAt) WHERE retired_at IS NULL")
            try await connection.run(
                """
                INSERT INTO signing_keys (key_id, algorithm, sealed_private_key, public_key, created_at, retired_at)
                VALUES (\(key.keyID), \(key.algorithm.rawValue), \(key.sealedPrivateKey), \(key.publicKeyDER), \(key.createdAt), NULL)
                """)
        }
    }

    public func deleteSigningKeys(retiredBefore cutoff: Int64) async throws -> Int {
        try await query("deleteSigningKeys") { client in
            try await client.query("DELETE FROM signing_keys WHERE retired_at < \(cutoff) RETURNING key_id").all(String.self).count
        }
    }

    // MARK: Admin tokens

    public func adminTokens() async throws -> [AdminTokenRecord] {
        try await query("adminTokens") { client in
            try await client.query("SELECT id, name, hash, created_at FROM admin_tokens ORDER BY created_at, id")
                .all((String, String, Data, Int64).self).map { AdminTokenRecord(id: $0.0, name: $0.1, hash: $0.2, createdAt: $0.3) }
        }
    }

    public func putAdminToken(_ token: AdminTokenRecord) async throws {
        _ = try await query("putAdminToken") { client in
            try await client.query(
                """
                INSERT INTO admin_tokens (id, name, hash, created_at) VALUES (\(token.id), \(token.name), \(token.hash), \(token.createdAt))
                ON CONFLICT (id) DO UPDATE SET name = excluded.name, hash = excluded.hash, created_at = excluded.created_at
                """)
        }
    }

    public func deleteAdminToken(id: String) async throws -> Bool {
        try await query("deleteAdminToken") { client in
            try await client.query("DELETE FROM admin_tokens WHERE id = \(id) RETURNING id").first(String.self) != nil
        }
    }

    // MARK: Housekeeping

    /// The advisory lock that makes one replica at a time purge.
    static let purgeLockKey: Int64 = 0x4C41_5443_4850_5247  // "LATCHPRG"

    /// Deletes expired rows in batches of at most `limit` per table. Only the replica holding the purge lock
    /// works; the others return 0 at once.
    public func purgeExpired(now: Int64, limit: Int) async throws -> Int {
        try await transaction("purgeExpired") { connection in
            let locked: Bool? = try await connection.run("SELECT pg_try_advisory_xact_lock(\(Self.purgeLockKey))").first(Bool.self)
            guard locked ?? false else { return 0 }
            var total = 0
            total += try await connection.run(
                "DELETE FROM nonces WHERE nonce IN (SELECT nonce FROM nonces WHERE expires_at <= \(now) LIMIT \(limit)) RETURNING 1"
            ).all(Int.self).count
            total += try await connection.run(
                """
                DELETE FROM used_jtis WHERE (issuer, jti) IN
                    (SELECT issuer, jti FROM used_jtis WHERE expires_at < \(now) LIMIT \(limit)) RETURNING 1
                """
            ).all(Int.self).count
            total += try await connection.run(
                "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE purge_at <= \(now) LIMIT \(limit)) RETURNING 1"
            ).all(Int.self).count
            return total
        }
    }
}
