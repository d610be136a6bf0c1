/// A security event: written in the same unit of work as the change it records, so the record exists exactly
/// when the change does. The coming audit log reads these.
public struct SecurityEvent: Sendable, Hashable {
    /// What happened, as a stable dotted name.
    public struct Kind: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A user was registered.
        public static let userRegistered = Kind(rawValue: "user.registered")
        /// A user de-registered themselves, or an admin deleted them.
        public static let userDeleted = Kind(rawValue: "user.deleted")
        /// A user registered a FIDO authenticator.
        public static let authenticatorRegistered = Kind(rawValue: "authenticator.registered")
        /// A user deleted a FIDO authenticator.
        public static let authenticatorDeleted = Kind(rawValue: "authenticator.deleted")
        /// An assertion's signature counter did not grow: the authenticator may be cloned.
        public static let authenticatorCounterRegressed = Kind(rawValue: "authenticator.counter_regressed")
        /// A PIN authenticator's proof failed (a wrong PIN), counted toward its lockout.
        public static let authenticatorPinFailed = Kind(rawValue: "authenticator.pin_failed")
        /// A PIN authenticator reached its most wrong PINs and is locked out.
        public static let authenticatorLocked = Kind(rawValue: "authenticator.locked")
        /// An admin unlocked a PIN authenticator.
        public static let authenticatorUnlocked = Kind(rawValue: "authenticator.unlocked")
        /// A user changed a PIN authenticator's PIN (its key was replaced).
        public static let authenticatorPinChanged = Kind(rawValue: "authenticator.pin_changed")
        /// A session was ended by its own logout (`POST /v1/me/logout`).
        public static let loggedOut = Kind(rawValue: "session.logged_out")
        /// Every session of a user was revoked (global sign-out, or an admin).
        public static let sessionsRevoked = Kind(rawValue: "user.sessions_revoked")
        /// An out-of-band enrollment, approval or deregistration was requested (detail: the operation and transaction id).
        public static let outOfBandRequested = Kind(rawValue: "oob.requested")
        /// An out-of-band transaction ended (detail: its final state and transaction id).
        public static let outOfBandCompleted = Kind(rawValue: "oob.completed")
    }

    /// Time-ordered: ids of events recorded close in time sort together.
    public var id: String
    public var at: Int64
    public var kind: Kind
    /// Who acted: `user`, `admin`, or `system`.
    public var actor: String
    public var userID: String?
    public var sessionID: String?
    /// A few words of context (a proof type, a count); never a secret.
    public var detail: String?

    public init(id: String, at: Int64, kind: Kind, actor: String, userID: String? = nil, sessionID: String? = nil, detail: String? = nil) {
        self.id = id
        self.at = at
        self.kind = kind
        self.actor = actor
        self.userID = userID
        self.sessionID = sessionID
        self.detail = detail
    }
}

/// Reading security events.
public protocol EventStore: Sendable {
    /// Events ordered by id, starting after `cursor`.
    func events(after cursor: String?, limit: Int) async throws -> [SecurityEvent]
}

/// Recording security events inside a unit of work: any unit can record one, and it commits or rolls back with it.
public protocol EventWrites {
    func record(_ event: SecurityEvent)
}

extension SecurityEvent {
    /// An event happening now, with a fresh time-ordered id.
    static func now(
        _ kind: Kind, actor: String, userID: String?, sessionID: String? = nil, detail: String? = nil, clock: LatchClock, random: RandomSource
    ) -> SecurityEvent {
        SecurityEvent(
            id: random.timeOrderedID(now: clock.now()), at: clock.seconds(), kind: kind, actor: actor, userID: userID, sessionID: sessionID,
            detail: detail)
    }
}
