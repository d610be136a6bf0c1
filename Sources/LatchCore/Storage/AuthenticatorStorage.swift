import Foundation

/// A FIDO authenticator (WebAuthn credential) registered to a user.
public struct Authenticator: Sendable, Hashable {
    /// Latch's id for it (the path segment of `/v1/me/authenticators/{id}`).
    public var id: String
    public var userID: String
    /// The credential id the authenticator chose; unique across users.
    public var credentialID: Data
    /// The COSE_Key bytes as the authenticator sent them.
    public var publicKeyCOSE: Data
    public var signCount: UInt32
    public var aaguid: Data
    /// The attestation format it registered with.
    public var format: String
    /// A name the user gives it.
    public var name: String
    public var backupEligible: Bool
    public var createdAt: Int64
    public var lastUsedAt: Int64?
    /// Failed proofs since the last good one (counted for PIN authenticators).
    public var failedAttempts: Int = 0
    /// When the last failed proof was counted.
    public var lastFailedAt: Int64?
    /// A PIN authenticator's device binding key (docs/fido.md, "PIN binding"): the 65-byte uncompressed P-256 point
    /// the device registered with it, whose signature every PIN assertion carries; nil for other authenticators and
    /// for PIN authenticators registered before binding (*unbound*: never locked, only cooled down).
    public var pinBindingKey: Data?

    public init(
        id: String, userID: String, credentialID: Data, publicKeyCOSE: Data, signCount: UInt32, aaguid: Data, format: String, name: String,
        backupEligible: Bool, createdAt: Int64, lastUsedAt: Int64? = nil, failedAttempts: Int = 0, lastFailedAt: Int64? = nil,
        pinBindingKey: Data? = nil
    ) {
        self.id = id
        self.userID = userID
        self.credentialID = credentialID
        self.publicKeyCOSE = publicKeyCOSE
        self.signCount = signCount
        self.aaguid = aaguid
        self.format = format
        self.name = name
        self.backupEligible = backupEligible
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.failedAttempts = failedAttempts
        self.lastFailedAt = lastFailedAt
        self.pinBindingKey = pinBindingKey
    }
}

/// Reading authenticators.
public protocol AuthenticatorStore: Sendable {
    /// A user's authenticators, oldest first.
    func authenticators(userID: String) async throws -> [Authenticator]
    /// The authenticator with this credential id and its user; nil when there is none.
    func authenticator(credentialID: Data) async throws -> (User, Authenticator)?
}

/// Writing authenticators inside a unit of work.
public protocol AuthenticatorWrites {
    /// Adds an authenticator; refuses when its id or credential id exists (or the user is gone).
    func insertAuthenticator(_ authenticator: Authenticator, ifTaken refusal: any Error & Sendable)
    /// Moves an authenticator's counter to `signCount`, records its use and clears its failures, in one
    /// compare-and-set: refuses when the stored counter is not smaller — unless both are 0 (an authenticator that
    /// keeps no counter) — or the failure count is no longer `failedAttempts` (a concurrent wrong PIN counted first).
    /// `failedAttempts` nil clears whatever count there is: a PIN authenticator's verified attempt, whose lockout its
    /// reservation already enforced (concurrent right PINs must not refuse each other for moving the count).
    func recordAuthenticatorUse(id: String, signCount: UInt32, failedAttempts: Int?, at: Int64, ifChanged refusal: any Error & Sendable)
    /// Renames one of a user's authenticators; refuses when the user has none with this id.
    func renameAuthenticator(id: String, userID: String, name: String, ifMissing refusal: any Error & Sendable)
    /// Deletes one of a user's authenticators; refuses when the user has none with this id.
    func deleteAuthenticator(id: String, userID: String, ifMissing refusal: any Error & Sendable)
    /// Deletes every authenticator of a user (none is not a refusal).
    func deleteAuthenticators(userID: String)
    /// Reserves a PIN attempt before its proof is verified, in one conditional update: the failure count up by one and
    /// `at` stamped as the last failure — refused when the count has reached `maxAttempts`, or while the cool-down
    /// after the last failure runs (after the n-th, `coolDowns[n-1]` seconds, the last entry repeating; none when
    /// empty). Concurrent reservations, on any replicas, never pass `maxAttempts` together. The reservation is the
    /// failure unless settled otherwise: a use (``recordAuthenticatorUse(id:signCount:failedAttempts:at:ifChanged:)``
    /// with the reported count) clears it, ``releasePinAttempt(id:)`` gives it back. Reports the count after it.
    func reservePinAttempt(id: String, maxAttempts: Int, coolDowns: [Int64], at: Int64, ifRefused refusal: any Error & Sendable) -> WriteResult<Int>
    /// Gives back a reserved PIN attempt whose proof was neither right nor wrong: the count down by one (never below 0).
    func releasePinAttempt(id: String)
    /// An admin's unlock: the failure count back to 0; refuses when the user has no authenticator with this id.
    func unlockAuthenticator(id: String, userID: String, ifMissing refusal: any Error & Sendable)
    /// A PIN change: the credential's public key replaced, its counter set to `signCount` and its failures cleared,
    /// in one compare-and-set on the old key; refuses when the stored key is no longer `oldPublicKeyCOSE`. The PIN
    /// binding key (``Authenticator/pinBindingKey``) is kept.
    func replaceAuthenticatorKey(
        id: String, oldPublicKeyCOSE: Data, publicKeyCOSE: Data, signCount: UInt32, at: Int64, ifChanged refusal: any Error & Sendable)
}
