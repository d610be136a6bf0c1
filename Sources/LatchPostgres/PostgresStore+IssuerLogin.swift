import Foundation
import LatchCore
import PostgresNIO

extension PostgresStore: IssuerLoginStore {
    typealias LoginIssuerRow = (String, String, String, String?, Int64, String, Bool, Int64)

    static let loginIssuerColumns = "id, audience, keys_json, jwks_url, max_token_lifetime, allowed_scopes, custom_federation, created_at"

    static func loginIssuer(_ row: LoginIssuerRow) throws -> LoginIssuer {
        LoginIssuer(
            id: row.0, audience: row.1, keysJSON: row.2, jwksURL: row.3, maxTokenLifetime: row.4, allowedScopes: try StoredForm.names(row.5),
            customFederation: row.6, createdAt: row.7)
    }

    typealias ResourceServerRow = (String, String, Data, Int64)

    static func resourceServer(_ row: ResourceServerRow) -> ResourceServer {
        ResourceServer(id: row.0, name: row.1, secretHash: row.2, createdAt: row.3)
    }

    public func loginIssuers() async throws -> [LoginIssuer] {
        try await query("loginIssuers") { client in
            try await client.query("SELECT \(unescaped: Self.loginIssuerColumns) FROM login_issuers ORDER BY id").all(LoginIssuerRow.self)
                .map(Self.loginIssuer)
        }
    }

    public func loginIssuer(id: String) async throws -> LoginIssuer? {
        try await query("loginIssuer") { client in
            try await client.query("SELECT \(unescaped: Self.loginIssuerColumns) FROM login_issuers WHERE id = \(id)").first(LoginIssuerRow.self)
                .map(Self.loginIssuer)
        }
    }

    public func sessionConsumers(sessionID: String) async throws -> [ConsumerPair] {
        try await query("sessionConsumers") { client in
            // Sorted as ConsumerPair sorts, whatever the database's collation.
            try await client.query("SELECT issuer_id, consumer_id FROM session_consumers WHERE session_id = \(sessionID)")
                .all((String, String).self).map { ConsumerPair(issuer: $0.0, consumer: $0.1) }.sorted()
        }
    }

    public func resourceServer(id: String) async throws -> ResourceServer? {
        try await query("resourceServer") { client in
            try await client.query("SELECT id, name, secret_hash, created_at FROM resource_servers WHERE id = \(id)").first(ResourceServerRow.self)
                .map(Self.resourceServer)
        }
    }

    public func resourceServers() async throws -> [ResourceServer] {
        try await query("resourceServers") { client in
            try await client.query("SELECT id, name, secret_hash, created_at FROM resource_servers ORDER BY id").all(ResourceServerRow.self)
                .map(Self.resourceServer)
        }
    }
}

extension PostgresTransaction: IssuerLoginWrites {
    func insertLoginIssuer(_ issuer: LoginIssuer, ifTaken refusal: any Error & Sendable) {
        let scopes = StoredForm.namesText(issuer.allowedScopes)
        changeOne(
            """
            INSERT INTO login_issuers (id, audience, keys_json, jwks_url, max_token_lifetime, allowed_scopes, custom_federation, created_at)
            VALUES (\(issuer.id), \(issuer.audience), \(issuer.keysJSON), \(issuer.jwksURL), \(issuer.maxTokenLifetime), \(scopes),
                    \(issuer.customFederation), \(issuer.createdAt))
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func deleteLoginIssuer(id: String) -> WriteResult<Int> {
        counting("DELETE FROM login_issuers WHERE id = \(id) RETURNING 1")
    }

    /// One statement for every pair: the pairs travel as two parallel arrays.
    func insertSessionConsumers(sessionID: String, _ pairs: [ConsumerPair], at: Int64) {
        guard !pairs.isEmpty else { return }
        let issuers = pairs.map(\.issuer)
        let consumers = pairs.map(\.consumer)
        execute(
            """
            INSERT INTO session_consumers (session_id, issuer_id, consumer_id, added_at)
            SELECT \(sessionID), p.issuer_id, p.consumer_id, \(at) FROM unnest(\(issuers)::TEXT[], \(consumers)::TEXT[]) AS p (issuer_id, consumer_id)
            ON CONFLICT DO NOTHING
            """)
    }

    func renewLogin(sessionID: String, authTime: Int64, expiresAt: Int64, ifUnavailable refusal: any Error & Sendable) {
        // A live session is purged at its expiry (see insertSession), so purge_at moves with expires_at.
        changeOne(
            """
            UPDATE sessions SET auth_time = \(authTime), expires_at = \(expiresAt), purge_at = \(expiresAt)
            WHERE id = \(sessionID) AND revoked_at IS NULL AND expires_at > \(authTime) RETURNING 1
            """, orRefuse: refusal)
    }

    func revokeSessions(holdingAny pairs: [ConsumerPair], at now: Int64) -> WriteResult<Int> {
        guard !pairs.isEmpty else { return WriteResult(0) }
        let issuers = pairs.map(\.issuer)
        let consumers = pairs.map(\.consumer)
        return counting(
            """
            UPDATE sessions SET revoked_at = \(now), purge_at = LEAST(purge_at, \(now + revokedSessionRetention))
            WHERE revoked_at IS NULL AND expires_at > \(now) AND id IN (
                SELECT c.session_id FROM unnest(\(issuers)::TEXT[], \(consumers)::TEXT[]) AS p (issuer_id, consumer_id)
                JOIN session_consumers c ON c.issuer_id = p.issuer_id AND c.consumer_id = p.consumer_id)
            RETURNING 1
            """)
    }

    func insertResourceServer(_ server: ResourceServer, ifTaken refusal: any Error & Sendable) {
        changeOne(
            try """
            INSERT INTO resource_servers (id, name, secret_hash, created_at) VALUES (\(server.id), \(server.name), \(server.secretHash), \(server.createdAt))
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func deleteResourceServer(id: String) -> WriteResult<Int> {
        counting("DELETE FROM resource_servers WHERE id = \(id) RETURNING 1")
    }
}
