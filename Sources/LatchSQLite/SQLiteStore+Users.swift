import Foundation
import LatchCore
import LatchJOSE
import LatchModel

extension SQLiteStore: SingleUseStore {
    public func isUsed(_ value: SingleUse) async throws -> Bool {
        switch value {
        case .jti(let jti, let issuer, _):
            try await read { db in !(try db.query("SELECT 1 FROM used_jtis WHERE issuer = ? AND jti = ?", [.text(issuer), .text(jti)]).isEmpty) }
        }
    }
}

extension SQLiteStore: UserStore {
    static let userColumns = "id, username, kind, issuer, subject, claims, created_at"

    static func decodeUser(_ row: SQLRow, offset: Int = 0) throws -> User {
        User(
            id: row.text(offset), username: row.text(offset + 1), kind: try StoredForm.userKind(row.text(offset + 2)),
            issuer: row.optionalText(offset + 3), subject: row.optionalText(offset + 4),
            claims: try StoredForm.claims(row.text(offset + 5)), createdAt: row.int(offset + 6))
    }

    /// The columns ``decodeDeviceKey(_:userID:keyID:offset:)`` reads.
    static let deviceKeyColumns = "algorithm, public_key, created_at, attestation, sign_count, receipt"

    static func decodeDeviceKey(_ row: SQLRow, userID: String, keyID: String, offset: Int) throws -> DeviceKey {
        DeviceKey(
            userID: userID, keyID: keyID,
            key: try StoredForm.publicKey(algorithm: row.text(offset), der: row.blob(offset + 1), column: "device_keys.public_key"),
            createdAt: row.int(offset + 2),
            attestation: try row.optionalText(offset + 3).map { type in
                DeviceKeyAttestation(
                    type: type, signCount: try StoredForm.signCount(row.int(offset + 4)),
                    receipt: row.values[offset + 5] == .null ? nil : row.blob(offset + 5))
            })
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

    public func deviceKeys(userID: String) async throws -> [DeviceKey] {
        try await read { db in
            try db.query("SELECT key_id, \(Self.deviceKeyColumns) FROM device_keys WHERE user_id = ? ORDER BY created_at, key_id", [.text(userID)])
                .map { try Self.decodeDeviceKey($0, userID: userID, keyID: $0.text(0), offset: 1) }
        }
    }

    public func activeSessions(userID: String, now: Int64, limit: Int) async throws -> [Session] {
        try await read { db in
            try db.query(
                "SELECT \(Self.sessionColumns) FROM sessions WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY created_at DESC, id LIMIT ?",
                [.text(userID), .int(now), .int(Int64(limit))]
            ).map { Self.decodeSession($0) }
        }
    }

    public func deviceKey(userID: String, keyID: String) async throws -> DeviceKey? {
        try await read { db in
            try db.row("SELECT \(Self.deviceKeyColumns) FROM device_keys WHERE user_id = ? AND key_id = ?", [.text(userID), .text(keyID)])
                .map { try Self.decodeDeviceKey($0, userID: userID, keyID: keyID, offset: 0) }
        }
    }

    static let deviceSignInKey = """
        SELECT \(qualified(userColumns, "u")), \(qualified(deviceKeyColumns, "k"))
        FROM users u JOIN device_keys k ON k.user_id = u.id WHERE u.source = '' AND u.username = ? AND k.key_id = ?
        """

    static let attestedDeviceKey = """
        SELECT \(qualified(userColumns, "u")), \(qualified(deviceKeyColumns, "k"))
        FROM users u JOIN device_keys k ON k.user_id = u.id WHERE k.key_id = ? AND k.attestation = ? LIMIT 2
        """

    public func deviceSignInKey(username: String, keyID: String) async throws -> (User, DeviceKey)? {
        try await read { db in
            try db.row(Self.deviceSignInKey, [.text(username), .text(keyID)]).map { row in
                let user = try Self.decodeUser(row)
                return (user, try Self.decodeDeviceKey(row, userID: user.id, keyID: keyID, offset: 7))
            }
        }
    }

    public func attestedDeviceKey(keyID: String, type: String) async throws -> (User, DeviceKey)? {
        try await read { db in
            let rows = try db.query(Self.attestedDeviceKey, [.text(keyID), .text(type)])
            guard rows.count == 1 else { return nil }
            let user = try Self.decodeUser(rows[0])
            return (user, try Self.decodeDeviceKey(rows[0], userID: user.id, keyID: keyID, offset: 7))
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
            """
            INSERT INTO device_keys (user_id, key_id, algorithm, public_key, created_at, attestation, sign_count, receipt)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
            """,
            [
                .text(key.userID), .text(key.keyID), .text(key.key.algorithm.rawValue), .blob(key.key.derRepresentation), .int(key.createdAt),
                (key.attestation?.type).sql, .int(Int64(key.attestation?.signCount ?? 0)), key.attestation?.receipt.map(SQLValue.blob) ?? .null,
            ],
            orRefuse: refusal)
    }

    func advanceSignCount(userID: String, keyID: String, to signCount: UInt32, ifNotGreater refusal: any Error & Sendable) {
        changeOne(
            "UPDATE device_keys SET sign_count = ? WHERE user_id = ? AND key_id = ? AND attestation IS NOT NULL AND sign_count < ?",
            [.int(Int64(signCount)), .text(userID), .text(keyID), .int(Int64(signCount))], orRefuse: refusal)
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
