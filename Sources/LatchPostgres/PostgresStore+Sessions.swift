import Foundation
import LatchCore
import PostgresNIO

extension PostgresStore: SessionStore {
    typealias SessionRow = (String, String, String, Int64, String, String, Int64, Int64, Int64?, Int64, Int64?, Int64?, String?)

    static let sessionColumns =
        "id, user_id, client_id, auth_time, amr, scope, created_at, expires_at, revoked_at, generation, retry_generation, rotated_at, dpop_jkt"

    /// A session and its user, joined.
    static let sessionAndUser = """
        SELECT s.id, s.user_id, s.client_id, s.auth_time, s.amr, s.scope, s.created_at, s.expires_at, s.revoked_at,
               s.generation, s.retry_generation, s.rotated_at, s.dpop_jkt,
               u.id, u.username, u.kind, u.issuer, u.subject, u.claims, u.created_at
        FROM sessions s JOIN users u ON u.id = s.user_id
        """

    typealias SessionAndUserRow = (
        String, String, String, Int64, String, String, Int64, Int64, Int64?, Int64, Int64?, Int64?, String?,
        String, String, String, String?, String?, String, Int64
    )

    static func sessionAndUser(_ row: SessionAndUserRow) throws -> (Session, User) {
        (session((row.0, row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10, row.11, row.12)),
         try user((row.13, row.14, row.15, row.16, row.17, row.18, row.19)))
    }

    static func session(_ row: SessionRow) -> Session {
        Session(
            id: row.0, userID: row.1, clientID: row.2, authTime: row.3, amr: StoredForm.amr(row.4), scope: row.5, createdAt: row.6,
            expiresAt: row.7, revokedAt: row.8, generation: row.9, retryGeneration: row.10, rotatedAt: row.11, dpopJKT: row.12)
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

    /// ``RefreshRotation/decide(_:presented:clientID:now:grace:)`` as **one statement** — one round trip, atomic on
    /// its own — because the general path (read, decide in Swift, compare-and-set) measured ~15 % slower on the
    /// hottest endpoint. `current` locks the row (`FOR UPDATE`: a concurrent rotation of the family waits, then
    /// re-reads the committed row), `decision` is the rule's steps 1–4 in SQL, `changed` writes what it says, and
    /// the final SELECT answers the outcome with the session as it now is and its user. The conformance suite
    /// checks this statement against `RefreshRotation.decide` on 300 random states, so the two cannot drift.
    ///
    /// Reuse is decided here but not written: the family's revocation and its audit record are one transaction of
    /// their own (the record needs the audit chain's head), on the rare path only.
    static let rotationStatement = """
        WITH spent AS (
            INSERT INTO used_jtis (issuer, jti, expires_at) SELECT $7::TEXT, $8::TEXT, $9::BIGINT WHERE $7::TEXT IS NOT NULL
            ON CONFLICT DO NOTHING RETURNING 1
        ), current AS (
            SELECT * FROM sessions WHERE id = $1 FOR UPDATE
        ), decision AS (
            SELECT c.id, CASE
                WHEN $7::TEXT IS NOT NULL AND NOT EXISTS (SELECT 1 FROM spent) THEN 'replayedProof'
                WHEN c.revoked_at IS NOT NULL OR c.expires_at <= $2 THEN 'inactive'
                WHEN c.client_id <> $3 THEN 'wrongClient'
                WHEN c.dpop_jkt IS NOT NULL AND c.dpop_jkt IS DISTINCT FROM $6 THEN 'wrongKey'
                WHEN $4 > c.generation THEN 'unknown'
                WHEN $4 = c.generation THEN 'rotated'
                WHEN $4 = c.retry_generation AND $2 - c.rotated_at <= $5 THEN 'reissued'
                ELSE 'reuseDetected' END AS outcome
            FROM current c
        ), changed AS (
            UPDATE sessions t SET
                generation = CASE WHEN d.outcome IN ('rotated', 'reissued') THEN t.generation + 1 ELSE t.generation END,
                retry_generation = CASE WHEN d.outcome = 'rotated' THEN $4 ELSE t.retry_generation END,
                rotated_at = CASE WHEN d.outcome = 'rotated' THEN $2 ELSE t.rotated_at END
            FROM decision d WHERE t.id = d.id AND d.outcome IN ('rotated', 'reissued')
            RETURNING t.*
        )
        SELECT d.outcome, s.id, s.user_id, s.client_id, s.auth_time, s.amr, s.scope, s.created_at, s.expires_at, s.revoked_at,
               s.generation, s.retry_generation, s.rotated_at, s.dpop_jkt,
               u.id, u.username, u.kind, u.issuer, u.subject, u.claims, u.created_at
        FROM decision d
        JOIN LATERAL (SELECT * FROM changed UNION ALL SELECT * FROM current WHERE NOT EXISTS (SELECT 1 FROM changed)) s ON true
        JOIN users u ON u.id = s.user_id
        """

    public func rotateRefreshToken(
        sessionID: String, presented: Int64, clientID: String, presentedKey: String?, spending: SingleUse?, now: Int64, grace: Int64,
        recordingReuse: ReuseRecord?
    ) async throws -> (RefreshRotation.Outcome, Session, User)? {
        let spent: (issuer: String, jti: String, until: Int64)? =
            if case .jti(let jti, let issuer, let until)? = spending { (issuer, jti, until) } else { nil }
        let row = try await query("rotateRefreshToken") { client in
            var statement = PostgresQuery(unsafeSQL: Self.rotationStatement)
            statement.binds.append(sessionID)
            statement.binds.append(now)
            statement.binds.append(clientID)
            statement.binds.append(presented)
            statement.binds.append(grace)
            statement.binds.append(presentedKey)
            statement.binds.append(spent?.issuer)
            statement.binds.append(spent?.jti)
            statement.binds.append(spent?.until)
            return try await client.query(statement).first(
                (String, String, String, String, Int64, String, String, Int64, Int64, Int64?, Int64, Int64?, Int64?, String?,
                 String, String, String, String?, String?, String, Int64).self)
        }
        guard let row else { return nil }
        guard let outcome = RefreshRotation.Outcome(rawValue: row.0) else {
            throw StoreUnavailableError("the rotation statement answered an unknown outcome \(row.0)")
        }
        var session = Self.session((row.1, row.2, row.3, row.4, row.5, row.6, row.7, row.8, row.9, row.10, row.11, row.12, row.13))
        let user = try Self.user((row.14, row.15, row.16, row.17, row.18, row.19, row.20))
        if outcome == .reuseDetected {
            session.revokedAt = now
            try await revokeReusedFamily(session, at: now, recording: recordingReuse)
        }
        return (outcome, session, user)
    }

    /// Optimistic attempts before ``updateSession(id:_:)`` takes the row's lock.
    static let optimisticAttempts = 3

    /// Optimistic first, on one connection: read the session and user, decide, and write only if the row still
    /// holds what was read (a compare-and-set on every mutable column) — two statements, no transaction, no
    /// lock held while Swift decides. A lost race re-reads and re-decides; after a few losses (a hot session)
    /// the row's lock is taken (`FOR UPDATE`) and the decision made under it.
    public func updateSession<Result: Sendable>(
        id: String, _ decide: @escaping @Sendable (Session, User) -> SessionUpdate<Result>
    ) async throws -> Result? {
        let optimistic: Attempt<Result> = try await withConnection("updateSession") { connection in
            for _ in 0..<Self.optimisticAttempts {
                guard let row = try await connection.run("\(unescaped: Self.sessionAndUser) WHERE s.id = \(id)").first(SessionAndUserRow.self) else {
                    return .done(nil)
                }
                let (session, user) = try Self.sessionAndUser(row)
                let update = decide(session, user)
                guard let next = update.session else { return .done(update.result) }
                if try await connection.run(Self.compareAndSet(from: session, to: next)).first(Int.self) != nil { return .done(update.result) }
            }
            return .contended
        }
        if case .done(let result) = optimistic { return result }
        return try await transaction("updateSession") { connection in
            guard let row = try await connection.run("\(unescaped: Self.sessionAndUser) WHERE s.id = \(id) FOR UPDATE OF s").first(SessionAndUserRow.self)
            else { return nil }
            let (session, user) = try Self.sessionAndUser(row)
            let update = decide(session, user)
            if let next = update.session {
                guard try await connection.run(Self.compareAndSet(from: session, to: next)).first(Int.self) != nil else {
                    throw StoreUnavailableError("a locked session changed under its lock")
                }
            }
            return update.result
        }
    }

    enum Attempt<Result: Sendable>: Sendable {
        case done(Result?)
        case contended
    }

    /// Writes `next`'s mutable state if the row still holds `current`'s. A revoked row is kept a day (for
    /// audit), then housekeeping deletes it.
    static func compareAndSet(from current: Session, to next: Session) -> PostgresQuery {
        """
        UPDATE sessions SET generation = \(next.generation), retry_generation = \(next.retryGeneration), rotated_at = \(next.rotatedAt),
            revoked_at = \(next.revokedAt),
            purge_at = CASE WHEN \(next.revokedAt)::BIGINT IS NULL THEN purge_at ELSE LEAST(purge_at, \(next.revokedAt)::BIGINT + \(unescaped: String(revokedSessionRetention))) END
        WHERE id = \(current.id) AND generation = \(current.generation)
            AND retry_generation IS NOT DISTINCT FROM \(current.retryGeneration)::BIGINT
            AND rotated_at IS NOT DISTINCT FROM \(current.rotatedAt)::BIGINT
            AND revoked_at IS NOT DISTINCT FROM \(current.revokedAt)::BIGINT
        RETURNING 1
        """
    }
}

extension PostgresTransaction: SessionWrites {
    func insertSession(_ session: Session) {
        let purgeAt = session.revokedAt.map { min(session.expiresAt, $0 + revokedSessionRetention) } ?? session.expiresAt
        execute(
            """
            INSERT INTO sessions (id, user_id, client_id, auth_time, amr, scope, created_at, expires_at, revoked_at, generation,
                                  retry_generation, rotated_at, dpop_jkt, purge_at)
            VALUES (\(session.id), \(session.userID), \(session.clientID), \(session.authTime), \(StoredForm.amrText(session.amr)),
                    \(session.scope), \(session.createdAt), \(session.expiresAt), \(session.revokedAt), \(session.generation),
                    \(session.retryGeneration), \(session.rotatedAt), \(session.dpopJKT), \(purgeAt))
            """)
    }

    func revokeSession(id: String, at now: Int64) -> WriteResult<Int> {
        counting(
            "UPDATE sessions SET revoked_at = \(now), purge_at = LEAST(purge_at, \(now + revokedSessionRetention)) WHERE id = \(id) AND revoked_at IS NULL RETURNING 1")
    }

    func revokeSessions(userID: String, at now: Int64) -> WriteResult<Int> {
        counting(
            """
            UPDATE sessions SET revoked_at = \(now), purge_at = LEAST(purge_at, \(now + revokedSessionRetention))
            WHERE user_id = \(userID) AND revoked_at IS NULL AND expires_at > \(now) RETURNING 1
            """)
    }
}
