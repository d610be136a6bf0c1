import Foundation
import LatchCore
import LatchModel

extension SQLiteStore: SessionStore {
    static let sessionColumns =
        "id, user_id, client_id, auth_time, amr, scope, created_at, expires_at, revoked_at, generation, retry_generation, rotated_at"

    /// A session and its user, in one lookup.
    static let sessionAndUser = """
        SELECT \(qualified(sessionColumns, "s")), \(qualified(userColumns, "u"))
        FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?
        """

    /// Revocation keeps the row a day (for audit), then housekeeping deletes it.
    static let revoke = "UPDATE sessions SET revoked_at = ?1, purge_at = min(purge_at, ?1 + 86400) WHERE id = ?2 AND revoked_at IS NULL"

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
            revokedAt: row.optionalInt(offset + 8), generation: row.int(offset + 9), retryGeneration: row.optionalInt(offset + 10),
            rotatedAt: row.optionalInt(offset + 11))
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
                """
                INSERT INTO sessions (id, user_id, client_id, auth_time, amr, scope, created_at, expires_at, generation, purge_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(session.id), .text(session.userID), .text(session.clientID), .int(session.authTime),
                    .text(session.amr.joined(separator: " ")), .text(session.scope), .int(session.createdAt),
                    .int(session.expiresAt), .int(session.generation), .int(session.expiresAt),
                ])
            return .started
        }
    }

    /// Rotation per RFC 9700 §4.14.2, in one transaction of the writer. `n` is the presented generation,
    /// `g` the live one, `r` the last rotated one.
    ///
    /// - Step 1. Find the family (session + user); none → `unknown`.
    /// - Step 2. Revoked or expired → `inactive`; another client's → `wrongClient`; `n > g` was never issued → `unknown`.
    /// - Step 3. `n == g`: the live token. `g ← g+1`, `r ← n`, `rotated_at ← now` → `rotated`.
    /// - Step 4. `n == r` within the grace window: a retry whose answer was lost. Its successors were never
    ///   presented (presenting one would have moved `r`), so `g ← g+1` kills them and issues a fresh one → `reissued`.
    /// - Step 5. Any other `n < g` is a genuine older token presented again: reuse. The family is revoked and
    ///   the job returns normally, so the revocation commits although the request fails.
    public func refresh(_ request: RefreshRequest) async throws -> RefreshOutcome {
        try await write { db in
            // Step 1.
            guard let row = try db.row(Self.sessionAndUser, [.text(request.sessionID)]) else { return .unknown }
            var session = Self.decodeSession(row)
            let user = Self.decodeUser(row, offset: 12)
            // Step 2.
            guard session.isActive(at: request.now) else { return .inactive }
            guard session.clientID == request.clientID else { return .wrongClient }
            let presented = request.generation
            guard presented <= session.generation else { return .unknown }
            // Step 3.
            if presented == session.generation {
                try db.run(
                    "UPDATE sessions SET generation = ?1 + 1, retry_generation = ?1, rotated_at = ?2 WHERE id = ?3",
                    [.int(presented), .int(request.now), .text(session.id)])
                session.generation = presented + 1
                session.retryGeneration = presented
                session.rotatedAt = request.now
                return .rotated(session, user)
            }
            // Step 4.
            if presented == session.retryGeneration, let rotatedAt = session.rotatedAt, request.now - rotatedAt <= request.graceSeconds {
                try db.run("UPDATE sessions SET generation = generation + 1 WHERE id = ?", [.text(session.id)])
                session.generation += 1
                return .reissued(session, user)
            }
            // Step 5.
            try db.run(Self.revoke, [.int(request.now), .text(session.id)])
            session.revokedAt = request.now
            return .reuseDetected(session)
        }
    }

    public func session(id: String) async throws -> Session? {
        try await read { db in
            try db.row("SELECT \(Self.sessionColumns) FROM sessions WHERE id = ?", [.text(id)]).map { Self.decodeSession($0) }
        }
    }

    public func sessionWithUser(id: String) async throws -> (Session, User)? {
        try await read { db in
            try db.row(Self.sessionAndUser, [.text(id)]).map { (Self.decodeSession($0), Self.decodeUser($0, offset: 12)) }
        }
    }

    public func revokeSession(id: String, at now: Int64) async throws -> Bool {
        try await write { db in try db.run(Self.revoke, [.int(now), .text(id)]) > 0 }
    }

    public func revokeSessions(userID: String, at now: Int64) async throws -> Int {
        try await write { db in
            try db.run(
                """
                UPDATE sessions SET revoked_at = ?1, purge_at = min(purge_at, ?1 + 86400)
                WHERE user_id = ?2 AND revoked_at IS NULL AND expires_at > ?1
                """,
                [.int(now), .text(userID)])
        }
    }
}
