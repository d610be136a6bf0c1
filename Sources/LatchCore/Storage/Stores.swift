import Foundation
import LatchModel

// Narrow storage protocols. Each engine names only the ones it uses; a backend conforms to all of them.
//
// Contract for every backend:
// - Every method that writes is atomic: all of its writes commit together or none do.
// - A method returns only after its writes are durable (committed with a synchronous flush).
// - Single-use values (nonces, `jti`s, refresh tokens) are consumed by one atomic statement, never
//   check-then-write, so two concurrent consumers cannot both succeed.
// - Failures of the store itself are thrown as `StoreUnavailableError`; domain outcomes are returned as values.

/// Users, their device keys and federated identities.
public protocol UserStore: Sendable {
    func user(id: String) async throws -> User?
    func user(username: String) async throws -> User?
    func federatedUser(issuer: String, subject: String) async throws -> User?
    /// Users ordered by id, starting after `cursor`.
    func users(after cursor: String?, limit: Int) async throws -> [User]
    func deviceKey(userID: String, keyID: String) async throws -> DeviceKey?
    /// Deletes the user and every row that belongs to them. `false` when there was no such user.
    func deleteUser(id: String) async throws -> Bool
}

/// A new registration, written in one transaction.
public struct NewRegistration: Sendable {
    public var user: User
    public var deviceKey: DeviceKey?
    /// The client's idempotency key, with the hash of the proof that came with it.
    public var registrationID: String?
    public var proofHash: Data
    /// The proof's single-use id, consumed in the same transaction.
    public var consumes: SingleUse

    public init(user: User, deviceKey: DeviceKey?, registrationID: String?, proofHash: Data, consumes: SingleUse) {
        self.user = user
        self.deviceKey = deviceKey
        self.registrationID = registrationID
        self.proofHash = proofHash
        self.consumes = consumes
    }
}

/// What became of a registration write.
public enum RegistrationOutcome: Sendable {
    case created(User)
    /// The `registrationID` exists already (a concurrent or earlier request): compare proofs.
    case registrationExists(userID: String, proofHash: Data)
    /// The username or federated identity is taken.
    case alreadyRegistered
    /// The proof's `jti` was used before.
    case replayed
}

/// A value that may be used once.
public enum SingleUse: Sendable, Hashable {
    /// A sign-in nonce this server issued for `userID`; consumed only while unexpired at `now`.
    case nonce(String, userID: String, now: Int64)
    /// An assertion `jti` from `issuer`, remembered until `until` (its `exp` plus skew).
    case jti(String, issuer: String, until: Int64)
}

/// Registrations and their idempotency keys.
public protocol RegistrationStore: Sendable {
    /// The user and proof hash recorded for a registration id.
    func registration(id: String) async throws -> (userID: String, proofHash: Data)?
    func register(_ registration: NewRegistration) async throws -> RegistrationOutcome
}

/// Sign-in challenges.
public protocol ChallengeStore: Sendable {
    /// Records a nonce for `userID`; keeps at most `maxOutstanding` unexpired nonces per user (oldest dropped).
    func insertNonce(_ nonce: String, userID: String, expiresAt: Int64, maxOutstanding: Int) async throws
}

/// A sign-in, written in one transaction: consume the proof, update claims, open the session (generation 0).
public struct NewSignIn: Sendable {
    public var session: Session
    public var consumes: SingleUse
    /// Replaces the user's kept custom claims (federated sign-in), when set.
    public var updatedClaims: [String: JSONValue]?

    public init(session: Session, consumes: SingleUse, updatedClaims: [String: JSONValue]?) {
        self.session = session
        self.consumes = consumes
        self.updatedClaims = updatedClaims
    }
}

/// What became of a sign-in write.
public enum SignInOutcome: Sendable, Equatable {
    case started
    /// The nonce was unknown, expired or used, or the `jti` was seen before.
    case replayed
    /// The user was deleted meanwhile.
    case userGone
}

/// A refresh request (a verified token's session and generation), handled in one transaction.
public struct RefreshRequest: Sendable {
    public var sessionID: String
    public var generation: Int64
    public var clientID: String
    public var now: Int64
    /// The last rotated generation, presented again within this many seconds, gets a new successor.
    public var graceSeconds: Int64

    public init(sessionID: String, generation: Int64, clientID: String, now: Int64, graceSeconds: Int64) {
        self.sessionID = sessionID
        self.generation = generation
        self.clientID = clientID
        self.now = now
        self.graceSeconds = graceSeconds
    }
}

/// What became of a refresh.
public enum RefreshOutcome: Sendable {
    /// Rotated: `session.generation` is the new live generation.
    case rotated(Session, User)
    /// A retry inside the grace window: the unused successors are dead; `session.generation` is the new one.
    case reissued(Session, User)
    /// No such session, or a generation never issued.
    case unknown
    /// The family is revoked or past its absolute lifetime.
    case inactive
    /// The token belongs to another client; nothing changed.
    case wrongClient
    /// A rotated token came back: the family was revoked, and that revocation is committed.
    case reuseDetected(Session)
}

/// Sessions and refresh-token families.
public protocol SessionStore: Sendable {
    func startSession(_ signIn: NewSignIn) async throws -> SignInOutcome
    func refresh(_ request: RefreshRequest) async throws -> RefreshOutcome
    func session(id: String) async throws -> Session?
    /// A session with its user, in one lookup (every signed-in request needs both).
    func sessionWithUser(id: String) async throws -> (Session, User)?
    /// Revokes one session. `false` when it did not exist or was revoked already.
    @discardableResult func revokeSession(id: String, at now: Int64) async throws -> Bool
    /// Revokes every session of a user; returns how many were live.
    @discardableResult func revokeSessions(userID: String, at now: Int64) async throws -> Int
}

/// External issuers' keys.
public protocol IssuerStore: Sendable {
    /// Adds a key; `false` when (issuer, kid) exists already.
    func addIssuerKey(_ key: IssuerKey) async throws -> Bool
    func issuerKey(issuer: String, keyID: String) async throws -> IssuerKey?
    func issuerKeys() async throws -> [IssuerKey]
    /// Deletes an issuer's keys (one, or all when `keyID` is nil); returns how many.
    func deleteIssuer(_ issuer: String, keyID: String?) async throws -> Int
}

/// Test registration keys.
public protocol TestKeyStore: Sendable {
    /// Adds a key; `false` when the id exists already.
    func addTestKey(_ key: TestKey) async throws -> Bool
    func testKey(id: String) async throws -> TestKey?
    func testKeys() async throws -> [TestKey]
    func deleteTestKey(id: String) async throws -> Bool
}

/// Apps.
public protocol ClientStore: Sendable {
    func addClient(_ client: Client) async throws -> Bool
    func clients() async throws -> [Client]
    func deleteClient(id: String) async throws -> Bool
}

/// Latch's own signing keys.
public protocol SigningKeyStore: Sendable {
    func signingKeys() async throws -> [SigningKeyRecord]
    /// Adds `key` as the active key; every other unretired key is retired at `key.createdAt`, in the same transaction.
    func activateSigningKey(_ key: SigningKeyRecord) async throws
    /// Deletes keys retired before `cutoff`.
    func deleteSigningKeys(retiredBefore cutoff: Int64) async throws -> Int
}

/// An admin bearer token as stored: its hash, never the token.
public struct AdminTokenRecord: Sendable, Hashable {
    public var id: String
    public var name: String
    public var hash: Data
    public var createdAt: Int64

    public init(id: String, name: String, hash: Data, createdAt: Int64) {
        self.id = id
        self.name = name
        self.hash = hash
        self.createdAt = createdAt
    }
}

/// Admin bearer tokens (hashes only).
public protocol AdminTokenStore: Sendable {
    func adminTokens() async throws -> [AdminTokenRecord]
    /// Stores a token under its id, replacing the one with that id (the environment's token changes this way).
    func putAdminToken(_ token: AdminTokenRecord) async throws
    /// Deletes a token; `false` when there was none.
    func deleteAdminToken(id: String) async throws -> Bool
}

/// Removal of rows nobody can use any more.
public protocol HousekeepingStore: Sendable {
    /// Deletes up to `limit` expired rows of each kind; returns how many in all.
    func purgeExpired(now: Int64, limit: Int) async throws -> Int
}

/// Everything a full Latch deployment needs from a backend.
public typealias LatchStore = UserStore & RegistrationStore & ChallengeStore & SessionStore & IssuerStore
    & TestKeyStore & ClientStore & SigningKeyStore & AdminTokenStore & HousekeepingStore
