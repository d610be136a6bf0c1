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

    /// The steps of `SQLiteStore.refresh`, as **one statement** (one round trip, atomic on its own): `current`
    /// locks the session row (`FOR UPDATE`; a concurrent refresh of the same family waits, then re-reads the
    /// committed row), `decision` applies steps 2–5, `changed` writes what the decision says, and the final SELECT
    /// returns the outcome with the session as it now is and its user.
    static let refreshStatement = """
        WITH current AS (
            SELECT * FROM sessions WHERE id = $1 FOR UPDATE
        ), decision AS (
            SELECT c.id, CASE
                WHEN c.revoked_at IS NOT NULL OR c.expires_at <= $2 THEN 'inactive'
                WHEN c.client_id <> $3 THEN 'wrongClient'
                WHEN $4 > c.generation THEN 'unknown'
                WHEN $4 = c.generation THEN 'rotated'
                WHEN $4 = c.retry_generation AND $2 - c.rotated_at <= $5 THEN 'reissued'
                ELSE 'reuse' END AS outcome
            FROM current c
        ), changed AS (
            UPDATE sessions t SET
                generation = CASE WHEN d.outcome IN ('rotated', 'reissued') THEN t.generation + 1 ELSE t.generation END,
                retry_generation = CASE WHEN d.outcome = 'rotated' THEN $4 ELSE t.retry_generation END,
                rotated_at = CASE WHEN d.outcome = 'rotated' THEN $2 ELSE t.rotated_at END,
                revoked_at = CASE WHEN d.outcome = 'reuse' THEN $2 ELSE t.revoked_at END,
                purge_at = CASE WHEN d.outcome = 'reuse' THEN LEAST(t.purge_at, $2 + 86400) ELSE t.purge_at END
            FROM decision d WHERE t.id = d.id AND d.outcome IN ('rotated', 'reissued', 'reuse')
            RETURNING t.*
        )
        SELECT d.outcome, s.id, s.user_id, s.client_id, s.auth_time, s.amr, s.scope, s.created_at, s.expires_at, s.revoked_at,
               s.generation, s.retry_generation, s.rotated_at,
               u.id, u.username, u.kind, u.issuer, u.subject, u.claims, u.created_at
        FROM decision d
        JOIN LATERAL (SELECT * FROM changed UNION ALL SELECT * FROM current WHERE NOT EXISTS (SELECT 1 FROM changed)) s ON true
        JOIN users u ON u.id = s.user_id
        """

    public func refresh(_ request: RefreshRequest) async throws -> RefreshOutcome {
        let row = try await query("refresh") { client in
            var statement = PostgresQuery(unsafeSQL: Self.refreshStatement)
            statement.binds.append(request.sessionID)
            statement.binds.append(request.now)
            statement.binds.append(request.clientID)
            statement.binds.append(request.generation)
            statement.binds.append(request.graceSeconds)
            return try await client.query(statement).first(
                (String, String, String, String, Int64, String, String, Int64, Int64, Int64?, Int64, Int64?, Int64?,
                 String, String, String, String?, String?, String, Int64).self)
        }
        guard let row else { return .unknown }
        let session = Self.session((row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10, row.11, row.12))
        let user = Self.user((row.13, row.14, row.15, row.16, row.17, row.18, row.19))
        switch row.0 {
        case "rotated": return .rotated(session, user)
        case "reissued": return .reissued(session, user)
        case "reuse": return .reuseDetected(session)
        case "wrongClient": return .wrongClient
        case "inactive": return .inactive
        default: return .unknown
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
