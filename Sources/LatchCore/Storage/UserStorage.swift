import Foundation
import LatchJOSE
import LatchModel

/// How a user came to exist.
public enum UserKind: String, Sendable, Hashable, Codable {
    /// Registered with a custom federated JWT; signs in with such JWTs.
    case federated = "FSSO"
    /// Registered with a test registration key; signs in with a device key.
    case test = "TEST"
    /// Registered with an Apple App Attest attestation of their device key.
    case appAttest = "APP_ATTEST"
    /// Registered with an Android Keystore key attestation chain.
    case androidKey = "ANDROID_KEY"
    /// Registered with a Google Play Integrity verdict binding their device key.
    case playIntegrity = "PLAY_INTEGRITY"
    /// Registered with an Apple DeviceCheck token (checked with Apple) and a device key.
    case deviceCheck = "DEVICE_CHECK"
    /// Signed up with a FIDO authenticator (passwordless); signs in with WebAuthn assertions.
    case webauthn = "WEBAUTHN"
    /// The principal of issuer logins: one (login issuer, consumer id) pair, created at its first login. Its
    /// `issuer` is `login:<issuer id>` and its `subject` and username the consumer id.
    case issuerLogin = "ISSUER_LOGIN"
    /// Registered through a custom identity provider's hook (custom registration): Latch's own username namespace,
    /// signs in with the device key registered with it (or a FIDO authenticator added later).
    case custom = "CUSTOM"
    /// Signed in through an upstream OpenID provider at the authorization endpoint, created at their first sign-in:
    /// `issuer` is the upstream's issuer, `subject` their `sub` there.
    case oidc = "OIDC"
}

/// A registered user.
public struct User: Sendable, Hashable {
    /// Stable id: the `sub` of every token Latch issues for this user.
    public var id: String
    /// The sign-in name (`sub` of the registration JWT), unique within the user's ``source``.
    public var username: String
    /// How the user registered.
    public var kind: UserKind
    /// For federated users: the issuer that vouches for them, and their subject there.
    public var issuer: String?
    public var subject: String?
    /// Custom claims kept on the user (allowed by the issuer), repeated in the ID token.
    public var claims: [String: JSONValue]
    /// Registration time, NumericDate.
    public var createdAt: Int64

    public init(
        id: String, username: String, kind: UserKind, issuer: String?, subject: String?,
        claims: [String: JSONValue], createdAt: Int64
    ) {
        self.id = id
        self.username = username
        self.kind = kind
        self.issuer = issuer
        self.subject = subject
        self.claims = claims
        self.createdAt = createdAt
    }

    /// The namespace of the username: `""` for Latch's own users (test keys, device keys), the issuer for a
    /// federated user. Usernames are unique per source, so no source can take another's names.
    public var source: String { issuer ?? "" }
}

/// A device sign-in public key registered for a user.
public struct DeviceKey: Sendable {
    public var userID: String
    public var keyID: String
    public var key: PublicKey
    public var createdAt: Int64
    /// How the key was proven genuine, when it was (nil for test and self-asserted keys).
    public var attestation: DeviceKeyAttestation?

    public init(userID: String, keyID: String, key: PublicKey, createdAt: Int64, attestation: DeviceKeyAttestation? = nil) {
        self.userID = userID
        self.keyID = keyID
        self.key = key
        self.createdAt = createdAt
        self.attestation = attestation
    }
}

/// The attestation a device key was registered with.
public struct DeviceKeyAttestation: Sendable, Hashable {
    /// The proof type (`APP_ATTEST`, `ANDROID_KEY`, `PLAY_INTEGRITY`).
    public var type: String
    /// The signature counter of the key's last accepted assertion (App Attest): a new one must be greater.
    public var signCount: UInt32
    /// Evidence kept for later queries (App Attest's receipt).
    public var receipt: Data?

    public init(type: String, signCount: UInt32 = 0, receipt: Data? = nil) {
        self.type = type
        self.signCount = signCount
        self.receipt = receipt
    }
}

/// Reading users and their device keys.
public protocol UserStore: Sendable {
    func user(id: String) async throws -> User?
    /// Latch's own user (source `""`) named `username`; federated users are found by (issuer, subject).
    func user(username: String) async throws -> User?
    func federatedUser(issuer: String, subject: String) async throws -> User?
    /// Users ordered by id, starting after `cursor`.
    func users(after cursor: String?, limit: Int) async throws -> [User]
    /// The user's device sign-in keys, oldest first.
    func deviceKeys(userID: String) async throws -> [DeviceKey]
    /// The user's sessions neither revoked nor expired at `now`, newest first, at most `limit`.
    func activeSessions(userID: String, now: Int64, limit: Int) async throws -> [Session]
    func deviceKey(userID: String, keyID: String) async throws -> DeviceKey?
    /// Latch's own user named `username` with their device key `keyID`, in one lookup (every key sign-in needs both).
    func deviceSignInKey(username: String, keyID: String) async throws -> (User, DeviceKey)?
    /// The user and device key attested by proof type `type` under `keyID` (App Attest key ids are SHA-256 of the
    /// key, so they name one key); nil when there is none.
    func attestedDeviceKey(keyID: String, type: String) async throws -> (User, DeviceKey)?
}

/// Writing users inside a unit of work.
public protocol UserWrites {
    /// Inserts a user; refuses when the username is taken in the user's source, or the federated identity
    /// (issuer, subject) is.
    func insertUser(_ user: User, ifTaken refusal: any Error & Sendable)
    /// Inserts a device key; refuses when the user already has one with this key id.
    func insertDeviceKey(_ key: DeviceKey, ifTaken refusal: any Error & Sendable)
    /// Refuses when the user does not exist; otherwise keeps them from being deleted until the unit commits.
    func requireUser(id: String, ifMissing refusal: any Error & Sendable)
    /// Replaces the user's kept custom claims.
    func updateClaims(userID: String, claims: [String: JSONValue])
    /// Sets an attested device key's signature counter to `signCount` in one atomic compare-and-set; refuses
    /// when the stored counter is not smaller (a concurrent or replayed assertion got there first).
    func advanceSignCount(userID: String, keyID: String, to signCount: UInt32, ifNotGreater refusal: any Error & Sendable)
    /// Deletes the user and everything that belongs to them (device keys, registrations, nonces, sessions);
    /// refuses when there is no such user.
    func deleteUser(id: String, ifMissing refusal: any Error & Sendable)
}

extension UnitOfWork {
    /// Deletes a user and everything that belongs to them, recording `event` with it when given; `false` when there
    /// was no such user.
    public func deleteUser(id: String, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await succeeds { transaction, refusal in
            transaction.deleteUser(id: id, ifMissing: refusal)
            if let event { transaction.record(event) }
        }
    }
}
