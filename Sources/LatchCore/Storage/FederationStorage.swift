import Foundation

/// An upstream OpenID provider (the customer's identity provider: Okta, Entra ID, Keycloak, Google…) that Latch
/// signs users in through, as a relying party.
public struct UpstreamIdP: Sendable, Hashable {
    /// How Latch authenticates to the upstream's token endpoint (OIDC Core §9).
    public enum ClientAuthentication: String, Sendable, Hashable, Codable, CaseIterable {
        case clientSecretBasic = "client_secret_basic"
        case clientSecretPost = "client_secret_post"
        /// A JWT signed with the deployment's signing key; the upstream reads Latch's JWKS.
        case privateKeyJWT = "private_key_jwt"
    }

    /// Everything but the secret, stored as JSON.
    public struct Settings: Codable, Sendable, Hashable {
        public var displayName: String
        /// The upstream's issuer; its discovery document is `<issuer>/.well-known/openid-configuration`.
        public var issuer: String
        public var clientId: String
        public var clientAuthentication: ClientAuthentication
        /// Scopes asked for; always includes `openid`.
        public var scopes: [String]
        /// The upstream claim that becomes the Latch username (unique per upstream issuer); `sub` by default.
        public var usernameClaim: String
        /// Upstream claims kept on the user and repeated in Latch's ID tokens, refreshed at each sign-in.
        public var keptClaims: [String]
        /// When set, only users whose verified `email` is in one of these domains may sign in.
        public var allowedEmailDomains: [String]?
        /// Also read the upstream's UserInfo endpoint (its claims win over the ID token's).
        public var useUserinfo: Bool
        /// ID-token algorithms accepted from the upstream.
        public var algorithms: [String]

        public init(
            displayName: String, issuer: String, clientId: String, clientAuthentication: ClientAuthentication, scopes: [String],
            usernameClaim: String, keptClaims: [String], allowedEmailDomains: [String]?, useUserinfo: Bool, algorithms: [String]
        ) {
            self.displayName = displayName
            self.issuer = issuer
            self.clientId = clientId
            self.clientAuthentication = clientAuthentication
            self.scopes = scopes
            self.usernameClaim = usernameClaim
            self.keptClaims = keptClaims
            self.allowedEmailDomains = allowedEmailDomains
            self.useUserinfo = useUserinfo
            self.algorithms = algorithms
        }

        /// The stored form (canonical JSON).
        public var storedText: String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            // Strings, booleans and arrays of them always encode.
            return String(decoding: try! encoder.encode(self), as: UTF8.self)
        }

        /// Reads the stored form.
        public static func stored(_ text: String) throws -> Settings {
            do {
                return try JSONDecoder().decode(Settings.self, from: Data(text.utf8))
            } catch {
                throw StoreUnavailableError("upstream_idps.settings cannot be read by this version of Latch")
            }
        }
    }

    public var id: String
    public var settings: Settings
    /// The client secret sealed with the deployment's key-encryption key; nil for `private_key_jwt`.
    public var sealedSecret: Data?
    public var createdAt: Int64

    public init(id: String, settings: Settings, sealedSecret: Data?, createdAt: Int64) {
        self.id = id
        self.settings = settings
        self.sealedSecret = sealedSecret
        self.createdAt = createdAt
    }
}

/// A browser's signed-in state at Latch's hosted pages (single sign-on across apps): the cookie holds a random
/// secret, the store its SHA-256.
public struct WebSession: Sendable, Hashable {
    /// SHA-256 of the cookie's secret, lowercase hex.
    public var id: String
    public var userID: String
    /// The upstream the user signed in at.
    public var upstreamIdP: String
    /// When the user authenticated at the upstream.
    public var authTime: Int64
    /// The upstream's ID token, sealed: sent back as `id_token_hint` to its end-session endpoint at sign-out.
    public var sealedUpstreamIDToken: Data?
    public var createdAt: Int64
    public var expiresAt: Int64
    /// Set at sign-out.
    public var endedAt: Int64?

    public init(
        id: String, userID: String, upstreamIdP: String, authTime: Int64, sealedUpstreamIDToken: Data?, createdAt: Int64, expiresAt: Int64,
        endedAt: Int64? = nil
    ) {
        self.id = id
        self.userID = userID
        self.upstreamIdP = upstreamIdP
        self.authTime = authTime
        self.sealedUpstreamIDToken = sealedUpstreamIDToken
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.endedAt = endedAt
    }

    /// Usable at `now`: not ended, not expired.
    public func isActive(at now: Int64) -> Bool { endedAt == nil && now < expiresAt }
}

/// Reading upstream identity providers and web sessions.
public protocol FederationStore: Sendable {
    func upstreamIdP(id: String) async throws -> UpstreamIdP?
    /// Every upstream, ordered by id.
    func upstreamIdPs() async throws -> [UpstreamIdP]
    func webSession(id: String) async throws -> WebSession?
}

/// Writing upstream identity providers and web sessions inside a unit of work.
public protocol FederationWrites {
    /// Adds an upstream; refuses when one with its id exists.
    func insertUpstreamIdP(_ idp: UpstreamIdP, ifTaken refusal: any Error & Sendable)
    /// Removes an upstream and its web sessions (its users stay); refuses when there is none.
    func deleteUpstreamIdP(id: String, ifMissing refusal: any Error & Sendable)
    /// Adds a web session (its user must exist: the row goes with the user).
    func insertWebSession(_ session: WebSession)
    /// Ends a web session; reports 1 when it was active.
    func endWebSession(id: String, at now: Int64) -> WriteResult<Int>
}
