import LatchModel
import Logging

/// What a signed-in user may do with their own sessions: the sign-out and deletion levels, and the
/// recent-sign-in rule for sensitive operations (RFC 9470).
///
/// | level | effect |
/// |---|---|
/// | sign out | revoke this device's session (``TokenRevocation``) |
/// | global sign-out | revoke every session of the user, on every device; Latch's endpoints refuse them at once |
/// | de-register | delete the user and everything attached; needs a recent sign-in |
public struct SessionService: Sendable {
    let store: any UnitOfWork
    let sensitiveMaxAge: Int64
    /// The window of issuer-login sessions (`login.sensitiveMaxAge`), when it differs.
    public var issuerLoginSensitiveMaxAge: Int64?
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(
        store: any UnitOfWork, sensitiveMaxAge: Int64, clock: LatchClock, random: RandomSource, logger: Logger = Logger(label: "latch.sessions")
    ) {
        self.store = store
        self.sensitiveMaxAge = sensitiveMaxAge
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// Refuses a caller whose sign-in is older than the sensitive window (RFC 9470 §3).
    /// Issuer logins use their own window; their `authTime` is that of the latest login into the session (adding
    /// issuer tokens is a login).
    public func requireRecentAuthentication(_ caller: SignedInCaller) throws(LatchError) {
        let window = self.sensitiveMaxAge(of: caller.session)
        guard clock.seconds() - caller.session.authTime <= window else {
            throw LatchError.insufficientUserAuthentication(maxAge: Int(window))
        }
    }

    /// How recent a login sensitive operations of `session` need, seconds.
    public func sensitiveMaxAge(of session: Session) -> Int64 {
        if let issuerLoginSensitiveMaxAge, session.amr.contains(IssuerLoginGrant.method) { return issuerLoginSensitiveMaxAge }
        return sensitiveMaxAge
    }

    /// OpenID Connect Core §5.3 UserInfo claims.
    public func userInfo(_ caller: SignedInCaller) -> [String: JSONValue] {
        var info: [String: JSONValue] = [:]
        for (name, value) in caller.user.claims where !TokenMinter.reservedClaims.contains(name) { info[name] = value }
        info["sub"] = .string(caller.user.id)
        info["username"] = .string(caller.user.username)
        return info
    }

    /// Revokes every session of the caller's user, on every device.
    public func globalSignOut(_ caller: SignedInCaller) async throws -> Int {
        let count = try await store.revokeSessions(
            userID: caller.user.id, at: clock.seconds(),
            recording: .now(.sessionsRevoked, actor: "user", userID: caller.user.id, sessionID: caller.session.id, clock: clock, random: random))
        logger.info("global sign-out", metadata: ["user": "\(caller.user.id)", "sessions": "\(count)"])
        return count
    }

    /// De-registration: deletes the user and everything that belongs to them. Needs a recent sign-in.
    public func deregister(_ caller: SignedInCaller) async throws {
        try requireRecentAuthentication(caller)
        _ = try await store.deleteUser(
            id: caller.user.id, recording: .now(.userDeleted, actor: "user", userID: caller.user.id, clock: clock, random: random))
        logger.info("user de-registered", metadata: ["user": "\(caller.user.id)"])
    }
}
