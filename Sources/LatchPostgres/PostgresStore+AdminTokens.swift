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
}

extension PostgresTransaction: AdminTokenWrites {
    func putAdminToken(_ token: AdminTokenRecord) {
        execute(
            try """
            INSERT INTO admin_tokens (id, name, hash, created_at) VALUES (\(token.id), \(token.name), \(token.hash), \(token.createdAt))
            ON CONFLICT (id) DO UPDATE SET name = excluded.name, hash = excluded.hash, created_at = excluded.created_at
            """)
    }

    func deleteAdminToken(id: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM admin_tokens WHERE id = \(id) RETURNING 1", orRefuse: refusal)
    }
}
