import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import PostgresNIO

extension PostgresStore: UserStore, RegistrationStore, ChallengeStore {
    typealias UserRow = (String, String, String, String?, String?, String, Int64)

    static func user(_ row: UserRow) -> User {
        let claims: [String: JSONValue]
        if row.5 == "{}" {
            claims = [:]
        } else if case .object(let object)? = try? JSONValue.parse(Data(row.5.utf8)) {
            claims = object
        } else {
            claims = [:]
        }
        return User(
            id: row.0, username: row.1, kind: UserKind(rawValue: row.2) ?? .test, issuer: row.3, subject: row.4, claims: claims,
            createdAt: row.6)
    }

    static func claimsText(_ claims: [String: JSONValue]) -> String {
        String(decoding: JSONValue.object(claims).serialized(), as: UTF8.self)
    }

    public func user(id: String) async throws -> User? {
        try await query("user") { client in
            try await client.query("SELECT id, username, kind, issuer, subject, claims, created_at FROM users WHERE id = \(id)")
                .first(UserRow.self).map(Self.user)
        }
    }

    public func user(username: String) async throws -> User? {
        try await query("user") { client in
            try await client.query("SELECT id, username, kind, issuer, subject, claims, created_at FROM users WHERE username = \(username)")
                .first(UserRow.self).map(Self.user)
        }
    }

    public func federatedUser(issuer: String, subject: String) async throws -> User? {
        try await query("federatedUser") { client in
            try await client.query(
                "SELECT id, username, kind, issuer, subject, claims, created_at FROM users WHERE issuer = \(issuer) AND subject = \(subject)"
            ).first(UserRow.self).map(Self.user)
        }
    }

    public func users(after cursor: String?, limit: Int) async throws -> [User] {
        let after = cursor ?? ""
        return try await query("users") { client in
            try await client.query(
                "SELECT id, username, kind, issuer, subject, claims, created_at FROM users WHERE id > \(after) ORDER BY id LIMIT \(limit)"
            ).all(UserRow.self).map(Self.user)
        }
    }

    public func deviceKey(userID: String, keyID: String) async throws -> DeviceKey? {
        let row = try await query("deviceKey") { client in
            try await client.query(
                "SELECT algorithm, public_key, created_at FROM device_keys WHERE user_id = \(userID) AND key_id = \(keyID)"
            ).first((String, Data, Int64).self)
        }
        guard let row, let algorithm = JWSAlgorithm(rawValue: row.0), let key = try? PublicKey(der: row.1, algorithm: algorithm) else {
            return nil
        }
        return DeviceKey(userID: userID, keyID: keyID, key: key, createdAt: row.2)
    }

    public func deleteUser(id: String) async throws -> Bool {
        try await query("deleteUser") { client in
            try await client.query("DELETE FROM users WHERE id = \(id) RETURNING id").first(String.self) != nil
        }
    }

    public func registration(id: String) async throws -> (userID: String, proofHash: Data)? {
        try await query("registration") { client in
            try await client.query("SELECT user_id, proof_hash FROM registrations WHERE id = \(id)").first((String, Data).self)
                .map { (userID: $0.0, proofHash: $0.1) }
        }
    }

    public func register(_ registration: NewRegistration) async throws -> RegistrationOutcome {
        try await transaction(
            "register",
            // A concurrent registration won a unique key (registration id, username or identity): read what it wrote.
            onUnique: { [self] in
                if let id = registration.registrationID, let existing = try await self.registration(id: id) {
                    return .registrationExists(userID: existing.userID, proofHash: existing.proofHash)
                }
                return .alreadyRegistered
            }
        ) { connection in
            if let id = registration.registrationID,
                let existing = try await connection.run("SELECT user_id, proof_hash FROM registrations WHERE id = \(id)")
                    .first((String, Data).self)
            {
                return .registrationExists(userID: existing.0, proofHash: existing.1)
            }
            let user = registration.user
            let taken = try await connection.run(
                "SELECT 1 FROM users WHERE username = \(user.username) OR (issuer IS NOT NULL AND issuer = \(user.issuer) AND subject = \(user.subject))"
            ).first(Int.self)
            if taken != nil { return .alreadyRegistered }
            guard try await Self.consume(registration.consumes, on: connection) else { return .replayed }
            try await connection.run(
                """
                INSERT INTO users (id, username, kind, issuer, subject, claims, created_at)
                VALUES (\(user.id), \(user.username), \(user.kind.rawValue), \(user.issuer), \(user.subject), \(Self.claimsText(user.claims)), \(user.createdAt))
                """)
            if let key = registration.deviceKey {
                try await connection.run(
                    """
                    INSERT INTO device_keys (user_id, key_id, algorithm, public_key, created_at)
                    VALUES (\(user.id), \(key.keyID), \(key.key.algorithm.rawValue), \(key.key.derRepresentation), \(key.createdAt))
                    """)
            }
            if let id = registration.registrationID {
                try await connection.run(
                    "INSERT INTO registrations (id, user_id, proof_hash, created_at) VALUES (\(id), \(user.id), \(registration.proofHash), \(user.createdAt))")
            }
            return .created(user)
        }
    }

    /// Consumes a single-use value in one statement; `false` when it was unknown, expired or used.
    static func consume(_ value: SingleUse, on connection: PostgresConnection) async throws -> Bool {
        switch value {
        case .nonce(let nonce, let userID, let now):
            return try await connection.run(
                "DELETE FROM nonces WHERE nonce = \(nonce) AND user_id = \(userID) AND expires_at > \(now) RETURNING nonce"
            ).first(String.self) != nil
        case .jti(let jti, let issuer, let until):
            return try await connection.run(
                "INSERT INTO used_jtis (issuer, jti, expires_at) VALUES (\(issuer), \(jti), \(until)) ON CONFLICT DO NOTHING RETURNING jti"
            ).first(String.self) != nil
        }
    }

    public func insertNonce(_ nonce: String, userID: String, expiresAt: Int64, maxOutstanding: Int) async throws {
        try await transaction("insertNonce") { connection in
            try await connection.run("INSERT INTO nonces (nonce, user_id, expires_at) VALUES (\(nonce), \(userID), \(expiresAt))")
            try await connection.run(
                """
                DELETE FROM nonces WHERE user_id = \(userID) AND nonce NOT IN
                    (SELECT nonce FROM nonces WHERE user_id = \(userID) ORDER BY expires_at DESC, nonce LIMIT \(maxOutstanding))
                """)
        }
    }
}
