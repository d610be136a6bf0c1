import Foundation
import LatchCore
import LatchJOSE
import LatchModel

extension SQLiteStore: UserStore {
    static let userColumns = "id, username, kind, issuer, subject, claims, created_at"

    static func decodeUser(_ row: SQLRow, offset: Int = 0) throws -> User {
        User(
            id: row.text(offset), username: row.text(offset + 1), kind: try StoredForm.userKind(row.text(offset + 2)),
            issuer: row.optionalText(offset + 3), subject: row.optionalText(offset + 4),
            claims: try StoredForm.claims(row.text(offset + 5)), createdAt: row.int(offset + 6))
    }

    static func decodeDeviceKey(_ row: SQLRow, userID: String, keyID: String, offset: Int) throws -> DeviceKey {
        DeviceKey(
            userID: userID, keyID: keyID,
            key: try StoredForm.publicKey(algorithm: row.text(offset), der: row.blob(offset + 1), column: "device_keys.public_key"),
            createdAt: row.int(offset + 2))
    }

    public func user(id: String) async throws -> User? {
        try await read { db in try db.row("SELECT \(Self.userColumns) FROM users WHERE id = ?", [.text(id)]).map { try Self.decodeUser($0) } }
    }

    public func user(username: String) async throws -> User? {
        try await read { db in
            try db.row("SELECT \(Self.userColumns) FROM users WHERE source = '' AND username = ?", [.text(username)]).map { try Self.decodeUser($0) }
        }
    }

    public func federatedUser(issuer: String, subject: String) async throws -> User? {
        try await read { db in
            try db.row("SELECT \(Self.userColumns) FROM users WHERE issuer = ? AND subject = ?", [.text(issuer), .text(subject)])
                .map { try Self.decodeUser($0) }
        }
    }

    public func users(after cursor: String?, limit: Int) async throws -> [User] {
        try await read { db in
            try db.query("SELECT \(Self.userColumns) FROM users WHERE id > ? ORDER BY id LIMIT ?", [.text(cursor ?? ""), .int(Int64(limit))])
                .map { try Self.decodeUser($0) }
        }
    }

    public func deviceKey(userID: String, keyID: String) async throws -> DeviceKey? {
        try await read { db in
            try db.row("SELECT algorithm, public_key, created_at FROM device_keys WHERE user_id = ? AND key_id = ?", [.text(userID), .text(keyID)])
                .map { try Self.decodeDeviceKey($0, userID: userID, keyID: keyID, offset: 0) }
        }
    }

    static let deviceSignInKey = """
        SELECT \(qualified(userColumns, "u")), k.algorithm, k.public_key, k.created_at
        FROM users u JOIN device_keys k ON k.user_id = u.id WHERE u.source = '' AND u.username = ? AND k.key_id = ?
        """

    public func deviceSignInKey(username: String, keyID: String) async throws -> (User, DeviceKey)? {
        try await read { db in
            try db.row(Self.deviceSignInKey, [.text(username), .text(keyID)]).map { row in
                let user = try Self.decodeUser(row)
                return (user, try Self.decodeDeviceKey(row, userID: user.id, keyID: keyID, offset: 7))
            }
        }
    }

    /// `a, b` → `s.a, s.b`.
    static func qualified(_ columns: String, _ alias: String) -> String {
        columns.split(separator: ",").map { "\(alias).\($0.trimmingCharacters(in: .whitespaces))" }.joined(separator: ", ")
    }
}

extension SQLiteTransaction: UserWrites {
    func insertUser(_ user: User, ifTaken refusal: any Error & Sendable) {
        // No conflict target: any unique key (id, source + username, issuer + subject) refuses.
        changeOne(
            "INSERT INTO users (\(SQLiteStore.userColumns), source) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [
                .text(user.id), .text(user.username), .text(user.kind.rawValue), user.issuer.sql, user.subject.sql,
                .text(StoredForm.claimsText(user.claims)), .int(user.createdAt), .text(user.source),
            ], orRefuse: refusal)
    }

    func insertDeviceKey(_ key: DeviceKey, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO device_keys (user_id, key_id, algorithm, public_key, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [.text(key.userID), .text(key.keyID), .text(key.key.algorithm.rawValue), .blob(key.key.derRepresentation), .int(key.createdAt)],
            orRefuse: refusal)
    }

    func requireUser(id: String, ifMissing refusal: any Error & Sendable) {
        // The writer holds the database's write lock: nobody deletes the user before this unit commits.
        check("SELECT 1 FROM users WHERE id = ?", [.text(id)], ifFound: false, refuse: refusal)
    }

    func updateClaims(userID: String, claims: [String: JSONValue]) {
        apply { db in
            try db.run("UPDATE users SET claims = ? WHERE id = ?", [.text(StoredForm.claimsText(claims)), .text(userID)])
            return nil
        }
    }

    func deleteUser(id: String, ifMissing refusal: any Error & Sendable) {
        // Device keys, registrations and sessions go with the user (ON DELETE CASCADE).
        changeOne("DELETE FROM users WHERE id = ?", [.text(id)], orRefuse: refusal)
    }
}

extension SQLiteTransaction: SingleUseWrites {
    func consume(_ value: SingleUse, ifUnavailable refusal: any Error & Sendable) {
        switch value {
        case .jti(let jti, let issuer, let until):
            changeOne(
                "INSERT INTO used_jtis (issuer, jti, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [.text(issuer), .text(jti), .int(until)],
                orRefuse: refusal)
        }
    }
}
