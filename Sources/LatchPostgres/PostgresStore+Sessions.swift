import Foundation
import LatchCore
import LatchModel
import PostgresNIO

extension PostgresStore: SessionStore {
    typealias SessionRow = (String, String, String, Int64, String, String, Int64, Int64, Int64?, Int64, Int64?, Int64?)

    static let sessionColumns =
        "id, user_id, client_id, auth_time, amr, scope, created_at, expires_at, revoked_at, generation, retry_generation, rotated_at"

    /// A session and its user, joined.
    static let sessionAndUser = """
        SELECT s.id, s.user_id, s.client_id, s.auth_time, s.amr, s.scope, s.created_at, s.expires_at, s.revoked_at,
               s.generation, s.retry_generation, s.rotated_at,
               u.id, u.username, u.kind, u.issuer, u.subject, u.claims, u.created_at
        FROM sessions s JOIN users u ON u.id = s.user_id
        """

    typealias SessionAndUserRow = (
        String, String, String, Int64, String, String, Int64, Int64, Int64?, Int64, Int64?, Int64?,
        String, String, String, String?, String?, String, Int64
    )

    static func sessionAndUser(_ row: SessionAndUserRow) -> (Session, User) {
        (session((row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10, row.11)),
         user((row.12, row.13, row.14, row.15, row.16, row.17, row.18)))
    }

    static func session(_ row: SessionRow) -> Session {
        Session(
            id: row.0, userID: row.1, clientID: row.2, authTime: row.3, amr: row.4.split(separator: " ").map(String.init), scope: row.5,
            createdAt: row.6, expiresAt: row.7, revokedAt: row.8, generation: row.9, retryGeneration: row.10, rotatedAt: row.11)
    }

    /// Raised inside a sign-in transaction to roll it back when the user vanished.
    private struct UserGone: TransactionRollback {}

    /// Lock order matters across replicas: the single-use value first (a concurrent duplicate waits there and
    /// then finds it used), then the user row — `FOR KEY SHARE`, which blocks the user's deletion but not another
    /// sign-in or a claims update.
    public func startSession(_ signIn: NewSignIn) async throws -> SignInOutcome {
        do {
            return try await transaction("startSession") { connection in
                let session = signIn.session
                guard try await Self.consume(signIn.consumes, on: connection) else {
                    // Say which: the proof was used, or its user is gone (taking the nonce with it).
                    let exists = try await connection.run("SELECT 1 FROM users WHERE id = \(session.userID)").first(Int.self) != nil
                    return exists ? .replayed : .userGone
                }
                guard try await connection.run("SELECT 1 FROM users WHERE id = \(session.userID) FOR KEY SHARE").first(Int.self) != nil else {
                    throw UserGone()
                }
                if let claims = signIn.updatedClaims {
                    try await connection.run("UPDATE users SET claims = \(Self.claimsText(claims)) WHERE id = \(session.userID)")
                }
                try await connection.run(
                    """
                    INSERT INTO sessions (id, user_id, client_id, auth_time, amr, scope, created_at, expires_at, generation, purge_at)
                    VALUES (\(session.id), \(session.userID), \(session.clientID), \(session.authTime), \(session.amr.joined(separator: " ")),
                            \(session.scope), \(session.createdAt), \(session.expiresAt), \(session.generation), \(session.expiresAt))
                    """)
                return .started
            }
        } catch is UserGone {
            return .userGone
        }
    }

    /// The same steps as the SQLite store (see `SQLiteStore.refresh`); the session row is locked
    /// (`FOR UPDATE OF s`) so replicas presenting the same token serialize, and exactly one rotates it.
    public func refresh(_ request: RefreshRequest) async throws -> RefreshOutcome {
        try await transaction("refresh") { connection in
            // Step 1.
            guard
                let row = try await connection.run(
                    "\(unescaped: Self.sessionAndUser) WHERE s.id = \(request.sessionID) FOR UPDATE OF s"
                ).first(SessionAndUserRow.self)
            else { return .unknown }
            let pair = Self.sessionAndUser(row)
            var session = pair.0
            let user = pair.1
            // Step 2.
            guard session.isActive(at: request.now) else { return .inactive }
            guard session.clientID == request.clientID else { return .wrongClient }
            let presented = request.generation
            guard presented <= session.generation else { return .unknown }
            // Step 3.
            if presented == session.generation {
                try await connection.run(
                    "UPDATE sessions SET generation = \(presented + 1), retry_generation = \(presented), rotated_at = \(request.now) WHERE id = \(session.id)")
                session.generation = presented + 1
                session.retryGeneration = presented
                session.rotatedAt = request.now
                return .rotated(session, user)
            }
            // Step 4.
            if presented == session.retryGeneration, let rotatedAt = session.rotatedAt, request.now - rotatedAt <= request.graceSeconds {
                try await connection.run("UPDATE sessions SET generation = generation + 1 WHERE id = \(session.id)")
                session.generation += 1
                return .reissued(session, user)
            }
            // Step 5: reuse. The revocation commits with this transaction; the request then fails.
            try await connection.run(
                "UPDATE sessions SET revoked_at = \(request.now), purge_at = LEAST(purge_at, \(request.now + 86_400)) WHERE id = \(session.id) AND revoked_at IS NULL")
            session.revokedAt = request.now
            return .reuseDetected(session)
        }
    }

    public func session(id: String) async throws -> Session? {
        try await query("session") { client in
            try await client.query("SELECT \(unescaped: Self.sessionColumns) FROM sessions WHERE id = \(id)").first(SessionRow.self).map(Self.session)
        }
    }

    public func sessionWithUser(id: String) async throws -> (Session, User)? {
        try await query("sessionWithUser") { client in
            try await client.query("\(unescaped: Self.sessionAndUser) WHERE s.id = \(id)").first(SessionAndUserRow.self).map(Self.sessionAndUser)
        }
    }

    public func revokeSession(id: String, at now: Int64) async throws -> Bool {
        try await query("revokeSession") { client in
            try await client.query(
                "UPDATE sessions SET revoked_at = \(now), purge_at = LEAST(purge_at, \(now + 86_400)) WHERE id = \(id) AND revoked_at IS NULL RETURNING id"
            ).first(String.self) != nil
        }
    }

    public func revokeSessions(userID: String, at now: Int64) async throws -> Int {
        try await query("revokeSessions") { client in
            try await client.query(
                """
                UPDATE sessions SET revoked_at = \(now), purge_at = LEAST(purge_at, \(now + 86_400))
                WHERE user_id = \(userID) AND revoked_at IS NULL AND expires_at > \(now) RETURNING id
                """
            ).all(String.self).count
        }
    }
}
