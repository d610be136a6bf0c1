import Foundation
import LatchCore
import LatchModel

extension SQLiteStore: SessionStore {
    static let sessionColumns = "id, user_id, client_id, auth_time, amr, scope, created_at, expires_at, revoked_at"

    /// The refresh query: token state, its session and its user, in one lookup.
    static let refreshLookup = """
        SELECT t.rotated_at, t.successor, \(qualified(sessionColumns, "s")), \(qualified(userColumns, "u"))
        FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id JOIN users u ON u.id = s.user_id
        WHERE t.hash = ?
        """

    static let sessionByRefreshToken = """
        SELECT \(qualified(sessionColumns, "s"))
        FROM refresh_tokens t JOIN sessions s ON s.id = t.session_id WHERE t.hash = ?
        """

    /// `a, b` → `s.a, s.b`.
    static func qualified(_ columns: String, _ alias: String) -> String {
        columns.split(separator: ",").map { "\(alias).\($0.trimmingCharacters(in: .whitespaces))" }
            .joined(separator: ", ")
    }

    static func decodeSession(_ row: SQLRow, offset: Int = 0) -> Session {
        Session(
            id: row.text(offset), userID: row.text(offset + 1), clientID: row.text(offset + 2),
            authTime: row.int(offset + 3), amr: row.text(offset + 4).split(separator: " ").map(String.init),
            scope: row.text(offset + 5), createdAt: row.int(offset + 6), expiresAt: row.int(offset + 7),
            revokedAt: row.optionalInt(offset + 8))
    }

    public func startSession(_ signIn: NewSignIn) async throws -> SignInOutcome {
        try await write { db in
            let session = signIn.session
            guard try db.row("SELECT 1 FROM users WHERE id = ?", [.text(session.userID)]) != nil else { return .userGone }
            guard try Self.consume(signIn.consumes, on: db) else { return .replayed }
            if let claims = signIn.updatedClaims {
                try db.run("UPDATE users SET claims = ? WHERE id = ?", [Self.encodeClaims(claims), .text(session.userID)])
            }
            try db.run(
                "INSERT INTO sessions (\(Self.sessionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                [
                    .text(session.id), .text(session.userID), .text(session.clientID), .int(session.authTime),
                    .text(session.amr.joined(separator: " ")), .text(session.scope), .int(session.createdAt),
                    .int(session.expiresAt),
                ])
            try db.run(
                "INSERT INTO refresh_tokens (hash, session_id, issued_at) VALUES (?, ?, ?)",
                [.blob(signIn.refreshToken.hash), .text(session.id), .int(signIn.refreshToken.issuedAt)])
            return .started
        }
    }

    /// Rotation per RFC 9700 §4.14.2, in one transaction of the writer:
    ///
    /// - Step 1. Find the presented token and its family (session + user); unknown → `unknown`.
    /// - Step 2. A revoked or expired family → `inactive`; another client's token → `wrongClient`.
    /// - Step 3. A live token: mark it rotated, link and insert the successor → `rotated`.
    /// - Step 4. A rotated token within the grace window whose successor is still unused: invalidate that
    ///   successor (it can never be used, and presenting it later counts as reuse), link and insert a new one
    ///   → `reissued`. At most one live successor exists at any time.
    /// - Step 5. Otherwise it is reuse: revoke the family. The job returns normally, so the revocation commits
    ///   even though the request fails.
    public func refresh(_ request: RefreshRequest) async throws -> RefreshOutcome {
        try await write { db in
            // Step 1.
            guard let row = try db.row(Self.refreshLookup, [.blob(request.presentedHash)]) else { return .unknown }
            let rotatedAt = row.optionalInt(0)
            let successor = row.optionalBlob(1)
            let session = Self.decodeSession(row, offset: 2)
            let user = Self.decodeUser(row, offset: 11)
            // Step 2.
            guard session.isActive(at: request.now) else { return .inactive }
            guard session.clientID == request.clientID else { return .wrongClient }
            let insertSuccessor = {
                try db.run(
                    "INSERT INTO refresh_tokens (hash, session_id, issued_at) VALUES (?, ?, ?)",
                    [.blob(request.successor.hash), .text(session.id), .int(request.successor.issuedAt)])
            }
            // Step 3.
            guard let rotatedAt else {
                try db.run(
                    "UPDATE refresh_tokens SET rotated_at = ?, successor = ? WHERE hash = ?",
                    [.int(request.now), .blob(request.successor.hash), .blob(request.presentedHash)])
                _ = try insertSuccessor()
                return .rotated(session, user)
            }
            // Step 4.
            if request.now - rotatedAt <= request.graceSeconds, let successor,
                try db.run(
                    "UPDATE refresh_tokens SET rotated_at = ? WHERE hash = ? AND rotated_at IS NULL",
                    [.int(request.now), .blob(successor)]) == 1
            {
                try db.run(
                    "UPDATE refresh_tokens SET successor = ? WHERE hash = ?",
                    [.blob(request.successor.hash), .blob(request.presentedHash)])
                _ = try insertSuccessor()
                return .reissued(session, user)
            }
            // Step 5.
            try db.run(
                "UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                [.int(request.now), .text(session.id)])
            return .reuseDetected(session)
        }
    }

    public func session(id: String) async throws -> Session? {
        try await read { db in
            try db.row("SELECT \(Self.sessionColumns) FROM sessions WHERE id = ?", [.text(id)]).map {
                Self.decodeSession($0)
            }
        }
    }

    public func session(refreshTokenHash: Data) async throws -> Session? {
        try await read { db in
            try db.row(Self.sessionByRefreshToken, [.blob(refreshTokenHash)]).map { Self.decodeSession($0) }
        }
    }

    public func revokeSession(id: String, at now: Int64) async throws -> Bool {
        try await write { db in
            try db.run("UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", [.int(now), .text(id)]) > 0
        }
    }

    public func revokeSessions(userID: String, at now: Int64) async throws -> Int {
        try await write { db in
            try db.run(
                "UPDATE sessions SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ?",
                [.int(now), .text(userID), .int(now)])
        }
    }
}
