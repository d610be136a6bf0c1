import Foundation
import LatchCore
import LatchModel
import PostgresNIO

extension PostgresStore: AdminTokenStore {
    public func adminTokens() async throws -> [AdminTokenRecord] {
        try await query("adminTokens") { client in
            try await client.query("SELECT id, name, hash, created_at, account_id, role, expires_at FROM admin_tokens ORDER BY created_at, id")
                .all((String, String, Data, Int64, String, String, Int64?).self).map {
                    AdminTokenRecord(
                        id: $0.0, name: $0.1, hash: $0.2, createdAt: $0.3, accountID: $0.4,
                        role: try StoredForm.adminRole($0.5, column: "admin_tokens.role"), expiresAt: $0.6)
                }
        }
    }

    public func isRevokedAdminToken(hash: Data) async throws -> Bool {
        try await query("isRevokedAdminToken") { client in
            try await !client.query("SELECT 1 FROM revoked_admin_tokens WHERE hash = \(hash)").all(Int.self).isEmpty
        }
    }

    public func adminAccounts() async throws -> [AdminAccount] {
        try await query("adminAccounts") { client in
            try await client.query("SELECT id, username, role, created_at, created_by FROM admins ORDER BY created_at, id")
                .all((String, String, String, Int64, String?).self).map {
                    AdminAccount(
                        id: $0.0, username: $0.1, role: try StoredForm.adminRole($0.2, column: "admins.role"), createdAt: $0.3, createdBy: $0.4)
                }
        }
    }
}

extension PostgresStore {
    public func adminPasskeys(accountID: String) async throws -> [AdminPasskey] {
        try await query("adminPasskeys") { client in
            try await client.query(
                """
                SELECT id, account_id, credential_id, public_key, sign_count, aaguid, name, created_at, last_used_at
                FROM admin_passkeys WHERE account_id = \(accountID) ORDER BY created_at, id
                """
            ).all(AdminPasskeyRow.self).map(Self.adminPasskey)
        }
    }

    public func adminPasskey(credentialID: Data) async throws -> AdminPasskey? {
        try await query("adminPasskey") { client in
            try await client.query(
                """
                SELECT id, account_id, credential_id, public_key, sign_count, aaguid, name, created_at, last_used_at
                FROM admin_passkeys WHERE credential_id = \(credentialID)
                """
            ).all(AdminPasskeyRow.self).first.map(Self.adminPasskey)
        }
    }

    typealias AdminPasskeyRow = (String, String, Data, Data, Int64, Data, String, Int64, Int64?)

    static func adminPasskey(_ row: AdminPasskeyRow) -> AdminPasskey {
        AdminPasskey(
            id: row.0, accountID: row.1, credentialID: row.2, publicKeyCOSE: row.3, signCount: UInt32(clamping: row.4), aaguid: row.5, name: row.6,
            createdAt: row.7, lastUsedAt: row.8)
    }
}

extension PostgresTransaction: AdminTokenWrites {
    func insertAdminPasskey(_ passkey: AdminPasskey, ifRefused refusal: any Error & Sendable) {
        // The account row is key-share locked, like a token's: a concurrent deletion of the account waits.
        changeOne(
            try """
            INSERT INTO admin_passkeys (id, account_id, credential_id, public_key, sign_count, aaguid, name, created_at)
            SELECT \(passkey.id), \(passkey.accountID), \(passkey.credentialID), \(passkey.publicKeyCOSE), \(Int64(passkey.signCount)),
                \(passkey.aaguid), \(passkey.name), \(passkey.createdAt)
            WHERE EXISTS (SELECT 1 FROM admins WHERE id = \(passkey.accountID) FOR KEY SHARE)
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func useAdminPasskey(id: String, signCount: UInt32, newSignCount: UInt32, at: Int64, ifRaced refusal: any Error & Sendable) {
        changeOne(
            """
            UPDATE admin_passkeys SET sign_count = \(Int64(newSignCount)), last_used_at = \(at)
            WHERE id = \(id) AND sign_count = \(Int64(signCount)) RETURNING 1
            """, orRefuse: refusal)
    }

    func deleteAdminPasskey(id: String, accountID: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM admin_passkeys WHERE id = \(id) AND account_id = \(accountID) RETURNING 1", orRefuse: refusal)
    }

    func putAdminToken(_ token: AdminTokenRecord) {
        // Not `ON CONFLICT (id) DO UPDATE`: replicas starting together put the same token at once, and a
        // concurrent insert then conflicts on the hash's unique index, which an `ON CONFLICT (id)` does not cover.
        // Insert unless any key is taken, then replace a different token stored under the id.
        execute(
            try """
            INSERT INTO admin_tokens (id, name, hash, created_at, account_id, role, expires_at)
            VALUES (\(token.id), \(token.name), \(token.hash), \(token.createdAt), \(token.accountID), \(token.role.rawValue), \(token.expiresAt))
            ON CONFLICT DO NOTHING
            """,
            try """
            UPDATE admin_tokens SET name = \(token.name), hash = \(token.hash), created_at = \(token.createdAt), account_id = \(token.accountID),
                role = \(token.role.rawValue), expires_at = \(token.expiresAt)
            WHERE id = \(token.id) AND (hash <> \(token.hash) OR name <> \(token.name) OR account_id <> \(token.accountID)
                OR role <> \(token.role.rawValue) OR expires_at IS DISTINCT FROM \(token.expiresAt))
            """)
    }

    func putAdminTokenOfAccount(_ token: AdminTokenRecord, ifAccountMissing refusal: any Error & Sendable) {
        // The account row is key-share locked: a concurrent deletion of the account waits for this insert, then
        // deletes the new token with the account's others.
        changeOne(
            try """
            INSERT INTO admin_tokens (id, name, hash, created_at, account_id, role, expires_at)
            SELECT \(token.id), \(token.name), \(token.hash), \(token.createdAt), \(token.accountID), \(token.role.rawValue), \(token.expiresAt)
            WHERE EXISTS (SELECT 1 FROM admins WHERE id = \(token.accountID) FOR KEY SHARE)
            RETURNING 1
            """, orRefuse: refusal)
    }

    func deleteAdminToken(id: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM admin_tokens WHERE id = \(id) RETURNING 1", orRefuse: refusal)
    }

    func rememberRevokedAdminToken(hash: Data, id: String, at: Int64) {
        execute(try "INSERT INTO revoked_admin_tokens (hash, id, revoked_at) VALUES (\(hash), \(id), \(at)) ON CONFLICT DO NOTHING")
    }

    func insertAdminAccount(_ account: AdminAccount, ifTaken refusal: any Error & Sendable) {
        changeOne(
            """
            INSERT INTO admins (id, username, username_key, role, created_at, created_by)
            VALUES (\(account.id), \(account.username), \(account.usernameKey), \(account.role.rawValue), \(account.createdAt), \(account.createdBy))
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func ensureRootAdminAccount(createdAt: Int64) {
        let root = AdminAccount.root(createdAt: createdAt)
        execute(
            """
            INSERT INTO admins (id, username, username_key, role, created_at, created_by)
            VALUES (\(root.id), \(root.username), \(root.usernameKey), \(root.role.rawValue), \(root.createdAt), NULL)
            ON CONFLICT DO NOTHING
            """)
    }

    func deleteAdminAccount(id: String, ifMissing refusal: any Error & Sendable, ifLastOwner lastOwner: any Error & Sendable) {
        add(statements: 5) { connection in
            // The owners are locked first: of two replicas deleting the last two owners at once, the second waits,
            // then (reading afresh) finds one owner left and is refused.
            try await connection.run("SELECT id FROM admins WHERE role = 'owner' ORDER BY id FOR UPDATE")
            guard let role = try await connection.run("SELECT role FROM admins WHERE id = \(id)").first(String.self) else { return refusal }
            if role == "owner", try await connection.run("SELECT 1 FROM admins WHERE role = 'owner' AND id <> \(id) LIMIT 1").first(Int.self) == nil {
                return lastOwner
            }
            // The account first: it waits for a token being added to it, whose insert then shows to the next statement.
            try await connection.run("DELETE FROM admins WHERE id = \(id)")
            try await connection.run("DELETE FROM admin_tokens WHERE account_id = \(id)")
            return nil
        }
    }
}
