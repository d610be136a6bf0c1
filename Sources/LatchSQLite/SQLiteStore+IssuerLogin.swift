import Foundation
import LatchCore
import LatchModel

extension SQLiteStore: IssuerLoginStore {
    static let loginIssuerColumns = "id, audience, keys_json, jwks_url, max_token_lifetime, allowed_scopes, custom_federation, created_at"

    static func decodeLoginIssuer(_ row: SQLRow) throws -> LoginIssuer {
        LoginIssuer(
            id: row.text(0), audience: row.text(1), keysJSON: row.text(2), jwksURL: row.optionalText(3), maxTokenLifetime: row.int(4),
            allowedScopes: try StoredForm.names(row.text(5)), customFederation: row.int(6) != 0, createdAt: row.int(7))
    }

    static let resourceServerColumns = "id, name, secret_hash, created_at"

    static func decodeResourceServer(_ row: SQLRow) -> ResourceServer {
        ResourceServer(id: row.text(0), name: row.text(1), secretHash: row.blob(2), createdAt: row.int(3))
    }

    public func loginIssuers() async throws -> [LoginIssuer] {
        try await read { db in try db.query("SELECT \(Self.loginIssuerColumns) FROM login_issuers ORDER BY id").map(Self.decodeLoginIssuer) }
    }

    public func loginIssuer(id: String) async throws -> LoginIssuer? {
        try await read { db in
            try db.row("SELECT \(Self.loginIssuerColumns) FROM login_issuers WHERE id = ?", [.text(id)]).map(Self.decodeLoginIssuer)
        }
    }

    public func sessionConsumers(sessionID: String) async throws -> [ConsumerPair] {
        try await read { db in
            // Sorted as ConsumerPair sorts, whatever the database's collation.
            try db.query("SELECT issuer_id, consumer_id FROM session_consumers WHERE session_id = ?", [.text(sessionID)])
                .map { ConsumerPair(issuer: $0.text(0), consumer: $0.text(1)) }.sorted()
        }
    }

    public func resourceServer(id: String) async throws -> ResourceServer? {
        try await read { db in
            try db.row("SELECT \(Self.resourceServerColumns) FROM resource_servers WHERE id = ?", [.text(id)]).map(Self.decodeResourceServer)
        }
    }

    public func resourceServers() async throws -> [ResourceServer] {
        try await read { db in try db.query("SELECT \(Self.resourceServerColumns) FROM resource_servers ORDER BY id").map(Self.decodeResourceServer) }
    }
}

extension SQLiteTransaction: IssuerLoginWrites {
    func insertLoginIssuer(_ issuer: LoginIssuer, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO login_issuers (\(SQLiteStore.loginIssuerColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [
                .text(issuer.id), .text(issuer.audience), .text(issuer.keysJSON), issuer.jwksURL.sql, .int(issuer.maxTokenLifetime),
                .text(StoredForm.namesText(issuer.allowedScopes)), .int(issuer.customFederation ? 1 : 0), .int(issuer.createdAt),
            ], orRefuse: refusal)
    }

    func deleteLoginIssuer(id: String) -> WriteResult<Int> {
        counting("DELETE FROM login_issuers WHERE id = ?", [.text(id)])
    }

    func insertSessionConsumers(sessionID: String, _ pairs: [ConsumerPair], at: Int64) {
        apply { db in
            // One cached statement per pair (SQLite is in-process: no round trips to save).
            for pair in pairs {
                try db.run(
                    "INSERT INTO session_consumers (session_id, issuer_id, consumer_id, added_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    [.text(sessionID), .text(pair.issuer), .text(pair.consumer), .int(at)])
            }
            return nil
        }
    }

    func renewLogin(sessionID: String, authTime: Int64, expiresAt: Int64, ifUnavailable refusal: any Error & Sendable) {
        // A live session is purged at its expiry (see insertSession), so purge_at moves with expires_at.
        changeOne(
            "UPDATE sessions SET auth_time = ?1, expires_at = ?2, purge_at = ?2 WHERE id = ?3 AND revoked_at IS NULL AND expires_at > ?1",
            [.int(authTime), .int(expiresAt), .text(sessionID)], orRefuse: refusal)
    }

    /// The pairs travel as one JSON array of `[issuer, consumer]` arrays, so that the statement's text (and its cached
    /// plan) is the same for any number of pairs.
    static let revokeHoldingAny = """
        UPDATE sessions SET revoked_at = ?1, purge_at = min(purge_at, ?1 + \(revokedSessionRetention))
        WHERE revoked_at IS NULL AND expires_at > ?1 AND id IN (
            SELECT c.session_id FROM json_each(?2) p
            JOIN session_consumers c ON c.issuer_id = json_extract(p.value, '$[0]') AND c.consumer_id = json_extract(p.value, '$[1]'))
        """

    func revokeSessions(holdingAny pairs: [ConsumerPair], at now: Int64) -> WriteResult<Int> {
        guard !pairs.isEmpty else { return WriteResult(0) }
        let json = JSONValue.array(pairs.map { .array([.string($0.issuer), .string($0.consumer)]) }).serialized()
        return counting(Self.revokeHoldingAny, [.int(now), .text(String(decoding: json, as: UTF8.self))])
    }

    func insertResourceServer(_ server: ResourceServer, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO resource_servers (\(SQLiteStore.resourceServerColumns)) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [.text(server.id), .text(server.name), .blob(server.secretHash), .int(server.createdAt)], orRefuse: refusal)
    }

    func deleteResourceServer(id: String) -> WriteResult<Int> {
        counting("DELETE FROM resource_servers WHERE id = ?", [.text(id)])
    }
}
