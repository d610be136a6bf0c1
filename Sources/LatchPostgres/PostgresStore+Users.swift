import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import PostgresNIO

extension PostgresStore: UserStore {
    typealias UserRow = (String, String, String, String?, String?, String, Int64)

    static let userColumns = "id, username, kind, issuer, subject, claims, created_at"

    static func user(_ row: UserRow) throws -> User {
        User(
            id: row.0, username: row.1, kind: try StoredForm.userKind(row.2), issuer: row.3, subject: row.4,
            claims: try StoredForm.claims(row.5), createdAt: row.6)
    }

    static func deviceKey(userID: String, keyID: String, algorithm: String, der: Data, createdAt: Int64) throws -> DeviceKey {
        DeviceKey(
            userID: userID, keyID: keyID, key: try StoredForm.publicKey(algorithm: algorithm, der: der, column: "device_keys.public_key"),
            createdAt: createdAt)
    }

    public func user(id: String) async throws -> User? {
        try await query("user") { client in
            try await client.query("SELECT \(unescaped: Self.userColumns) FROM users WHERE id = \(id)").first(UserRow.self).map(Self.user)
        }
    }

    public func user(username: String) async throws -> User? {
        try await query("user") { client in
            try await client.query("SELECT \(unescaped: Self.userColumns) FROM users WHERE source = '' AND username = \(username)").first(UserRow.self).map(Self.user)
        }
    }

    public func federatedUser(issuer: String, subject: String) async throws -> User? {
        try await query("federatedUser") { client in
            try await client.query("SELECT \(unescaped: Self.userColumns) FROM users WHERE issuer = \(issuer) AND subject = \(subject)")
                .first(UserRow.self).map(Self.user)
        }
    }

    public func users(after cursor: String?, limit: Int) async throws -> [User] {
        let after = cursor ?? ""
        return try await query("users") { client in
            try await client.query("SELECT \(unescaped: Self.userColumns) FROM users WHERE id > \(after) ORDER BY id LIMIT \(limit)")
                .all(UserRow.self).map(Self.user)
        }
    }

    public func deviceKey(userID: String, keyID: String) async throws -> DeviceKey? {
        try await query("deviceKey") { client in
            try await client.query("SELECT algorithm, public_key, created_at FROM device_keys WHERE user_id = \(userID) AND key_id = \(keyID)")
                .first((String, Data, Int64).self)
                .map { try Self.deviceKey(userID: userID, keyID: keyID, algorithm: $0.0, der: $0.1, createdAt: $0.2) }
        }
    }

    public func deviceSignInKey(username: String, keyID: String) async throws -> (User, DeviceKey)? {
        try await query("deviceSignInKey") { client in
            try await client.query(
                """
                SELECT u.id, u.username, u.kind, u.issuer, u.subject, u.claims, u.created_at, k.algorithm, k.public_key, k.created_at
                FROM users u JOIN device_keys k ON k.user_id = u.id WHERE u.source = '' AND u.username = \(username) AND k.key_id = \(keyID)
                """
            ).first((String, String, String, String?, String?, String, Int64, String, Data, Int64).self).map { row in
                let user = try Self.user((row.0, row.1, row.2, row.3, row.4, row.5, row.6))
                return (user, try Self.deviceKey(userID: user.id, keyID: keyID, algorithm: row.7, der: row.8, createdAt: row.9))
            }
        }
    }
}

extension PostgresTransaction: UserWrites {
    func insertUser(_ user: User, ifTaken refusal: any Error & Sendable) {
        // No conflict target: any unique key (id, source + username, issuer + subject) refuses. A concurrent insert of the
        // same key waits for the other transaction, then refuses if it committed.
        let claims = StoredForm.claimsText(user.claims)
        changeOne(
            """
            INSERT INTO users (id, username, kind, issuer, subject, claims, created_at, source)
            VALUES (\(user.id), \(user.username), \(user.kind.rawValue), \(user.issuer), \(user.subject), \(claims), \(user.createdAt), \(user.source))
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func insertDeviceKey(_ key: DeviceKey, ifTaken refusal: any Error & Sendable) {
        changeOne(
            try """
            INSERT INTO device_keys (user_id, key_id, algorithm, public_key, created_at)
            VALUES (\(key.userID), \(key.keyID), \(key.key.algorithm.rawValue), \(key.key.derRepresentation), \(key.createdAt))
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func requireUser(id: String, ifMissing refusal: any Error & Sendable) {
        // FOR KEY SHARE blocks the user's deletion until commit, not another sign-in or a claims update.
        check("SELECT 1 FROM users WHERE id = \(id) FOR KEY SHARE", ifFound: false, refuse: refusal)
    }

    func updateClaims(userID: String, claims: [String: JSONValue]) {
        execute("UPDATE users SET claims = \(StoredForm.claimsText(claims)) WHERE id = \(userID)")
    }

    func deleteUser(id: String, ifMissing refusal: any Error & Sendable) {
        // Device keys, registrations and sessions go with the user (ON DELETE CASCADE).
        changeOne("DELETE FROM users WHERE id = \(id) RETURNING 1", orRefuse: refusal)
    }
}

extension PostgresTransaction: SingleUseWrites {
    /// One statement: a concurrent consumer of the same value waits on its row lock, then finds it present.
    func consume(_ value: SingleUse, ifUnavailable refusal: any Error & Sendable) {
        switch value {
        case .jti(let jti, let issuer, let until):
            changeOne(
                "INSERT INTO used_jtis (issuer, jti, expires_at) VALUES (\(issuer), \(jti), \(until)) ON CONFLICT DO NOTHING RETURNING 1",
                orRefuse: refusal)
        }
    }
}
