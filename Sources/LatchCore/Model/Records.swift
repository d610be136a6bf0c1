import Foundation
import LatchJOSE
import LatchModel

/// How a user came to exist.
public enum UserKind: String, Sendable, Hashable, Codable {
    /// Registered with a custom federated JWT; signs in with such JWTs.
    case federated = "FSSO"
    /// Registered with a test registration key; signs in with a device key.
    case test = "TEST"
}

/// A registered user.
public struct User: Sendable, Hashable {
    /// Stable id: the `sub` of every token Latch issues for this user.
    public var id: String
    /// The sign-in name (`sub` of the registration JWT).
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
}

/// A device sign-in public key registered for a user.
public struct DeviceKey: Sendable {
    public var userID: String
    /// The `kid` the device puts in its assertions.
    public var keyID: String
    public var key: PublicKey
    public var createdAt: Int64

    public init(userID: String, keyID: String, key: PublicKey, createdAt: Int64) {
        self.userID = userID
        self.keyID = keyID
        self.key = key
        self.createdAt = createdAt
    }
}

/// A key of an external (custom federated) issuer, looked up by (issuer, kid).
public struct IssuerKey: Sendable {
    /// The `iss` the issuer's tokens carry.
    public var issuer: String
    public var keyID: String
    /// Bound to its one algorithm.
    public var key: PublicKey
    /// The `aud` its tokens must carry.
    public var audience: String
    /// Custom claims copied onto the user.
    public var allowedClaims: [String]
    /// Longest accepted `exp - iat`, seconds.
    public var maxLifetime: Int64
    public var createdAt: Int64

    public init(
        issuer: String, keyID: String, key: PublicKey, audience: String, allowedClaims: [String], maxLifetime: Int64,
        createdAt: Int64
    ) {
        self.issuer = issuer
        self.keyID = keyID
        self.key = key
        self.audience = audience
        self.allowedClaims = allowedClaims
        self.maxLifetime = maxLifetime
        self.createdAt = createdAt
    }
}

/// An admin-issued test registration key; only the public half is kept (REFERENCE §3).
public struct TestKey: Sendable {
    public var keyID: String
    public var key: PublicKey
    public var createdAt: Int64

    public init(keyID: String, key: PublicKey, createdAt: Int64) {
        self.keyID = keyID
        self.key = key
        self.createdAt = createdAt
    }
}

/// A public client (an app).
public struct Client: Sendable, Hashable {
    public var id: String
    public var name: String
    public var createdAt: Int64

    public init(id: String, name: String, createdAt: Int64) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
    }
}

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

    public init(
        id: String, userID: String, clientID: String, authTime: Int64, amr: [String], scope: String,
        createdAt: Int64, expiresAt: Int64, revokedAt: Int64? = nil, generation: Int64 = 0, retryGeneration: Int64? = nil,
        rotatedAt: Int64? = nil
    ) {
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

/// One of Latch's own signing keys as stored: the private half sealed with the deployment's key-encryption key.
public struct SigningKeyRecord: Sendable {
    public var keyID: String
    public var algorithm: JWSAlgorithm
    /// AES-GCM sealed PKCS#8 PEM.
    public var sealedPrivateKey: Data
    /// SPKI DER of the public key.
    public var publicKeyDER: Data
    public var createdAt: Int64
    /// When a newer key took over; the key stays published until every token it signed has expired.
    public var retiredAt: Int64?

    public init(
        keyID: String, algorithm: JWSAlgorithm, sealedPrivateKey: Data, publicKeyDER: Data, createdAt: Int64,
        retiredAt: Int64?
    ) {
        self.keyID = keyID
        self.algorithm = algorithm
        self.sealedPrivateKey = sealedPrivateKey
        self.publicKeyDER = publicKeyDER
        self.createdAt = createdAt
        self.retiredAt = retiredAt
    }
}
