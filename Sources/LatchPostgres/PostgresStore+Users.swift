import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import PostgresNIO

extension PostgresStore: SingleUseStore {
    public func isUsed(_ value: SingleUse) async throws -> Bool {
        switch value {
        case .jti(let jti, let issuer, _):
            try await query("isUsed") { client in
                try await !client.query("SELECT 1 FROM used_jtis WHERE issuer = \(issuer) AND jti = \(jti)").all(Int.self).isEmpty
            }
        }
    }
}

extension PostgresStore: UserStore {
    typealias UserRow = (String, String, String, String?, String?, String, Int64)

    static let userColumns = "id, username, kind, issuer, subject, claims, created_at"

    static func user(_ row: UserRow) throws -> User {
        User(
            id: row.0, username: row.1, kind: try StoredForm.userKind(row.2), issuer: row.3, subject: row.4,
            claims: try StoredForm.claims(row.5), createdAt: row.6)
    }

    /// The columns ``deviceKey(userID:keyID:_:)`` reads.
    static let deviceKeyColumns = "algorithm, public_key, created_at, attestation, sign_count, receipt"
    typealias DeviceKeyRow = (String, Data, Int64, String?, Int64, Data?)

    static func deviceKey(userID: String, keyID: String, _ row: DeviceKeyRow) throws -> DeviceKey {
        DeviceKey(
            userID: userID, keyID: keyID, key: try StoredForm.publicKey(algorithm: row.0, der: row.1, column: "device_keys.public_key"),
            createdAt: row.2,
            attestation: try row.3.map { DeviceKeyAttestation(type: $0, signCount: try StoredForm.signCount(row.4), receipt: row.5) })
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

    public func deviceKeys(userID: String) async throws -> [DeviceKey] {
        // A user has a few keys: their ids, then each (the row type carries no key id).
        let ids = try await query("deviceKeyIDs") { client in
            try await client.query("SELECT key_id FROM device_keys WHERE user_id = \(userID) ORDER BY created_at, key_id").all(String.self)
        }
        var keys: [DeviceKey] = []
        for id in ids { if let key = try await deviceKey(userID: userID, keyID: id) { keys.append(key) } }
        return keys
    }

    public func activeSessions(userID: String, now: Int64, limit: Int) async throws -> [Session] {
        try await query("activeSessions") { client in
            try await client.query(
                """
                SELECT \(unescaped: Self.sessionColumns) FROM sessions WHERE user_id = \(userID) AND revoked_at IS NULL AND expires_at > \(now)
                ORDER BY created_at DESC, id LIMIT \(limit)
                """
            ).all(SessionRow.self).map(Self.session)
        }
    }

    public func deviceKey(userID: String, keyID: String) async throws -> DeviceKey? {
        try await query("deviceKey") { client in
            try await client.query(
                "SELECT \(unescaped: Self.deviceKeyColumns) FROM device_keys WHERE user_id = \(userID) AND key_id = \(keyID)"
            ).first(DeviceKeyRow.self).map { try Self.deviceKey(userID: userID, keyID: keyID, $0) }
        }
    }

    public func deviceSignInKey(username: String, keyID: String) async throws -> (User, DeviceKey)? {
        try await query("deviceSignInKey") { client in
            try await client.query(
                """
                SELECT u.id, u.username, u.kind, u.issuer, u.subject, u.claims, u.created_at,
                    k.algorithm, k.public_key, k.created_at, k.attestation, k.sign_count, k.receipt
                FROM users u JOIN device_keys k ON k.user_id = u.id WHERE u.source = '' AND u.username = \(username) AND k.key_id = \(keyID)
                """
            ).first(UserKeyRow.self).map { try Self.userAndKey($0, keyID: keyID) }
        }
    }

    typealias UserKeyRow = (String, String, String, String?, String?, String, Int64, String, Data, Int64, String?, Int64, Data?)

    static func userAndKey(_ row: UserKeyRow, keyID: String) throws -> (User, DeviceKey) {
        let user = try Self.user((row.0, row.1, row.2, row.3, row.4, row.5, row.6))
        return (user, try Self.deviceKey(userID: user.id, keyID: keyID, (row.7, row.8, row.9, row.10, row.11, row.12)))
    }

    public func attestedDeviceKey(keyID: String, type: String) async throws -> (User, DeviceKey)? {
        try await query("attestedDeviceKey") { client in
            let rows = try await client.query(
                """
                SELECT u.id, u.username, u.kind, u.issuer, u.subject, u.claims, u.created_at,
                    k.algorithm, k.public_key, k.created_at, k.attestation, k.sign_count, k.receipt
                FROM users u JOIN device_keys k ON k.user_id = u.id WHERE k.key_id = \(keyID) AND k.attestation = \(type) LIMIT 2
                """
            ).all(UserKeyRow.self)
            guard rows.count == 1 else { return nil }
            return try Self.userAndKey(rows[0], keyID: keyID)
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
            INSERT INTO device_keys (user_id, key_id, algorithm, public_key, created_at, attestation, sign_count, receipt)
            VALUES (\(key.userID), \(key.keyID), \(key.key.algorithm.rawValue), \(key.key.derRepresentation), \(key.createdAt),
                \(key.attestation?.type), \(Int64(key.attestation?.signCount ?? 0)), \(key.attestation?.receipt))
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func advanceSignCount(userID: String, keyID: String, to signCount: UInt32, ifNotGreater refusal: any Error & Sendable) {
        // One statement: a concurrent assertion with the same counter waits on the row lock, then finds it not smaller.
        changeOne(
            """
            UPDATE device_keys SET sign_count = \(Int64(signCount))
            WHERE user_id = \(userID) AND key_id = \(keyID) AND attestation IS NOT NULL AND sign_count < \(Int64(signCount)) RETURNING 1
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
