/// A signed-in session: one refresh-token family on one device.
public struct Session: Sendable, Hashable {
    /// The `sid` claim.
    public var id: String
    public var userID: String
    public var clientID: String
    /// When the user actually authenticated (kept across refreshes).
    public var authTime: Int64
    /// Authentication methods (RFC 8176 values, or Latch's `fed`).
    public var amr: [String]
    /// Granted scope.
    public var scope: String
    public var createdAt: Int64
    /// Absolute end of the refresh family.
    public var expiresAt: Int64
    /// Set once revoked (sign-out, reuse detection, admin).
    public var revokedAt: Int64?
    /// The generation of the family's live refresh token (0 at sign-in, +1 per rotation).
    public var generation: Int64
    /// The generation that may still be presented again within the grace window (the last one rotated away).
    public var retryGeneration: Int64?
    /// When `retryGeneration` was rotated.
    public var rotatedAt: Int64?
    /// The RFC 7638 thumbprint of the DPoP key the session's tokens are bound to (RFC 9449): every refresh must prove
    /// possession of that key. Never changes.
    public var dpopJKT: String?

    public init(
        id: String, userID: String, clientID: String, authTime: Int64, amr: [String], scope: String,
        createdAt: Int64, expiresAt: Int64, revokedAt: Int64? = nil, generation: Int64 = 0, retryGeneration: Int64? = nil,
        rotatedAt: Int64? = nil, dpopJKT: String? = nil
    ) {
        self.dpopJKT = dpopJKT
        self.id = id
        self.userID = userID
        self.clientID = clientID
        self.authTime = authTime
        self.amr = amr
        self.scope = scope
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.generation = generation
        self.retryGeneration = retryGeneration
        self.rotatedAt = rotatedAt
    }

    /// Usable at `now`: not revoked, not past its absolute lifetime.
    public func isActive(at now: Int64) -> Bool { revokedAt == nil && now < expiresAt }
}

/// What a decision function asks ``SessionStore/updateSession(id:_:)`` to do.
public struct SessionUpdate<Result: Sendable>: Sendable {
    /// The session's new state, or nil to leave it unchanged. Only the mutable part is written: `generation`,
    /// `retryGeneration`, `rotatedAt` and `revokedAt`; the rest of a session never changes.
    public var session: Session?
    /// What the caller gets back.
    public var result: Result

    public init(session: Session?, result: Result) {
        self.session = session
        self.result = result
    }
}

/// Reading sessions, and changing one under its lock.
public protocol SessionStore: Sendable {
    func session(id: String) async throws -> Session?
    /// A session with its user, in one lookup (every signed-in request needs both).
    func sessionWithUser(id: String) async throws -> (Session, User)?
    /// Reads session `id` with its user, applies `decide`, writes what it returns and answers its result — as
    /// one atomic step: concurrent updates of one session (on one replica or several) apply one after the other,
    /// each deciding on the state the previous one left. Nil when there is no such session.
    ///
    /// `decide` is a pure function; a store may call it more than once (an optimistic store re-decides after
    /// losing a race), and only its last answer takes effect.
    func updateSession<Result: Sendable>(
        id: String, _ decide: @escaping @Sendable (Session, User) -> SessionUpdate<Result>
    ) async throws -> Result?

    /// ``updateSession(id:_:)`` with ``RefreshRotation/decide(_:presented:clientID:now:grace:)``: the outcome, the
    /// session as it now is, and its user; nil when there is no such session.
    ///
    /// The default runs exactly that. A store may answer with a single statement of its own where that was
    /// measured to matter (PostgreSQL: one round trip instead of two); the conformance suite checks every store's
    /// answer against `RefreshRotation.decide` on random states.
    ///
    /// `spending` (a DPoP proof's `jti`) is consumed in the same step: when it was used before, the answer is
    /// `replayedProof` and nothing changes — one write for a DPoP refresh instead of two.
    ///
    /// On `reuseDetected` the family's revocation and the event `recordingReuse` makes of the revoked session are
    /// written in one unit: no revocation without its audit record.
    func rotateRefreshToken(
        sessionID: String, presented: Int64, clientID: String, presentedKey: String?, spending: SingleUse?, now: Int64, grace: Int64,
        recordingReuse: ReuseRecord?
    ) async throws -> (RefreshRotation.Outcome, Session, User)?
}

/// Makes the audit record of a refresh token's reuse from the session it revoked. Called by the store inside its
/// write, possibly on another thread: it must not read task-locals (capture the request's origin beforehand).
public typealias ReuseRecord = @Sendable (_ revoked: Session) -> SecurityEvent

extension SessionStore {
    /// ``rotateRefreshToken(sessionID:presented:clientID:presentedKey:spending:now:grace:recordingReuse:)`` recording nothing.
    public func rotateRefreshToken(
        sessionID: String, presented: Int64, clientID: String, presentedKey: String?, spending: SingleUse?, now: Int64, grace: Int64
    ) async throws -> (RefreshRotation.Outcome, Session, User)? {
        try await rotateRefreshToken(
            sessionID: sessionID, presented: presented, clientID: clientID, presentedKey: presentedKey, spending: spending, now: now, grace: grace,
            recordingReuse: nil)
    }
}

/// A DPoP proof's `jti` found spent by a rotation.
private struct ProofReplayed: Error {}

extension SessionStore where Self: UnitOfWork {
    public func rotateRefreshToken(
        sessionID: String, presented: Int64, clientID: String, presentedKey: String?, spending: SingleUse?, now: Int64, grace: Int64,
        recordingReuse: ReuseRecord?
    ) async throws -> (RefreshRotation.Outcome, Session, User)? {
        if let spending {
            // Two steps here (the in-memory store); SQLite and PostgreSQL do both in one.
            do {
                try await write { $0.consume(spending, ifUnavailable: ProofReplayed()) }
            } catch is ProofReplayed {
                guard let (session, user) = try await sessionWithUser(id: sessionID) else { return nil }
                return (.replayedProof, session, user)
            }
        }
        let decided = try await updateSession(id: sessionID) { session, user in
            let update = RefreshRotation.decide(
                session, presented: presented, clientID: clientID, presentedKey: presentedKey, now: now, grace: grace)
            // Reuse: the revocation is written below, with its record.
            if update.result == .reuseDetected { return SessionUpdate(session: nil, result: (update.result, update.session ?? session, user)) }
            return SessionUpdate(session: update.session, result: (update.result, update.session ?? session, user))
        }
        guard let decided, decided.0 == .reuseDetected else { return decided }
        try await revokeReusedFamily(decided.1, at: now, recording: recordingReuse)
        return decided
    }
}

extension UnitOfWork {
    /// Revokes the session a reused refresh token belongs to, with the record `recording` makes of it, in one unit
    /// (for stores whose rotation decides reuse without writing).
    public func revokeReusedFamily(_ revoked: Session, at now: Int64, recording: ReuseRecord?) async throws {
        try await write { unit in
            _ = unit.revokeSession(id: revoked.id, at: now)
            if let recording { unit.record(recording(revoked)) }
        }
    }
}

/// Writing sessions inside a unit of work.
public protocol SessionWrites {
    /// Inserts a new session (ids are random: they do not collide).
    func insertSession(_ session: Session)
    /// Revokes one session at `now`; reports 1 when it was live and is now revoked, else 0.
    func revokeSession(id: String, at now: Int64) -> WriteResult<Int>
    /// Revokes every live session of a user at `now`; reports how many.
    func revokeSessions(userID: String, at now: Int64) -> WriteResult<Int>
}

extension UnitOfWork {
    /// Revokes one session; `false` when it did not exist or was revoked already.
    @discardableResult
    public func revokeSession(id: String, at now: Int64) async throws -> Bool {
        try await count { $0.revokeSession(id: id, at: now) } > 0
    }

    /// Revokes every live session of a user, recording `event` with it when given; returns how many.
    @discardableResult
    public func revokeSessions(userID: String, at now: Int64, recording event: SecurityEvent? = nil) async throws -> Int {
        try await count { transaction in
            let revoked = transaction.revokeSessions(userID: userID, at: now)
            if let event { transaction.record(event) }
            return revoked
        }
    }
}
