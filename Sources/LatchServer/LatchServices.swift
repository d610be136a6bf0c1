import LatchCore

/// The engines the HTTP edge serves, assembled by the composition root (`LatchApp`) over one store.
public struct LatchServices: Sendable {
    /// What the edge itself needs to know.
    public struct Settings: Sendable {
        /// The public base URL: the `iss` of every token and the base of every URL in the discovery document.
        public var issuer: String
        /// The algorithm of Latch's signing keys, for the discovery document.
        public var signingAlgorithm: String
        /// Scopes a client may ask for, for the discovery document.
        public var scopes: [String]
        /// Requests a minute per client address to the unauthenticated endpoints that write; 0 turns limiting off.
        public var rateLimitPerMinute: Int
        /// Take the client address from `X-Forwarded-For` (only behind trusted proxies).
        public var trustForwardedFor: Bool
        /// With `trustForwardedFor`: how many trusted proxies append to `X-Forwarded-For`; the client is the address
        /// the outermost one appended, `trustedHops` from the right.
        public var trustedHops: Int
        /// Failed admin authentications a minute per client address before 429; 0 turns the limit off.
        public var adminFailuresPerMinute: Int
        /// A server span per request (`tracing.enabled`), reported to the bootstrapped tracer.
        public var tracing = false

        public init(
            issuer: String, signingAlgorithm: String, scopes: [String], rateLimitPerMinute: Int, trustForwardedFor: Bool,
            trustedHops: Int = 1, adminFailuresPerMinute: Int = 30
        ) {
            self.issuer = issuer
            self.signingAlgorithm = signingAlgorithm
            self.scopes = scopes
            self.rateLimitPerMinute = rateLimitPerMinute
            self.trustForwardedFor = trustForwardedFor
            self.trustedHops = trustedHops
            self.adminFailuresPerMinute = adminFailuresPerMinute
        }
    }

    public var settings: Settings
    public var keys: SigningKeyRing
    public var clients: ClientRegistry
    public var tokens: TokenEndpoint
    public var revocation: TokenRevocation
    public var accessTokens: AccessTokenGate
    public var sessions: SessionService
    public var registration: RegistrationService
    public var nonces: SignInNonces
    public var admin: AdminService
    public var adminTokenGate: AdminTokenGate
    /// Read by the readiness probe, to prove the database answers.
    public var readiness: any ClientStore
    /// FIDO authenticators (WebAuthn).
    public var fido: FidoService
    /// Out-of-band enrollment and approval.
    public var oob: OutOfBandService
    /// Issuer logins (login issuers, login status, logout, introspection).
    public var issuerLogin: IssuerLoginService
    /// Custom registration through operators' hooks.
    public var customRegistration: CustomRegistrationService
    /// Browser sign-in: the authorization endpoint, upstream identity providers, hosted pages, RP-initiated logout.
    public var authorization: AuthorizationService
    /// Metrics (`GET /metrics`); nil where a deployment turned them off (`metrics.enabled`).
    public var metrics: LatchMetrics?
    /// The audit log's queries, export, verification and retention.
    public var audit: AuditLog
    /// Admin sign-in with passkeys and the web console (`/console`).
    public var adminSignIn: AdminSignIn
    /// The time rate limits count in (the deployment's clock).
    public var clock: LatchClock = .system

    /// The engines of the features beyond tokens, sessions and registration: every deployment serves all of them
    /// (what a feature serves is decided by its settings, not by its engine's absence).
    public struct Features: Sendable {
        public var fido: FidoService
        public var oob: OutOfBandService
        public var issuerLogin: IssuerLoginService
        public var customRegistration: CustomRegistrationService
        public var authorization: AuthorizationService
        public var audit: AuditLog
        public var adminSignIn: AdminSignIn

        public init(
            fido: FidoService, oob: OutOfBandService, issuerLogin: IssuerLoginService, customRegistration: CustomRegistrationService,
            authorization: AuthorizationService, audit: AuditLog, adminSignIn: AdminSignIn
        ) {
            self.fido = fido
            self.oob = oob
            self.issuerLogin = issuerLogin
            self.customRegistration = customRegistration
            self.authorization = authorization
            self.audit = audit
            self.adminSignIn = adminSignIn
        }
    }

    public init(
        settings: Settings, keys: SigningKeyRing, clients: ClientRegistry, tokens: TokenEndpoint, revocation: TokenRevocation,
        accessTokens: AccessTokenGate, sessions: SessionService, registration: RegistrationService, nonces: SignInNonces,
        admin: AdminService, adminTokenGate: AdminTokenGate, readiness: any ClientStore, features: Features
    ) {
        self.settings = settings
        self.keys = keys
        self.clients = clients
        self.tokens = tokens
        self.revocation = revocation
        self.accessTokens = accessTokens
        self.sessions = sessions
        self.registration = registration
        self.nonces = nonces
        self.admin = admin
        self.adminTokenGate = adminTokenGate
        self.readiness = readiness
        fido = features.fido
        oob = features.oob
        issuerLogin = features.issuerLogin
        customRegistration = features.customRegistration
        authorization = features.authorization
        audit = features.audit
        adminSignIn = features.adminSignIn
    }
}
