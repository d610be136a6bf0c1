/// Grant types the token endpoint accepts.
public enum GrantType {
    /// RFC 7523 §2.1.
    public static let jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    /// RFC 6749 §6.
    public static let refreshToken = "refresh_token"
    /// Sign-in with an Apple App Attest assertion by an attested device key.
    public static let appAttest = "urn:latch:params:oauth:grant-type:app-attest"
    /// Login with one or more issuer tokens (`issuer_token`, repeated); with a Bearer access token, adds them to
    /// that session.
    public static let issuerLogin = "urn:latch:params:oauth:grant-type:issuer-login"
}

/// The token endpoint's success answer (RFC 6749 §5.1, OIDC Core §3.1.3.3).
public struct TokenResponse: Codable, Sendable, Hashable {
    /// An RFC 9068 JWT access token.
    public var accessToken: String
    /// `Bearer`, or `DPoP` when the access token is bound to a DPoP key (RFC 9449 §5).
    public var tokenType: String
    /// Seconds until the access and ID tokens expire.
    public var expiresIn: Int
    /// The opaque refresh token; rotated on every use.
    public var refreshToken: String
    /// Seconds until the refresh token's family expires (its absolute lifetime).
    public var refreshExpiresIn: Int
    /// The OIDC ID token.
    public var idToken: String
    /// Granted scope.
    public var scope: String?

    public init(
        accessToken: String, tokenType: String = "Bearer", expiresIn: Int, refreshToken: String,
        refreshExpiresIn: Int, idToken: String, scope: String?
    ) {
        self.accessToken = accessToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.refreshToken = refreshToken
        self.refreshExpiresIn = refreshExpiresIn
        self.idToken = idToken
        self.scope = scope
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case refreshToken = "refresh_token"
        case refreshExpiresIn = "refresh_expires_in"
        case idToken = "id_token"
        case scope
    }
}
