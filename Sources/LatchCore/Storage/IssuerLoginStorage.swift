import Foundation

/// A login issuer (Thales D1's "issuer"): an app backend whose short-lived access tokens prove that its user
/// authenticated, naming one or more consumer ids. Its keys are its own: a token is checked only against the keys of
/// the issuer its `iss` names.
public struct LoginIssuer: Sendable, Hashable {
    /// The `iss` of its tokens.
    public var id: String
    /// The `aud` its tokens must carry (the service URL for this issuer).
    public var audience: String
    /// Its static keys as a JSON array of `{kid, algorithm, publicKey (PEM)}` — read by ``LoginIssuerRegistry``; the
    /// store keeps the text as given. Empty (`[]`) when the keys come from `jwksURL`.
    public var keysJSON: String
    /// Where its keys are published (RFC 7517 JWK Set), fetched and cached; nil for static keys.
    public var jwksURL: String?
    /// Longest accepted `exp - iat`, seconds.
    public var maxTokenLifetime: Int64
    /// The `scope` values its tokens may carry.
    public var allowedScopes: [String]
    /// Whether its keys also sign custom federated sign-in and registration JWTs.
    public var customFederation: Bool
    public var createdAt: Int64

    public init(
        id: String, audience: String, keysJSON: String, jwksURL: String?, maxTokenLifetime: Int64, allowedScopes: [String],
        customFederation: Bool, createdAt: Int64
    ) {
        self.id = id
        self.audience = audience
        self.keysJSON = keysJSON
        self.jwksURL = jwksURL
        self.maxTokenLifetime = maxTokenLifetime
        self.allowedScopes = allowedScopes
        self.customFederation = customFederation
        self.createdAt = createdAt
    }
}

/// One (issuer, consumer) pair a login session holds.
public struct ConsumerPair: Sendable, Hashable, Comparable {
    /// The login issuer's id.
    public var issuer: String
    /// A consumer id from that issuer's token `sub`.
    public var consumer: String

    public init(issuer: String, consumer: String) {
        self.issuer = issuer
        self.consumer = consumer
    }

    public static func < (lhs: ConsumerPair, rhs: ConsumerPair) -> Bool {
        (lhs.issuer, lhs.consumer) < (rhs.issuer, rhs.consumer)
    }
}

/// A resource server allowed to introspect tokens (RFC 7662 §2.1), authenticated with HTTP Basic.
public struct ResourceServer: Sendable, Hashable {
    /// The `client_id` of its Basic credential (`lrs_…`).
    public var id: String
    public var name: String
    /// SHA-256 of its secret (a 256-bit random value, so a fast hash is enough).
    public var secretHash: Data
    public var createdAt: Int64

    public init(id: String, name: String, secretHash: Data, createdAt: Int64) {
        self.id = id
        self.name = name
        self.secretHash = secretHash
        self.createdAt = createdAt
    }
}

/// Reading login issuers, the consumers of login sessions, and resource servers.
public protocol IssuerLoginStore: Sendable {
    /// Every login issuer, ordered by id.
    func loginIssuers() async throws -> [LoginIssuer]
    func loginIssuer(id: String) async throws -> LoginIssuer?
    /// The (issuer, consumer) pairs of a session, sorted.
    func sessionConsumers(sessionID: String) async throws -> [ConsumerPair]
    func resourceServer(id: String) async throws -> ResourceServer?
    /// Every resource server, ordered by id.
    func resourceServers() async throws -> [ResourceServer]
}

/// Writing login issuers, session consumers and resource servers inside a unit of work.
public protocol IssuerLoginWrites {
    /// Inserts a login issuer; refuses when one with this id exists.
    func insertLoginIssuer(_ issuer: LoginIssuer, ifTaken refusal: any Error & Sendable)
    /// Deletes a login issuer; reports 1 when it existed. Sessions keep their pairs (they end on their own).
    func deleteLoginIssuer(id: String) -> WriteResult<Int>
    /// Adds (issuer, consumer) pairs to a session at `at`; pairs it holds already are left as they are.
    func insertSessionConsumers(sessionID: String, _ pairs: [ConsumerPair], at: Int64)
    /// A new login into a live session: sets its `authTime` and `expiresAt` in one statement; refuses when the session
    /// is revoked or past its end at `authTime`.
    func renewLogin(sessionID: String, authTime: Int64, expiresAt: Int64, ifUnavailable refusal: any Error & Sendable)
    /// Revokes at `at` every live session holding any of `pairs` (on every device); reports how many.
    func revokeSessions(holdingAny pairs: [ConsumerPair], at: Int64) -> WriteResult<Int>
    /// Inserts a resource server; refuses when its id exists.
    func insertResourceServer(_ server: ResourceServer, ifTaken refusal: any Error & Sendable)
    /// Deletes a resource server; reports 1 when it existed.
    func deleteResourceServer(id: String) -> WriteResult<Int>
}

extension UnitOfWork {
    /// Adds a login issuer; `false` when its id is taken.
    public func addLoginIssuer(_ issuer: LoginIssuer, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await succeeds { transaction, refusal in
            transaction.insertLoginIssuer(issuer, ifTaken: refusal)
            if let event { transaction.record(event) }
        }
    }

    /// Deletes a login issuer; `false` when there was none.
    public func removeLoginIssuer(id: String, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await count { transaction in
            let deleted = transaction.deleteLoginIssuer(id: id)
            if let event { transaction.record(event) }
            return deleted
        } > 0
    }

    /// Adds a resource server; `false` when its id is taken.
    public func addResourceServer(_ server: ResourceServer, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await succeeds { transaction, refusal in
            transaction.insertResourceServer(server, ifTaken: refusal)
            if let event { transaction.record(event) }
        }
    }

    /// Deletes a resource server; `false` when there was none.
    public func removeResourceServer(id: String, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await count { transaction in
            let deleted = transaction.deleteResourceServer(id: id)
            if let event { transaction.record(event) }
            return deleted
        } > 0
    }
}
