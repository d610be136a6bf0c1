/// Token lifetimes and names, as the engines use them. Access and ID tokens live an hour, a refresh family
/// 30 days, as in the systems Latch replaces.
public struct TokenSettings: Sendable {
    /// The `iss` of every token Latch issues (its public base URL).
    public var issuer: String
    /// The `aud` of access tokens (RFC 9068 §2.2); defaults to the issuer.
    public var accessTokenAudience: String
    /// Seconds an access token lives.
    public var accessTokenLifetime: Int64 = 3600
    /// Seconds an ID token lives.
    public var idTokenLifetime: Int64 = 3600
    /// Absolute lifetime of a refresh-token family, seconds (30 days).
    public var refreshFamilyLifetime: Int64 = 30 * 24 * 3600
    /// A rotated refresh token presented again within this many seconds, whose successor is unused, gets a fresh
    /// successor instead of revoking the family: a lost response must not sign a phone out.
    public var refreshGrace: Int64 = 10
    /// Scopes a client may ask for; `openid` is always granted.
    public var allowedScopes: Set<String> = ["openid", "profile", "offline_access"]

    public init(issuer: String, accessTokenAudience: String? = nil) {
        self.issuer = issuer
        self.accessTokenAudience = accessTokenAudience ?? issuer
    }

    /// The longest time a token signed now can stay valid: how long a retired key must stay published.
    public var longestTokenLifetime: Int64 { max(accessTokenLifetime, idTokenLifetime) }
}

/// How incoming assertions (custom federated, device sign-in, test registration JWTs) are checked.
public struct AssertionSettings: Sendable {
    /// The `aud` custom federated and device assertions must carry (issuers may override it).
    public var audience: String = "identity-service"
    /// Allowed clock difference, seconds.
    public var clockSkew: Int64 = 60
    /// Longest accepted token, bytes.
    public var maximumTokenBytes: Int = 8 * 1024
    /// Default cap on a custom federated assertion's `exp - iat`, seconds.
    public var defaultIssuerMaxLifetime: Int64 = 3600
    /// Cap on a device sign-in assertion's `exp - iat` (the SDK uses 300).
    public var deviceAssertionMaxLifetime: Int64 = 600
    /// Seconds a sign-in nonce stays valid.
    public var nonceLifetime: Int64 = 300

    public init() {}
}

/// Registration policy.
public struct RegistrationSettings: Sendable {
    /// Whether test registration keys are accepted (switch off in production).
    public var testKeysEnabled: Bool = true
    /// `iss` a test registration JWT must carry (the value the Sudo SDKs' test provider writes).
    public var testIssuer: String = "testRegisterIssuer"
    /// `aud` a test registration JWT must carry.
    public var testAudience: String = "testRegisterAudience"
    /// Cap on a test registration JWT's `exp - iat`, seconds.
    public var testTokenMaxLifetime: Int64 = 3600

    public init() {}
}
