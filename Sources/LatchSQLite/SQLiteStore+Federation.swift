import Foundation
import LatchCore

extension SQLiteStore: FederationStore {
    static func decodeUpstreamIdP(_ row: SQLRow) throws -> UpstreamIdP {
        UpstreamIdP(
            id: row.text(0), settings: try UpstreamIdP.Settings.stored(row.text(1)), sealedSecret: row.optionalBlob(2),
            createdAt: row.int(3))
    }

    public func upstreamIdP(id: String) async throws -> UpstreamIdP? {
        try await read { db in
            try db.row("SELECT id, settings, sealed_secret, created_at FROM upstream_idps WHERE id = ?", [.text(id)]).map(Self.decodeUpstreamIdP)
        }
    }

    public func upstreamIdPs() async throws -> [UpstreamIdP] {
        try await read { db in
            try db.query("SELECT id, settings, sealed_secret, created_at FROM upstream_idps ORDER BY id").map(Self.decodeUpstreamIdP)
        }
    }

    public func webSession(id: String) async throws -> WebSession? {
        try await read { db in
            try db.row(
                """
                SELECT id, user_id, upstream_idp, auth_time, sealed_upstream_id_token, created_at, expires_at, ended_at
                FROM web_sessions WHERE id = ?
                """, [.text(id)]
            ).map { row in
                WebSession(
                    id: row.text(0), userID: row.text(1), upstreamIdP: row.text(2), authTime: row.int(3),
                    sealedUpstreamIDToken: row.optionalBlob(4), createdAt: row.int(5), expiresAt: row.int(6),
                    endedAt: row.optionalInt(7))
            }
        }
    }
}

extension SQLiteTransaction: FederationWrites {
    func insertUpstreamIdP(_ idp: UpstreamIdP, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO upstream_idps (id, settings, sealed_secret, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [.text(idp.id), .text(idp.settings.storedText), idp.sealedSecret.map(SQLValue.blob) ?? .null, .int(idp.createdAt)], orRefuse: refusal)
    }

    func deleteUpstreamIdP(id: String, ifMissing refusal: any Error & Sendable) {
        // Its web sessions go by the foreign key; its users stay.
        changeOne("DELETE FROM upstream_idps WHERE id = ?", [.text(id)], orRefuse: refusal)
    }

    func insertWebSession(_ session: WebSession) {
        apply { db in
            try db.run(
                """
                INSERT INTO web_sessions (id, user_id, upstream_idp, auth_time, sealed_upstream_id_token, created_at, expires_at, ended_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, NULL)
                """,
                [
                    .text(session.id), .text(session.userID), .text(session.upstreamIdP), .int(session.authTime),
                    session.sealedUpstreamIDToken.map(SQLValue.blob) ?? .null, .int(session.createdAt), .int(session.expiresAt),
                ])
            return nil
        }
    }

    func endWebSession(id: String, at now: Int64) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { db in
            result.set(try db.run("UPDATE web_sessions SET ended_at = ? WHERE id = ? AND ended_at IS NULL AND expires_at > ?", [.int(now), .text(id), .int(now)]))
            return nil
        }
        return result
    }
}
