import Foundation
import LatchCore
import LatchJOSE
import LatchModel

extension SQLiteStore: UserStore, RegistrationStore, ChallengeStore {
    static let userColumns = "id, username, kind, issuer, subject, claims, created_at"

    static func decodeUser(_ row: SQLRow, offset: Int = 0) -> User {
        let claims: [String: JSONValue]
        let text = row.text(offset + 5)
        if text == "{}" {
            claims = [:]
        } else if case .object(let object)? = try? JSONValue.parse(Data(text.utf8)) {
            claims = object
        } else {
            claims = [:]
        }
        return User(
            id: row.text(offset), username: row.text(offset + 1), kind: UserKind(rawValue: row.text(offset + 2)) ?? .test,
            issuer: row.optionalText(offset + 3), subject: row.optionalText(offset + 4), claims: claims,
            createdAt: row.int(offset + 6))
    }

    static func encodeClaims(_ claims: [String: JSONValue]) -> SQLValue {
        .text(String(decoding: JSONValue.object(claims).serialized(), as: UTF8.self))
    }

    public func user(id: String) async throws -> User? {
        try await read { db in
            try db.row("SELECT \(Self.userColumns) FROM users WHERE id = ?", [.text(id)]).map { Self.decodeUser($0) }
        }
    }

    public func user(username: String) async throws -> User? {
        try await read { db in
            try db.row("SELECT \(Self.userColumns) FROM users WHERE username = ?", [.text(username)]).map {
                Self.decodeUser($0)
            }
        }
    }

    public func federatedUser(issuer: String, subject: String) async throws -> User? {
        try await read { db in
            try db.row(
                "SELECT \(Self.userColumns) FROM users WHERE issuer = ? AND subject = ?", [.text(issuer), .text(subject)]
            ).map { Self.decodeUser($0) }
        }
    }

    public func users(after cursor: String?, limit: Int) async throws -> [User] {
        try await read { db in
            try db.query(
                "SELECT \(Self.userColumns) FROM users WHERE id > ? ORDER BY id LIMIT ?",
                [.text(cursor ?? ""), .int(Int64(limit))]
            ).map { Self.decodeUser($0) }
        }
    }

    public func deviceKey(userID: String, keyID: String) async throws -> DeviceKey? {
        let row = try await read { db in
            try db.row(
                "SELECT algorithm, public_key, created_at FROM device_keys WHERE user_id = ? AND key_id = ?",
                [.text(userID), .text(keyID)])
        }
        guard let row, let algorithm = JWSAlgorithm(rawValue: row.text(0)),
            let key = try? PublicKey(der: row.blob(1), algorithm: algorithm)
        else { return nil }
        return DeviceKey(userID: userID, keyID: keyID, key: key, createdAt: row.int(2))
    }

    public func deleteUser(id: String) async throws -> Bool {
        // Device keys, registrations, nonces, sessions and their refresh tokens go with the user (ON DELETE CASCADE).
        try await write { db in try db.run("DELETE FROM users WHERE id = ?", [.text(id)]) > 0 }
    }

    public func registration(id: String) async throws -> (userID: String, proofHash: Data)? {
        try await read { db in
            try db.row("SELECT user_id, proof_hash FROM registrations WHERE id = ?", [.text(id)]).map {
                ($0.text(0), $0.blob(1))
            }
        }
    }

    public func register(_ registration: NewRegistration) async throws -> RegistrationOutcome {
        try await write { db in
            if let id = registration.registrationID,
                let existing = try db.row("SELECT user_id, proof_hash FROM registrations WHERE id = ?", [.text(id)])
            {
                return .registrationExists(userID: existing.text(0), proofHash: existing.blob(1))
            }
            let user = registration.user
            let taken = try db.row(
                "SELECT 1 FROM users WHERE username = ? OR (issuer IS NOT NULL AND issuer = ? AND subject = ?)",
                [.text(user.username), user.issuer.sql, user.subject.sql])
            if taken != nil { return .alreadyRegistered }
            guard try Self.consume(registration.consumes, on: db) else { return .replayed }
            try db.run(
                "INSERT INTO users (\(Self.userColumns)) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(user.id), .text(user.username), .text(user.kind.rawValue), user.issuer.sql, user.subject.sql,
                    Self.encodeClaims(user.claims), .int(user.createdAt),
                ])
            if let key = registration.deviceKey {
                try db.run(
                    "INSERT INTO device_keys (user_id, key_id, algorithm, public_key, created_at) VALUES (?, ?, ?, ?, ?)",
                    [
                        .text(user.id), .text(key.keyID), .text(key.key.algorithm.rawValue),
                        .blob(key.key.derRepresentation), .int(key.createdAt),
                    ])
            }
            if let id = registration.registrationID {
                try db.run(
                    "INSERT INTO registrations (id, user_id, proof_hash, created_at) VALUES (?, ?, ?, ?)",
                    [.text(id), .text(user.id), .blob(registration.proofHash), .int(user.createdAt)])
            }
            return .created(user)
        }
    }

    /// Consumes a single-use value in one statement; `false` when it was unknown, expired or used.
    static func consume(_ value: SingleUse, on db: SQLiteHandle) throws -> Bool {
        switch value {
        case .nonce(let nonce, let userID, let now):
            return try db.run(
                "DELETE FROM nonces WHERE nonce = ? AND user_id = ? AND expires_at > ?",
                [.text(nonce), .text(userID), .int(now)]) == 1
        case .jti(let jti, let issuer, let until):
            return try db.run(
                "INSERT INTO used_jtis (issuer, jti, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                [.text(issuer), .text(jti), .int(until)]) == 1
        }
    }

    public func insertNonce(_ nonce: String, userID: String, expiresAt: Int64, maxOutstanding: Int) async throws {
        try await write { db in
            try db.run(
                "INSERT INTO nonces (nonce, user_id, expires_at) VALUES (?, ?, ?)",
                [.text(nonce), .text(userID), .int(expiresAt)])
            // Keep the newest `maxOutstanding` of this user's nonces. The limit is written into the SQL (it is
            // an integer from configuration): a bound LIMIT makes SQLite re-prepare the statement on every bind.
            try db.run(
                """
                DELETE FROM nonces WHERE user_id = ?1 AND nonce NOT IN
                    (SELECT nonce FROM nonces WHERE user_id = ?1 ORDER BY expires_at DESC, nonce LIMIT \(maxOutstanding))
                """, [.text(userID)])
        }
    }
}
