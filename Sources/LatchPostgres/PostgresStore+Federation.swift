import Foundation
import LatchCore
import PostgresNIO

extension PostgresStore: FederationStore {
    typealias UpstreamIdPRow = (String, String, Data?, Int64)

    static func upstreamIdP(_ row: UpstreamIdPRow) throws -> UpstreamIdP {
        UpstreamIdP(id: row.0, settings: try UpstreamIdP.Settings.stored(row.1), sealedSecret: row.2, createdAt: row.3)
    }

    public func upstreamIdP(id: String) async throws -> UpstreamIdP? {
        try await query("upstreamIdP") { client in
            try await client.query("SELECT id, settings, sealed_secret, created_at FROM upstream_idps WHERE id = \(id)")
                .first(UpstreamIdPRow.self).map(Self.upstreamIdP)
        }
    }

    public func upstreamIdPs() async throws -> [UpstreamIdP] {
        try await query("upstreamIdPs") { client in
            try await client.query("SELECT id, settings, sealed_secret, created_at FROM upstream_idps ORDER BY id").all(UpstreamIdPRow.self)
                .map(Self.upstreamIdP)
        }
    }

    public func webSession(id: String) async throws -> WebSession? {
        try await query("webSession") { client in
            try await client.query(
                """
                SELECT id, user_id, upstream_idp, auth_time, sealed_upstream_id_token, created_at, expires_at, ended_at
                FROM web_sessions WHERE id = \(id)
                """
            ).first((String, String, String, Int64, Data?, Int64, Int64, Int64?).self).map { row in
                WebSession(
                    id: row.0, userID: row.1, upstreamIdP: row.2, authTime: row.3, sealedUpstreamIDToken: row.4, createdAt: row.5, expiresAt: row.6,
                    endedAt: row.7)
            }
        }
    }
}

extension PostgresTransaction: FederationWrites {
    func insertUpstreamIdP(_ idp: UpstreamIdP, ifTaken refusal: any Error & Sendable) {
        let settings = idp.settings.storedText
        changeOne(
            try """
            INSERT INTO upstream_idps (id, settings, sealed_secret, created_at) VALUES (\(idp.id), \(settings), \(idp.sealedSecret), \(idp.createdAt))
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func deleteUpstreamIdP(id: String, ifMissing refusal: any Error & Sendable) {
        // Its web sessions go by the foreign key; its users stay.
        changeOne("DELETE FROM upstream_idps WHERE id = \(id) RETURNING 1", orRefuse: refusal)
    }

    func insertWebSession(_ session: WebSession) {
        execute(
            try """
            INSERT INTO web_sessions (id, user_id, upstream_idp, auth_time, sealed_upstream_id_token, created_at, expires_at, ended_at)
            VALUES (\(session.id), \(session.userID), \(session.upstreamIdP), \(session.authTime), \(session.sealedUpstreamIDToken),
                \(session.createdAt), \(session.expiresAt), NULL)
            """)
    }

    func endWebSession(id: String, at now: Int64) -> WriteResult<Int> {
        counting("UPDATE web_sessions SET ended_at = \(now) WHERE id = \(id) AND ended_at IS NULL AND expires_at > \(now) RETURNING 1")
    }
}
