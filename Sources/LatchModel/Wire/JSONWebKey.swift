/// A public JSON Web Key (RFC 7517 §4, RFC 7518 §6) as published in a JWKS.
public struct JSONWebKey: Codable, Sendable, Hashable {
    /// `EC` or `RSA`.
    public var kty: String
    /// Key id.
    public var kid: String?
    /// The one algorithm this key is used with.
    public var alg: String?
    /// `sig`.
    public var use: String?
    /// EC curve (`P-256`).
    public var crv: String?
    /// EC x coordinate, base64url.
    public var x: String?
    /// EC y coordinate, base64url.
    public var y: String?
    /// RSA modulus, base64url.
    public var n: String?
    /// RSA exponent, base64url.
    public var e: String?

    public init(
        kty: String, kid: String?, alg: String?, use: String? = "sig", crv: String? = nil, x: String? = nil,
        y: String? = nil, n: String? = nil, e: String? = nil
    ) {
        self.kty = kty
        self.kid = kid
        self.alg = alg
        self.use = use
        self.crv = crv
        self.x = x
        self.y = y
        self.n = n
        self.e = e
    }
}

/// A JWK Set (RFC 7517 §5).
public struct JSONWebKeySet: Codable, Sendable, Hashable {
    /// The keys.
    public var keys: [JSONWebKey]
    public init(keys: [JSONWebKey]) { self.keys = keys }
}
