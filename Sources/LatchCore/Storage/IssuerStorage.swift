import LatchJOSE

/// A key of an external (custom federated) issuer, looked up by (issuer, kid).
public struct SignOnIssuerKey: Sendable {
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

/// Reading external issuers' keys.
public protocol SignOnIssuerStore: Sendable {
    func issuerKey(issuer: String, keyID: String) async throws -> SignOnIssuerKey?
    /// Every issuer key, ordered by issuer and key id.
    func issuerKeys() async throws -> [SignOnIssuerKey]
}

/// Writing issuer keys inside a unit of work.
public protocol SignOnIssuerWrites {
    /// Inserts a key; refuses when the issuer has one with this key id.
    func insertIssuerKey(_ key: SignOnIssuerKey, ifTaken refusal: any Error & Sendable)
    /// Deletes an issuer's keys (one, or all when `keyID` is nil); reports how many.
    func deleteIssuerKeys(issuer: String, keyID: String?) -> WriteResult<Int>
}

extension UnitOfWork {
    /// Adds a key; `false` when (issuer, kid) exists already.
    public func addIssuerKey(_ key: SignOnIssuerKey, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await succeeds { transaction, refusal in
            transaction.insertIssuerKey(key, ifTaken: refusal)
            if let event { transaction.record(event) }
        }
    }

    /// Deletes an issuer's keys (one, or all when `keyID` is nil); returns how many.
    public func deleteIssuer(_ issuer: String, keyID: String?, recording event: SecurityEvent? = nil) async throws -> Int {
        try await count { transaction in
            let deleted = transaction.deleteIssuerKeys(issuer: issuer, keyID: keyID)
            if let event { transaction.record(event) }
            return deleted
        }
    }
}
