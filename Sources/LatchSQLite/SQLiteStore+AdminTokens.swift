import Foundation
import LatchCore
import LatchModel

extension SQLiteStore: AdminTokenStore {
    public func adminTokens() async throws -> [AdminTokenRecord] {
        try await read { db in
            try db.query("SELECT id, name, hash, created_at, account_id, role, expires_at FROM admin_tokens ORDER BY created_at, id").map {
                AdminTokenRecord(
                    id: $0.text(0), name: $0.text(1), hash: $0.blob(2), createdAt: $0.int(3), accountID: $0.text(4),
                    role: try StoredForm.adminRole($0.text(5), column: "admin_tokens.role"), expiresAt: $0.optionalInt(6))
            }
        }
    }

    public func isRevokedAdminToken(hash: Data) async throws -> Bool {
        try await read { db in !(try db.query("SELECT 1 FROM revoked_admin_tokens WHERE hash = ?", [.blob(hash)]).isEmpty) }
    }

    public func adminAccounts() async throws -> [AdminAccount] {
        try await read { db in
            try db.query("SELECT id, username, role, created_at, created_by FROM admins ORDER BY created_at, id").map {
                AdminAccount(
                    id: $0.text(0), username: $0.text(1), role: try StoredForm.adminRole($0.text(2), column: "admins.role"), createdAt: $0.int(3),
                    createdBy: $0.optionalText(4))
            }
        }
    }
}

extension SQLiteStore {
    static let adminPasskeyColumns = "id, account_id, credential_id, public_key, sign_count, aaguid, name, created_at, last_used_at"

    public func adminPasskeys(accountID: String) async throws -> [AdminPasskey] {
        try await read { db in
            try db.query("SELECT \(Self.adminPasskeyColumns) FROM admin_passkeys WHERE account_id = ? ORDER BY created_at, id", [.text(accountID)])
                .map(Self.adminPasskey)
        }
    }

    public func adminPasskey(credentialID: Data) async throws -> AdminPasskey? {
        try await read { db in
            try db.row("SELECT \(Self.adminPasskeyColumns) FROM admin_passkeys WHERE credential_id = ?", [.blob(credentialID)]).map(Self.adminPasskey)
        }
    }

    static func adminPasskey(_ row: SQLRow) -> AdminPasskey {
        AdminPasskey(
            id: row.text(0), accountID: row.text(1), credentialID: row.blob(2), publicKeyCOSE: row.blob(3), signCount: UInt32(clamping: row.int(4)),
            aaguid: row.blob(5), name: row.text(6), createdAt: row.int(7), lastUsedAt: row.optionalInt(8))
    }
}

extension SQLiteTransaction: AdminTokenWrites {
    func insertAdminPasskey(_ passkey: AdminPasskey, ifRefused refusal: any Error & Sendable) {
        changeOne(
            """
            INSERT INTO admin_passkeys (\(SQLiteStore.adminPasskeyColumns))
            SELECT ?, ?, ?, ?, ?, ?, ?, ?, NULL WHERE EXISTS (SELECT 1 FROM admins WHERE id = ?) ON CONFLICT DO NOTHING
            """,
            [
                .text(passkey.id), .text(passkey.accountID), .blob(passkey.credentialID), .blob(passkey.publicKeyCOSE), .int(Int64(passkey.signCount)),
                .blob(passkey.aaguid), .text(passkey.name), .int(passkey.createdAt), .text(passkey.accountID),
            ], orRefuse: refusal)
    }

    func useAdminPasskey(id: String, signCount: UInt32, newSignCount: UInt32, at: Int64, ifRaced refusal: any Error & Sendable) {
        changeOne(
            "UPDATE admin_passkeys SET sign_count = ?, last_used_at = ? WHERE id = ? AND sign_count = ?",
            [.int(Int64(newSignCount)), .int(at), .text(id), .int(Int64(signCount))], orRefuse: refusal)
    }

    func deleteAdminPasskey(id: String, accountID: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM admin_passkeys WHERE id = ? AND account_id = ?", [.text(id), .text(accountID)], orRefuse: refusal)
    }

    func putAdminToken(_ token: AdminTokenRecord) {
        apply { db in
            try db.run(
                """
                INSERT INTO admin_tokens (id, name, hash, created_at, account_id, role, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET name = excluded.name, hash = excluded.hash, created_at = excluded.created_at,
                    account_id = excluded.account_id, role = excluded.role, expires_at = excluded.expires_at
                """, Self.values(token))
            return nil
        }
    }

    func putAdminTokenOfAccount(_ token: AdminTokenRecord, ifAccountMissing refusal: any Error & Sendable) {
        changeOne(
            """
            INSERT INTO admin_tokens (id, name, hash, created_at, account_id, role, expires_at)
            SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM admins WHERE id = ?)
            """, Self.values(token) + [.text(token.accountID)], orRefuse: refusal)
    }

    private static func values(_ token: AdminTokenRecord) -> [SQLValue] {
        [
            .text(token.id), .text(token.name), .blob(token.hash), .int(token.createdAt), .text(token.accountID), .text(token.role.rawValue),
            token.expiresAt.map(SQLValue.int) ?? .null,
        ]
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

    func insertAdminAccount(_ account: AdminAccount, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO admins (id, username, username_key, role, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [
                .text(account.id), .text(account.username), .text(account.usernameKey), .text(account.role.rawValue), .int(account.createdAt),
                account.createdBy.map(SQLValue.text) ?? .null,
            ], orRefuse: refusal)
    }

    func ensureRootAdminAccount(createdAt: Int64) {
        let root = AdminAccount.root(createdAt: createdAt)
        apply { db in
            try db.run(
                "INSERT INTO admins (id, username, username_key, role, created_at, created_by) VALUES (?, ?, ?, ?, ?, NULL) ON CONFLICT DO NOTHING",
                [.text(root.id), .text(root.username), .text(root.usernameKey), .text(root.role.rawValue), .int(root.createdAt)])
            return nil
        }
    }

    func deleteAdminAccount(id: String, ifMissing refusal: any Error & Sendable, ifLastOwner lastOwner: any Error & Sendable) {
        // One writer at a time: the owner count cannot change between this check and the delete.
        apply { db in
            guard let row = try db.row("SELECT role FROM admins WHERE id = ?", [.text(id)]) else { return refusal }
            if row.text(0) == AdminRole.owner.rawValue,
                try db.row("SELECT 1 FROM admins WHERE role = 'owner' AND id <> ? LIMIT 1", [.text(id)]) == nil
            {
                return lastOwner
            }
            try db.run("DELETE FROM admins WHERE id = ?", [.text(id)])
            try db.run("DELETE FROM admin_tokens WHERE account_id = ?", [.text(id)])
            return nil
        }
    }
}
