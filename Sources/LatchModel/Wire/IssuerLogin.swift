/// One static key of a login issuer.
public struct LoginIssuerKey: Codable, Sendable, Hashable {
    public var kid: String
    /// `ES256`, `ES384` or `RS256`.
    public var algorithm: String
    /// SPKI PEM (or base64 DER).
    public var publicKey: String

    public init(kid: String, algorithm: String, publicKey: String) {
        self.kid = kid
        self.algorithm = algorithm
        self.publicKey = publicKey
    }
}

/// `POST /admin/v1/login-issuers`: trust an issuer whose short-lived tokens log consumers in.
public struct AdminLoginIssuerRequest: Codable, Sendable, Hashable {
    /// The `iss` of its tokens.
    public var issuerId: String
    /// The `aud` its tokens must carry (the service URL for this issuer).
    public var audience: String
    /// Static keys; or `jwksURL`.
    public var keys: [LoginIssuerKey]?
    /// Where its JWK Set is published (https; http only to loopback).
    public var jwksURL: String?
    /// Longest accepted `exp - iat`, seconds (default 300).
    public var maxTokenLifetime: Int?
    /// `scope` values its tokens may carry (default none).
    public var allowedScopes: [String]?
    /// Whether its keys also sign custom federated sign-in and registration JWTs (default false).
    public var customFederation: Bool?

    public init(
        issuerId: String, audience: String, keys: [LoginIssuerKey]? = nil, jwksURL: String? = nil, maxTokenLifetime: Int? = nil,
        allowedScopes: [String]? = nil, customFederation: Bool? = nil
    ) {
        self.issuerId = issuerId
        self.audience = audience
        self.keys = keys
        self.jwksURL = jwksURL
        self.maxTokenLifetime = maxTokenLifetime
        self.allowedScopes = allowedScopes
        self.customFederation = customFederation
    }
}

/// A login issuer as the admin API shows it.
public struct AdminLoginIssuer: Codable, Sendable, Hashable {
    public var issuerId: String
    public var audience: String
    public var keys: [LoginIssuerKey]
    public var jwksURL: String?
    public var maxTokenLifetime: Int
    public var allowedScopes: [String]
    public var customFederation: Bool
    public var createdAt: Int64

    public init(
        issuerId: String, audience: String, keys: [LoginIssuerKey], jwksURL: String?, maxTokenLifetime: Int, allowedScopes: [String],
        customFederation: Bool, createdAt: Int64
    ) {
        self.issuerId = issuerId
        self.audience = audience
        self.keys = keys
        self.jwksURL = jwksURL
        self.maxTokenLifetime = maxTokenLifetime
        self.allowedScopes = allowedScopes
        self.customFederation = customFederation
        self.createdAt = createdAt
    }
}

/// `GET /admin/v1/login-issuers`.
public struct AdminLoginIssuerList: Codable, Sendable, Hashable {
    public var loginIssuers: [AdminLoginIssuer]
    public init(loginIssuers: [AdminLoginIssuer]) { self.loginIssuers = loginIssuers }
}

/// `POST /admin/v1/resource-servers`.
public struct AdminResourceServerRequest: Codable, Sendable, Hashable {
    public var name: String
    public init(name: String) { self.name = name }
}

/// A resource server's introspection credential, shown once (`clientSecret` is never shown again).
public struct AdminResourceServerCreated: Codable, Sendable, Hashable {
    public var clientId: String
    public var clientSecret: String
    public var name: String
    public var createdAt: Int64

    public init(clientId: String, clientSecret: String, name: String, createdAt: Int64) {
        self.clientId = clientId
        self.clientSecret = clientSecret
        self.name = name
        self.createdAt = createdAt
    }
}

/// A resource server as listed.
public struct AdminResourceServer: Codable, Sendable, Hashable {
    public var clientId: String
    public var name: String
    public var createdAt: Int64

    public init(clientId: String, name: String, createdAt: Int64) {
        self.clientId = clientId
        self.name = name
        self.createdAt = createdAt
    }
}

/// `GET /admin/v1/resource-servers`.
public struct AdminResourceServerList: Codable, Sendable, Hashable {
    public var resourceServers: [AdminResourceServer]
    public init(resourceServers: [AdminResourceServer]) { self.resourceServers = resourceServers }
}

/// One (issuer, consumer) pair of a login.
public struct LoginConsumer: Codable, Sendable, Hashable {
    public var issuer: String
    public var consumer: String

    public init(issuer: String, consumer: String) {
        self.issuer = issuer
        self.consumer = consumer
    }
}

/// `GET /v1/me/login-status`.
public struct LoginStatus: Codable, Sendable, Hashable {
    /// When the latest login into this session happened (NumericDate).
    public var authTime: Int64
    /// Seconds since then.
    public var loginAge: Int64
    /// The pairs this session holds (empty for sessions that are not issuer logins).
    public var consumers: [LoginConsumer]
    /// How recent a login sensitive operations need, seconds.
    public var sensitiveMaxAge: Int64
    /// Whether a sensitive operation is allowed now (`loginAge <= sensitiveMaxAge`).
    public var sensitiveAllowed: Bool
    /// When the session ends (NumericDate): the login's validity, or the refresh family's end.
    public var expiresAt: Int64

    public init(
        authTime: Int64, loginAge: Int64, consumers: [LoginConsumer], sensitiveMaxAge: Int64, sensitiveAllowed: Bool, expiresAt: Int64
    ) {
        self.authTime = authTime
        self.loginAge = loginAge
        self.consumers = consumers
        self.sensitiveMaxAge = sensitiveMaxAge
        self.sensitiveAllowed = sensitiveAllowed
        self.expiresAt = expiresAt
    }
}
