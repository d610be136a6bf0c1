/// `POST /admin/v1/upstream-idps`: an upstream OpenID provider. `clientSecret` is write-only (sealed at rest; answers
/// carry `hasClientSecret`).
public struct AdminUpstreamIdPRequest: Codable, Sendable, Hashable {
    /// 1–64 of `[a-z0-9_-]`: part of the callback URL.
    public var id: String
    public var displayName: String
    /// The upstream's issuer (https, or http on loopback for development): its discovery document is read from it.
    public var issuer: String
    public var clientId: String
    public var clientSecret: String?
    /// `client_secret_basic` (default with a secret), `client_secret_post`, or `private_key_jwt` (default without:
    /// Latch signs with its own keys, published at its JWKS).
    public var clientAuthentication: String?
    /// Default `openid profile email`; `openid` is always asked for.
    public var scopes: [String]?
    /// The upstream claim that becomes the username (default `sub`).
    public var usernameClaim: String?
    /// Upstream claims kept on the user (refreshed at each sign-in).
    public var keptClaims: [String]?
    /// Only verified emails in these domains may sign in.
    public var allowedEmailDomains: [String]?
    /// Also read UserInfo (default false).
    public var useUserinfo: Bool?
    /// ID-token algorithms accepted (default `RS256`, `ES256`).
    public var algorithms: [String]?

    public init(
        id: String, displayName: String, issuer: String, clientId: String, clientSecret: String? = nil, clientAuthentication: String? = nil,
        scopes: [String]? = nil, usernameClaim: String? = nil, keptClaims: [String]? = nil, allowedEmailDomains: [String]? = nil,
        useUserinfo: Bool? = nil, algorithms: [String]? = nil
    ) {
        self.id = id
        self.displayName = displayName
        self.issuer = issuer
        self.clientId = clientId
        self.clientSecret = clientSecret
        self.clientAuthentication = clientAuthentication
        self.scopes = scopes
        self.usernameClaim = usernameClaim
        self.keptClaims = keptClaims
        self.allowedEmailDomains = allowedEmailDomains
        self.useUserinfo = useUserinfo
        self.algorithms = algorithms
    }
}

/// An upstream identity provider as the admin API shows it, with the URLs to register at the upstream.
public struct AdminUpstreamIdP: Codable, Sendable, Hashable {
    public var id: String
    public var displayName: String
    public var issuer: String
    public var clientId: String
    public var clientAuthentication: String
    public var hasClientSecret: Bool
    public var scopes: [String]
    public var usernameClaim: String
    public var keptClaims: [String]
    public var allowedEmailDomains: [String]?
    public var useUserinfo: Bool
    public var algorithms: [String]
    /// Register this at the upstream as the redirect URI.
    public var callbackURL: String
    /// Register this at the upstream as a post-logout redirect URI.
    public var signedOutURL: String
    public var createdAt: Int64

    public init(
        id: String, displayName: String, issuer: String, clientId: String, clientAuthentication: String, hasClientSecret: Bool, scopes: [String],
        usernameClaim: String, keptClaims: [String], allowedEmailDomains: [String]?, useUserinfo: Bool, algorithms: [String], callbackURL: String,
        signedOutURL: String, createdAt: Int64
    ) {
        self.id = id
        self.displayName = displayName
        self.issuer = issuer
        self.clientId = clientId
        self.clientAuthentication = clientAuthentication
        self.hasClientSecret = hasClientSecret
        self.scopes = scopes
        self.usernameClaim = usernameClaim
        self.keptClaims = keptClaims
        self.allowedEmailDomains = allowedEmailDomains
        self.useUserinfo = useUserinfo
        self.algorithms = algorithms
        self.callbackURL = callbackURL
        self.signedOutURL = signedOutURL
        self.createdAt = createdAt
    }
}

public struct AdminUpstreamIdPList: Codable, Sendable, Hashable {
    public var upstreamIdps: [AdminUpstreamIdP]
    public init(upstreamIdps: [AdminUpstreamIdP]) { self.upstreamIdps = upstreamIdps }
}
