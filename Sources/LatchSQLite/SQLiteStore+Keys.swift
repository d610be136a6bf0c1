import Foundation
import LatchCore
import LatchJOSE
import LatchModel

extension SQLiteStore: IssuerStore, TestKeyStore, ClientStore, SigningKeyStore, AdminTokenStore, HousekeepingStore {
    // MARK: Issuers

    static let issuerColumns = "issuer, key_id, algorithm, public_key, audience, allowed_claims, max_lifetime, created_at"

    static func decodeIssuerKey(_ row: SQLRow) -> IssuerKey? {
        guard let algorithm = JWSAlgorithm(rawValue: row.text(2)),
            let key = try? PublicKey(der: row.blob(3), algorithm: algorithm)
        else { return nil }
        let allowed = (try? JSONValue.parse(Data(row.text(5).utf8)))?.arrayValue?.compactMap(\.stringValue) ?? []
        return IssuerKey(
            issuer: row.text(0), keyID: row.text(1), key: key, audience: row.text(4), allowedClaims: allowed,
            maxLifetime: row.int(6), createdAt: row.int(7))
    }

    public func addIssuerKey(_ key: IssuerKey) async throws -> Bool {
        try await write { db in
            try db.run(
                "INSERT INTO issuer_keys (\(Self.issuerColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [
                    .text(key.issuer), .text(key.keyID), .text(key.key.algorithm.rawValue), .blob(key.key.derRepresentation),
                    .text(key.audience),
                    .text(String(decoding: JSONValue.array(key.allowedClaims.map(JSONValue.string)).serialized(), as: UTF8.self)),
                    .int(key.maxLifetime), .int(key.createdAt),
                ]) == 1
        }
    }

    public func issuerKey(issuer: String, keyID: String) async throws -> IssuerKey? {
        try await read { db in
            try db.row("SELECT \(Self.issuerColumns) FROM issuer_keys WHERE issuer = ? AND key_id = ?", [.text(issuer), .text(keyID)])
                .flatMap(Self.decodeIssuerKey)
        }
    }

    public func issuerKeys() async throws -> [IssuerKey] {
        try await read { db in
            try db.query("SELECT \(Self.issuerColumns) FROM issuer_keys ORDER BY issuer, key_id").compactMap(Self.decodeIssuerKey)
        }
    }

    public func deleteIssuer(_ issuer: String, keyID: String?) async throws -> Int {
        try await write { db in
            if let keyID {
                return try db.run("DELETE FROM issuer_keys WHERE issuer = ? AND key_id = ?", [.text(issuer), .text(keyID)])
            }
            return try db.run("DELETE FROM issuer_keys WHERE issuer = ?", [.text(issuer)])
        }
    }

    // MARK: Test keys

    static func decodeTestKey(_ row: SQLRow) -> TestKey? {
        guard let algorithm = JWSAlgorithm(rawValue: row.text(1)),
            let key = try? PublicKey(der: row.blob(2), algorithm: algorithm)
        else { return nil }
        return TestKey(keyID: row.text(0), key: key, createdAt: row.int(3))
    }

    public func addTestKey(_ key: TestKey) async throws -> Bool {
        try await write { db in
            try db.run(
                "INSERT INTO test_keys (key_id, algorithm, public_key, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                [.text(key.keyID), .text(key.key.algorithm.rawValue), .blob(key.key.derRepresentation), .int(key.createdAt)]
            ) == 1
        }
    }

    public func testKey(id: String) async throws -> TestKey? {
        try await read { db in
            try db.row("SELECT key_id, algorithm, public_key, created_at FROM test_keys WHERE key_id = ?", [.text(id)])
                .flatMap(Self.decodeTestKey)
        }
    }

    public func testKeys() async throws -> [TestKey] {
        try await read { db in
            try db.query("SELECT key_id, algorithm, public_key, created_at FROM test_keys ORDER BY key_id").compactMap(Self.decodeTestKey)
        }
    }

    public func deleteTestKey(id: String) async throws -> Bool {
        try await write { db in try db.run("DELETE FROM test_keys WHERE key_id = ?", [.text(id)]) > 0 }
    }

    // MARK: Clients

    public func addClient(_ client: Client) async throws -> Bool {
        try await write { db in
            try db.run(
                "INSERT INTO clients (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [.text(client.id), .text(client.name), .int(client.createdAt)]) == 1
        }
    }

    public func clients() async throws -> [Client] {
        try await read { db in
            try db.query("SELECT id, name, created_at FROM clients ORDER BY id").map {
                Client(id: $0.text(0), name: $0.text(1), createdAt: $0.int(2))
            }
        }
    }

    public func deleteClient(id: String) async throws -> Bool {
        try await write { db in
            // A deleted app's sessions end with it.
            try db.run("DELETE FROM sessions WHERE client_id = ?", [.text(id)])
            return try db.run("DELETE FROM clients WHERE id = ?", [.text(id)]) > 0
        }
    }

    // MARK: Signing keys

    public func signingKeys() async throws -> [SigningKeyRecord] {
        try await read { db in
            try db.query(
                "SELECT key_id, algorithm, sealed_private_key, public_key, created_at, retired_at FROM signing_keys ORDER BY created_at"
            ).compactMap { row in
                guard let algorithm = JWSAlgorithm(rawValue: row.text(1)) else { return nil }
                return SigningKeyRecord(
                    keyID: row.text(0), algorithm: algorithm, sealedPrivateKey: row.blob(2), publicKeyDER: row.blob(3),
                    createdAt: row.int(4), retiredAt: row.optionalInt(5))
            }
        }
    }

    public func activateSigningKey(_ key: SigningKeyRecord) async throws {
        try await write { db in
            try db.run("UPDATE signing_keys SET retired_at = ? WHERE retired_at IS NULL", [.int(key.createdAt)])
            try db.run(
                "INSERT INTO signing_keys (key_id, algorithm, sealed_private_key, public_key, created_at, retired_at) VALUES (?, ?, ?, ?, ?, NULL)",
                [.text(key.keyID), .text(key.algorithm.rawValue), .blob(key.sealedPrivateKey), .blob(key.publicKeyDER), .int(key.createdAt)])
        }
    }

    public func deleteSigningKeys(retiredBefore cutoff: Int64) async throws -> Int {
        try await write { db in try db.run("DELETE FROM signing_keys WHERE retired_at < ?", [.int(cutoff)]) }
    }

    // MARK: Admin tokens

    public func adminTokens() async throws -> [AdminTokenRecord] {
        try await read { db in
            try db.query("SELECT id, name, hash, created_at FROM admin_tokens ORDER BY created_at, id").map {
                AdminTokenRecord(id: $0.text(0), name: $0.text(1), hash: $0.blob(2), createdAt: $0.int(3))
            }
        }
    }

    public func putAdminToken(_ token: AdminTokenRecord) async throws {
        _ = try await write { db in
            try db.run(
                """
                INSERT INTO admin_tokens (id, name, hash, created_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET name = excluded.name, hash = excluded.hash, created_at = excluded.created_at
                """, [.text(token.id), .text(token.name), .blob(token.hash), .int(token.createdAt)])
        }
    }

    public func deleteAdminToken(id: String) async throws -> Bool {
        try await write { db in try db.run("DELETE FROM admin_tokens WHERE id = ?", [.text(id)]) > 0 }
    }

    // MARK: Housekeeping

    /// Deletes, in batches of at most `limit` per table: expired nonces and `jti`s, and sessions past their
    /// purge time (absolute expiry, or a day after revocation).
    public func purgeExpired(now: Int64, limit: Int) async throws -> Int {
        try await write { db in
            let limit = SQLValue.int(Int64(limit))
            var total = 0
            total += try db.run(
                "DELETE FROM nonces WHERE nonce IN (SELECT nonce FROM nonces WHERE expires_at <= ? LIMIT ?)", [.int(now), limit])
            total += try db.run(
                "DELETE FROM used_jtis WHERE (issuer, jti) IN (SELECT issuer, jti FROM used_jtis WHERE expires_at < ? LIMIT ?)",
                [.int(now), limit])
            total += try db.run(
                "DELETE FROM sessions WHERE id IN (SELECT id FROM sessions WHERE purge_at <= ? LIMIT ?)", [.int(now), limit])
            return total
        }
    }
}
