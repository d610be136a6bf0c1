extension SecurityEvent.Kind {
    // Users and sessions.
    /// A user was registered (detail: the proof type).
    public static let userRegistered = Self(rawValue: "user.registered")
    /// A registration was refused (detail: proof type and error code); nothing else is written.
    public static let registrationFailed = Self(rawValue: "registration.failed")
    /// A device attestation (App Attest, DeviceCheck, Android key attestation, Play Integrity) was refused
    /// (detail: proof type and error code).
    public static let attestationFailed = Self(rawValue: "attestation.failed")
    /// A user de-registered themselves, or an admin deleted them.
    public static let userDeleted = Self(rawValue: "user.deleted")
    /// A sign-in opened a session (detail: the method — grant type and sign-in method).
    public static let signInSucceeded = Self(rawValue: "signin.succeeded")
    /// A sign-in was refused (detail: the method and the error code).
    public static let signInFailed = Self(rawValue: "signin.failed")
    /// A refresh token was used twice: its family was revoked.
    public static let refreshReuseDetected = Self(rawValue: "token.reuse_detected")
    /// A session was ended by its own logout or a revoked refresh token (sign-out).
    public static let loggedOut = Self(rawValue: "session.logged_out")
    /// Every session of a user was revoked (global sign-out, or an admin).
    public static let sessionsRevoked = Self(rawValue: "user.sessions_revoked")

    // Authenticators.
    /// A user registered a FIDO authenticator.
    public static let authenticatorRegistered = Self(rawValue: "authenticator.registered")
    /// A user deleted a FIDO authenticator.
    public static let authenticatorDeleted = Self(rawValue: "authenticator.deleted")
    /// An assertion's signature counter did not grow: the authenticator may be cloned.
    public static let authenticatorCounterRegressed = Self(rawValue: "authenticator.counter_regressed")
    /// A PIN authenticator's proof failed (a wrong PIN), counted toward its lockout.
    public static let authenticatorPinFailed = Self(rawValue: "authenticator.pin_failed")
    /// A PIN authenticator reached its most wrong PINs and is locked out.
    public static let authenticatorLocked = Self(rawValue: "authenticator.locked")
    /// An admin unlocked a PIN authenticator.
    public static let authenticatorUnlocked = Self(rawValue: "authenticator.unlocked")
    /// A user changed a PIN authenticator's PIN (its key was replaced).
    public static let authenticatorPinChanged = Self(rawValue: "authenticator.pin_changed")
    /// An out-of-band enrollment, approval or deregistration was requested (detail: the operation and transaction id).
    public static let outOfBandRequested = Self(rawValue: "oob.requested")
    /// An out-of-band transaction ended (detail: its final state and transaction id).
    public static let outOfBandCompleted = Self(rawValue: "oob.completed")

    // The audit log itself.
    /// Records older than the retention were purged (detail: the cut-off).
    public static let auditPurged = Self(rawValue: "audit.purged")

    /// An admin change: `admin.<area>.<verb>` (detail: a before/after summary without secrets).
    public static func admin(_ area: String, _ verb: String) -> Self { Self(rawValue: "admin.\(area).\(verb)") }
}

/// An engine that records admin changes: it has a clock and a source of ids.
protocol RecordsAdminChanges {
    var clock: LatchClock { get }
    var random: RandomSource { get }
}

extension RecordsAdminChanges {
    /// The audit record of an admin change, `admin.<area>.<verb>`, with the acting admin from the request.
    func change(_ area: String, _ verb: String, _ detail: String, user: String? = nil) -> SecurityEvent {
        SecurityEvent.now(.admin(area, verb), actor: "admin", userID: user, detail: detail, clock: clock, random: random)
    }
}

extension SecurityEvent {
    /// An event happening now, with a fresh time-ordered id; where it came from (address, user agent, request id,
    /// the admin acting) is taken from `origin`: by default the request being served (``AuditOrigin/current``).
    static func now(
        _ kind: Kind, actor: String, userID: String?, sessionID: String? = nil, clientID: String? = nil, detail: String? = nil, clock: LatchClock,
        random: RandomSource, origin: AuditOrigin? = AuditOrigin.current
    ) -> SecurityEvent {
        SecurityEvent(
            id: random.timeOrderedID(now: clock.now()), at: clock.seconds(), kind: kind,
            actor: actor == "admin" ? (origin?.admin.map { "admin:\($0)" } ?? "admin") : actor, userID: userID, sessionID: sessionID,
            clientID: clientID ?? origin?.clientID, detail: detail, address: origin?.address, userAgent: origin?.userAgent,
            requestID: origin?.requestID)
    }
}

extension AdminService: RecordsAdminChanges {}
extension IssuerLoginService: RecordsAdminChanges {}
extension CustomRegistrationService: RecordsAdminChanges {}
