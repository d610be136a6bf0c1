import LatchModel

/// The claims of Latch's ID tokens (OpenID Connect Core §2), plus `sid`, `username` and the user's kept
/// custom claims.
public struct IDTokenClaims: Sendable, Hashable {
    public var issuer: String
    public var subject: String
    /// The client the token was issued to.
    public var audience: String
    public var issuedAt: Int64
    public var expiresAt: Int64
    /// When the user authenticated; 0 when that is unknown (a browser sign-in whose upstream identity provider did
    /// not say, and was not asked: OpenID Connect Core 1.0 §2 makes `auth_time` optional then), and not written.
    public var authTime: Int64
    public var amr: [String]
    public var sessionID: String
    public var username: String
    /// Custom claims; names in ``TokenMinter/reservedClaims`` are never written.
    public var custom: [String: JSONValue]
    /// For an issuer login: the session's (issuer, consumer) pairs.
    public var consumers: [ConsumerPair]?
    /// The authorization request's `nonce` (OIDC Core §2), on the ID token of a code redemption.
    public var nonce: String?

    public init(
        issuer: String, subject: String, audience: String, issuedAt: Int64, expiresAt: Int64, authTime: Int64,
        amr: [String], sessionID: String, username: String, custom: [String: JSONValue], consumers: [ConsumerPair]? = nil
    ) {
        self.consumers = consumers
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.authTime = authTime
        self.amr = amr
        self.sessionID = sessionID
        self.username = username
        self.custom = custom
    }

    /// The claims set as compact JSON: registered claims in a fixed order, then custom claims sorted by name.
    public var json: [UInt8] {
        var writer = JSONWriter(reservingCapacity: 384)
        writer.beginObject()
        writer.member("iss", issuer)
        writer.member("sub", subject)
        writer.member("aud", audience)
        writer.member("iat", issuedAt)
        writer.member("exp", expiresAt)
        if authTime > 0 { writer.member("auth_time", authTime) }
        writer.member("amr", amr)
        writer.member("sid", sessionID)
        writer.member("username", username)
        if let nonce { writer.member("nonce", nonce) }
        if let consumers {
            writer.key(ConsumerPair.claimName)
            writer.write(ConsumerPair.claim(consumers))
        }
        for name in custom.keys.sorted() where !TokenMinter.reservedClaims.contains(name) {
            writer.key(name)
            writer.write(custom[name]!)
        }
        writer.endObject()
        return writer.bytes
    }
}
