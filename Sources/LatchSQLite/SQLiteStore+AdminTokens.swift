import Foundation
import LatchCore

extension SQLiteStore: AdminTokenStore {
    public func adminTokens() async throws -> [AdminTokenRecord] {
        try await read { db in
            try db.query("SELECT id, name, hash, created_at FROM admin_tokens ORDER BY created_at, id").map {
                AdminTokenRecord(id: $0.text(0), name: $0.text(1), hash: $0.blob(2), createdAt: $0.int(3))
            }
        }
    }

    public func isRevokedAdminToken(hash: Data) async throws -> Bool {
        try await read { db in !(try db.query("SELECT 1 FROM revoked_admin_tokens WHERE hash = ?", [.blob(hash)]).isEmpty) }
    }
}

extension SQLiteTransaction: AdminTokenWrites {
    func putAdminToken(_ token: AdminTokenRecord) {
        apply { db in
            try db.run(
                """
                INSERT INTO admin_tokens (id, name, hash, created_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET name = excluded.name, hash = excluded.hash, created_at = excluded.created_at
                """, [.text(token.id), .text(token.name), .blob(token.hash), .int(token.createdAt)])
            return nil
        }
    }

    func deleteAdminToken(id: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM admin_tokens WHERE id = ?", [.text(id)], orRefuse: refusal)
    }

    func rememberRevokedAdminToken(hash: Data, id: String, at: Int64) {
        apply { db in
            try db.run(
                "INSERT INTO revoked_admin_tokens (hash, id, revoked_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [.blob(hash), .text(id), .int(at)])
            return nil
        }
    }
}
