import LatchCore

extension SQLiteStore: SessionStore {
    static let sessionColumns =
        "id, user_id, client_id, auth_time, amr, scope, created_at, expires_at, revoked_at, generation, retry_generation, rotated_at, dpop_jkt"

    /// A session and its user, in one lookup.
    static let sessionAndUser = """
        SELECT \(qualified(sessionColumns, "s")), \(qualified(userColumns, "u"))
        FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?
        """

    /// Writes a session's mutable state. A revoked row is kept a day (for audit), then housekeeping deletes it.
    static let updateState = """
        UPDATE sessions SET generation = ?1, retry_generation = ?2, rotated_at = ?3, revoked_at = ?4,
            purge_at = CASE WHEN ?4 IS NULL THEN purge_at ELSE min(purge_at, ?4 + \(revokedSessionRetention)) END
        WHERE id = ?5
        """

    static let insertSession = "INSERT INTO sessions (\(sessionColumns), purge_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

    static let revoke = "UPDATE sessions SET revoked_at = ?1, purge_at = min(purge_at, ?1 + \(revokedSessionRetention)) WHERE id = ?2 AND revoked_at IS NULL"

    static func decodeSession(_ row: SQLRow, offset: Int = 0) -> Session {
        Session(
            id: row.text(offset), userID: row.text(offset + 1), clientID: row.text(offset + 2), authTime: row.int(offset + 3),
            amr: StoredForm.amr(row.text(offset + 4)), scope: row.text(offset + 5), createdAt: row.int(offset + 6),
            expiresAt: row.int(offset + 7), revokedAt: row.optionalInt(offset + 8), generation: row.int(offset + 9),
            retryGeneration: row.optionalInt(offset + 10), rotatedAt: row.optionalInt(offset + 11), dpopJKT: row.optionalText(offset + 12))
    }

    public func session(id: String) async throws -> Session? {
        try await read { db in
            try db.row("SELECT \(Self.sessionColumns) FROM sessions WHERE id = ?", [.text(id)]).map { Self.decodeSession($0) }
        }
    }

    public func sessionWithUser(id: String) async throws -> (Session, User)? {
        try await read { db in
            try db.row(Self.sessionAndUser, [.text(id)]).map { (Self.decodeSession($0), try Self.decodeUser($0, offset: 13)) }
        }
    }

    /// ``updateSession(id:_:)`` with the rotation rule, written out for concrete types: the hottest write,
    /// without the generic closure's overhead.
    public func rotateRefreshToken(
        sessionID: String, presented: Int64, clientID: String, presentedKey: String?, spending: SingleUse?, now: Int64, grace: Int64,
        recordingReuse: ReuseRecord?
    ) async throws -> (RefreshRotation.Outcome, Session, User)? {
        try await job { db -> (RefreshRotation.Outcome, Session, User)? in
            // A DPoP proof's jti is spent in the same job: a replayed proof changes nothing.
            var replayed = false
            if case .jti(let jti, let issuer, let until)? = spending {
                replayed =
                    try db.run(
                        "INSERT INTO used_jtis (issuer, jti, expires_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [.text(issuer), .text(jti), .int(until)])
                    == 0
            }
            guard let row = try db.row(Self.sessionAndUser, [.text(sessionID)]) else { return nil }
            let session = Self.decodeSession(row)
            if replayed { return (.replayedProof, session, try Self.decodeUser(row, offset: 13)) }
            let update = RefreshRotation.decide(
                session, presented: presented, clientID: clientID, presentedKey: presentedKey, now: now, grace: grace)
            if let next = update.session { try Self.writeState(next, id: sessionID, on: db) }
            if update.result == .reuseDetected, let recordingReuse, let revoked = update.session {
                // The revocation's record, in the job's savepoint with it.
                let unit = SQLiteTransaction(chain: self.auditChain, head: self.auditHead)
                unit.record(recordingReuse(revoked))
                unit.run(on: db)
                if let stop = unit.stop { throw stop }
            }
            return (update.result, update.session ?? session, try Self.decodeUser(row, offset: 13))
        }
    }

    /// Writes the mutable state of `session` to the row `id`.
    static func writeState(_ session: Session, id: String, on db: SQLiteHandle) throws {
        try db.run(updateState, [.int(session.generation), session.retryGeneration.sql, session.rotatedAt.sql, session.revokedAt.sql, .text(id)])
    }

    /// One job of the writer: read, decide, write. The writer runs one job at a time, so the job is the lock.
    public func updateSession<Result: Sendable>(
        id: String, _ decide: @escaping @Sendable (Session, User) -> SessionUpdate<Result>
    ) async throws -> Result? {
        try await job { db in
            guard let row = try db.row(Self.sessionAndUser, [.text(id)]) else { return nil }
            let update = decide(Self.decodeSession(row), try Self.decodeUser(row, offset: 13))
            if let next = update.session { try Self.writeState(next, id: id, on: db) }
            return update.result
        }
    }
}

extension SQLiteTransaction: SessionWrites {
    func insertSession(_ session: Session) {
        let values: [SQLValue] = [
            .text(session.id), .text(session.userID), .text(session.clientID), .int(session.authTime),
            .text(StoredForm.amrText(session.amr)), .text(session.scope), .int(session.createdAt), .int(session.expiresAt),
            session.revokedAt.sql, .int(session.generation), session.retryGeneration.sql, session.rotatedAt.sql, session.dpopJKT.sql,
            .int(session.revokedAt.map { min(session.expiresAt, $0 + revokedSessionRetention) } ?? session.expiresAt),
        ]
        apply { db in
            try db.run(SQLiteStore.insertSession, values)
            return nil
        }
    }

    func revokeSession(id: String, at now: Int64) -> WriteResult<Int> {
        counting(SQLiteStore.revoke, [.int(now), .text(id)])
    }

    func revokeSessions(userID: String, at now: Int64) -> WriteResult<Int> {
        counting(
            """
            UPDATE sessions SET revoked_at = ?1, purge_at = min(purge_at, ?1 + \(revokedSessionRetention))
            WHERE user_id = ?2 AND revoked_at IS NULL AND expires_at > ?1
            """, [.int(now), .text(userID)])
    }
}
