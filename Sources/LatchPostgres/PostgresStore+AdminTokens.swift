import Foundation
import LatchCore
import PostgresNIO

extension PostgresStore: AdminTokenStore {
    public func adminTokens() async throws -> [AdminTokenRecord] {
        try await query("adminTokens") { client in
            try await client.query("SELECT id, name, hash, created_at FROM admin_tokens ORDER BY created_at, id")
                .all((String, String, Data, Int64).self).map { AdminTokenRecord(id: $0.0, name: $0.1, hash: $0.2, createdAt: $0.3) }
        }
    }

    public func isRevokedAdminToken(hash: Data) async throws -> Bool {
        try await query("isRevokedAdminToken") { client in
            try await !client.query("SELECT 1 FROM revoked_admin_tokens WHERE hash = \(hash)").all(Int.self).isEmpty
        }
    }
}

extension PostgresTransaction: AdminTokenWrites {
    func putAdminToken(_ token: AdminTokenRecord) {
        // Not `ON CONFLICT (id) DO UPDATE`: replicas starting together put the same token at once, and a
        // concurrent insert then conflicts on the hash's unique index, which an `ON CONFLICT (id)` does not cover.
        // Insert unless any key is taken, then replace a different token stored under the id.
        execute(
            try """
            INSERT INTO admin_tokens (id, name, hash, created_at) VALUES (\(token.id), \(token.name), \(token.hash), \(token.createdAt))
            ON CONFLICT DO NOTHING
            """,
            try """
            UPDATE admin_tokens SET name = \(token.name), hash = \(token.hash), created_at = \(token.createdAt)
            WHERE id = \(token.id) AND (hash <> \(token.hash) OR name <> \(token.name))
            """)
    }

    func deleteAdminToken(id: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM admin_tokens WHERE id = \(id) RETURNING 1", orRefuse: refusal)
    }

    func rememberRevokedAdminToken(hash: Data, id: String, at: Int64) {
        execute(try "INSERT INTO revoked_admin_tokens (hash, id, revoked_at) VALUES (\(hash), \(id), \(at)) ON CONFLICT DO NOTHING")
    }
}
