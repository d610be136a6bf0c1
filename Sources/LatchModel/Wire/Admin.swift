/// `POST /admin/v1/issuers`: trust a custom federated issuer's key.
public struct AdminSignOnIssuerRequest: Codable, Sendable, Hashable {
    /// The `iss` its tokens carry.
    public var name: String
    /// The `kid` its tokens carry.
    public var keyId: String
    /// PEM (SPKI or PKCS#1) or base64 DER.
    public var publicKey: String
    /// `RS256` or `ES256`; inferred from the key when absent.
    public var algorithm: String?
    /// The `aud` its tokens must carry; the deployment's audience when absent.
    public var audience: String?
    /// Custom claims copied onto the user and into ID tokens.
    public var allowedClaims: [String]?
    /// Longest accepted `exp - iat`, seconds (default 3600).
    public var maxLifetime: Int?

    public init(
        name: String, keyId: String, publicKey: String, algorithm: String? = nil, audience: String? = nil,
        allowedClaims: [String]? = nil, maxLifetime: Int? = nil
    ) {
        self.name = name
        self.keyId = keyId
        self.publicKey = publicKey
        self.algorithm = algorithm
        self.audience = audience
        self.allowedClaims = allowedClaims
        self.maxLifetime = maxLifetime
    }
}

/// A trusted issuer key.
public struct AdminSignOnIssuer: Codable, Sendable, Hashable {
    public var name: String
    public var keyId: String
    public var algorithm: String
    public var audience: String
    public var allowedClaims: [String]
    public var maxLifetime: Int
    /// SPKI PEM.
    public var publicKey: String
    /// NumericDate.
    public var createdAt: Int64

    public init(
        name: String, keyId: String, algorithm: String, audience: String, allowedClaims: [String], maxLifetime: Int,
        publicKey: String, createdAt: Int64
    ) {
        self.name = name
        self.keyId = keyId
        self.algorithm = algorithm
        self.audience = audience
        self.allowedClaims = allowedClaims
        self.maxLifetime = maxLifetime
        self.publicKey = publicKey
        self.createdAt = createdAt
    }
}

/// `GET /admin/v1/issuers`.
public struct AdminSignOnIssuerList: Codable, Sendable, Hashable {
    public var issuers: [AdminSignOnIssuer]
    public init(issuers: [AdminSignOnIssuer]) { self.issuers = issuers }
}

/// `POST /admin/v1/test-keys`.
public struct AdminTestKeyRequest: Codable, Sendable, Hashable {
    /// Defaults to a random id.
    public var keyId: String?
    /// `RS256` (default, as the Sudo SDKs sign) or `ES256`.
    public var algorithm: String?
    public init(keyId: String? = nil, algorithm: String? = nil) {
        self.keyId = keyId
        self.algorithm = algorithm
    }
}

/// A test key, right after creation: the only time its private key is shown.
public struct AdminTestKeyCreated: Codable, Sendable, Hashable {
    public var keyId: String
    public var algorithm: String
    /// PKCS#8 PEM. Not stored by the server.
    public var privateKey: String
    public var publicKey: String
    public init(keyId: String, algorithm: String, privateKey: String, publicKey: String) {
        self.keyId = keyId
        self.algorithm = algorithm
        self.privateKey = privateKey
        self.publicKey = publicKey
    }
}

/// A test key as listed.
public struct AdminTestKey: Codable, Sendable, Hashable {
    public var keyId: String
    public var algorithm: String
    public var publicKey: String
    public var createdAt: Int64
    public init(keyId: String, algorithm: String, publicKey: String, createdAt: Int64) {
        self.keyId = keyId
        self.algorithm = algorithm
        self.publicKey = publicKey
        self.createdAt = createdAt
    }
}

/// `GET /admin/v1/test-keys`.
public struct AdminTestKeyList: Codable, Sendable, Hashable {
    public var testKeys: [AdminTestKey]
    public init(testKeys: [AdminTestKey]) { self.testKeys = testKeys }
}

/// A user as the admin API shows it.
public struct AdminUser: Codable, Sendable, Hashable {
    public var id: String
    public var username: String
    /// `FSSO` or `TEST`.
    public var kind: String
    public var issuer: String?
    public var subject: String?
    public var claims: [String: JSONValue]
    public var createdAt: Int64
    public init(
        id: String, username: String, kind: String, issuer: String?, subject: String?, claims: [String: JSONValue],
        createdAt: Int64
    ) {
        self.id = id
        self.username = username
        self.kind = kind
        self.issuer = issuer
        self.subject = subject
        self.claims = claims
        self.createdAt = createdAt
    }
}

/// `GET /admin/v1/users?limit=&after=`.
public struct AdminUserPage: Codable, Sendable, Hashable {
    public var users: [AdminUser]
    /// Pass as `after` for the next page; absent on the last page.
    public var nextCursor: String?
    public init(users: [AdminUser], nextCursor: String?) {
        self.users = users
        self.nextCursor = nextCursor
    }
}

/// `POST /admin/v1/users/{id}/sign-out` and `POST /v1/me/global-sign-out`.
public struct SessionsRevoked: Codable, Sendable, Hashable {
    /// How many live sessions ended.
    public var revoked: Int
    public init(revoked: Int) { self.revoked = revoked }
}

/// `POST /admin/v1/clients`.
public struct AdminClientRequest: Codable, Sendable, Hashable {
    public var clientId: String
    public var name: String?
    /// `ES256` or `RS256`: the algorithm of this app's ID tokens (OpenID Connect Dynamic Client Registration 1.0 §2
    /// `id_token_signed_response_alg`); omitted: the deployment's (`keys.algorithm`).
    public var idTokenSignedResponseAlg: String?
    public init(clientId: String, name: String? = nil, idTokenSignedResponseAlg: String? = nil) {
        self.clientId = clientId
        self.name = name
        self.idTokenSignedResponseAlg = idTokenSignedResponseAlg
    }
}

/// A public client (app).
public struct AdminClient: Codable, Sendable, Hashable {
    public var clientId: String
    public var name: String
    public var createdAt: Int64
    /// Apple evidence settings (secrets omitted).
    public var ios: AdminIOSEvidence?
    /// Android evidence settings (secrets omitted).
    public var android: AdminAndroidEvidence?
    /// RFC 9449 token binding: `off`, `allowed` (the default) or `required`.
    public var dpop: String?
    /// Whether a DPoP proof key must be the user's registered device sign-in key.
    public var dpopAttested: Bool?
    /// Browser sign-in settings.
    public var redirectUris: [String]?
    public var postLogoutRedirectUris: [String]?
    public var upstreamIdps: [String]?
    /// The algorithm of this app's ID tokens.
    public var idTokenSignedResponseAlg: String?
    public init(
        clientId: String, name: String, createdAt: Int64, ios: AdminIOSEvidence? = nil, android: AdminAndroidEvidence? = nil, dpop: String? = nil,
        dpopAttested: Bool? = nil, redirectUris: [String]? = nil, postLogoutRedirectUris: [String]? = nil, upstreamIdps: [String]? = nil,
        idTokenSignedResponseAlg: String? = nil
    ) {
        self.idTokenSignedResponseAlg = idTokenSignedResponseAlg
        self.redirectUris = redirectUris
        self.postLogoutRedirectUris = postLogoutRedirectUris
        self.upstreamIdps = upstreamIdps
        self.clientId = clientId
        self.name = name
        self.createdAt = createdAt
        self.ios = ios
        self.android = android
        self.dpop = dpop
        self.dpopAttested = dpopAttested
    }
}

/// `PATCH /admin/v1/clients/{id}`: a member present replaces that platform's settings (an empty `appIds` /
/// `packageNames` removes them); `deviceCheck` and `playIntegrity` hold write-only secrets and, when omitted from a
/// present platform, keep their stored values.
public struct AdminClientPatch: Codable, Sendable, Hashable {
    public var ios: AdminIOSEvidence?
    public var android: AdminAndroidEvidence?
    /// RFC 9449: `off` (the DPoP header is ignored), `allowed` (tokens are bound when a proof is sent) or `required`.
    public var dpop: String?
    /// The proof key must be the user's registered device sign-in key.
    public var dpopAttested: Bool?
    /// Browser sign-in: the app's redirect URIs (exact match; loopback http with any port), each replacing the list.
    public var redirectUris: [String]?
    /// Where RP-initiated logout may return to.
    public var postLogoutRedirectUris: [String]?
    /// The upstream identity providers the app may use, in chooser order.
    public var upstreamIdps: [String]?
    /// `ES256` or `RS256`: the algorithm of the app's ID tokens (OpenID Connect Dynamic Client Registration 1.0 §2
    /// `id_token_signed_response_alg`).
    public var idTokenSignedResponseAlg: String?
    public init(
        ios: AdminIOSEvidence? = nil, android: AdminAndroidEvidence? = nil, dpop: String? = nil, dpopAttested: Bool? = nil,
        redirectUris: [String]? = nil, postLogoutRedirectUris: [String]? = nil, upstreamIdps: [String]? = nil,
        idTokenSignedResponseAlg: String? = nil
    ) {
        self.idTokenSignedResponseAlg = idTokenSignedResponseAlg
        self.ios = ios
        self.android = android
        self.dpop = dpop
        self.dpopAttested = dpopAttested
        self.redirectUris = redirectUris
        self.postLogoutRedirectUris = postLogoutRedirectUris
        self.upstreamIdps = upstreamIdps
    }
}

/// An app's Apple evidence settings.
public struct AdminIOSEvidence: Codable, Sendable, Hashable {
    /// App IDs, `TEAMID.bundleId`.
    public var appIds: [String]
    /// `production` (default) or `development`.
    public var appAttestEnvironment: String?
    public var deviceCheck: AdminDeviceCheck?
    public init(appIds: [String], appAttestEnvironment: String? = nil, deviceCheck: AdminDeviceCheck? = nil) {
        self.appIds = appIds
        self.appAttestEnvironment = appAttestEnvironment
        self.deviceCheck = deviceCheck
    }
}

/// DeviceCheck API credentials. `privateKey` (the team's `.p8` PEM) is write-only: answers carry
/// `hasPrivateKey` instead.
public struct AdminDeviceCheck: Codable, Sendable, Hashable {
    public var teamId: String
    public var keyId: String
    public var privateKey: String?
    public var hasPrivateKey: Bool?
    public init(teamId: String, keyId: String, privateKey: String? = nil, hasPrivateKey: Bool? = nil) {
        self.teamId = teamId
        self.keyId = keyId
        self.privateKey = privateKey
        self.hasPrivateKey = hasPrivateKey
    }
}

/// An app's Android evidence settings.
public struct AdminAndroidEvidence: Codable, Sendable, Hashable {
    public var packageNames: [String]
    public var playIntegrity: AdminPlayIntegrity?
    /// `binding` (default: base64url SHA-256 of the challenge and the key's SPKI) or `deviceId` (Sudo's SDK).
    public var requestHashMode: String?
    public init(packageNames: [String], playIntegrity: AdminPlayIntegrity? = nil, requestHashMode: String? = nil) {
        self.packageNames = packageNames
        self.playIntegrity = playIntegrity
        self.requestHashMode = requestHashMode
    }
}

/// Play Integrity keys from the Play Console. `decryptionKey` (base64 AES-256) is write-only: answers carry
/// `hasDecryptionKey` instead.
public struct AdminPlayIntegrity: Codable, Sendable, Hashable {
    public var decryptionKey: String?
    /// Base64 of the verification key's SPKI DER.
    public var verificationKey: String
    public var hasDecryptionKey: Bool?
    public init(decryptionKey: String? = nil, verificationKey: String, hasDecryptionKey: Bool? = nil) {
        self.decryptionKey = decryptionKey
        self.verificationKey = verificationKey
        self.hasDecryptionKey = hasDecryptionKey
    }
}

/// `POST /admin/v1/clients/{id}/signing-certificates`.
public struct AdminSigningCertificateRequest: Codable, Sendable, Hashable {
    /// SHA-256 of the app's signing certificate: 64 hex digits (colons allowed, as keytool prints them).
    public var sha256: String
    public init(sha256: String) { self.sha256 = sha256 }
}

/// A signing-certificate fingerprint and the admin identity that owns it.
public struct AdminSigningCertificate: Codable, Sendable, Hashable {
    public var clientId: String
    /// Lowercase hex.
    public var sha256: String
    /// The admin token id that added it (revoking that token deletes it, after listing it: `deleteOwned=true`).
    public var owner: String
    public var createdAt: Int64
    public init(clientId: String, sha256: String, owner: String, createdAt: Int64) {
        self.clientId = clientId
        self.sha256 = sha256
        self.owner = owner
        self.createdAt = createdAt
    }
}

/// `GET /admin/v1/clients/{id}/signing-certificates`.
public struct AdminSigningCertificateList: Codable, Sendable, Hashable {
    public var signingCertificates: [AdminSigningCertificate]
    public init(signingCertificates: [AdminSigningCertificate]) { self.signingCertificates = signingCertificates }
}

/// `GET /admin/v1/clients`.
public struct AdminClientList: Codable, Sendable, Hashable {
    public var clients: [AdminClient]
    public init(clients: [AdminClient]) { self.clients = clients }
}

/// What an admin account may do. Roles are ordered: each one may do what the ones below it may (`owner` >
/// `admin` > `support` > `auditor`), except that `auditor` and `support` see different reads (docs/operations.md).
public enum AdminRole: String, Codable, Sendable, Hashable, CaseIterable, Comparable {
    /// Everything, including admin accounts and tokens of every role.
    case owner
    /// Everything but admin accounts; tokens up to `admin`.
    case admin
    /// Reads users, their sessions and authenticators; revokes a user's sessions.
    case support
    /// Reads everything, changes nothing.
    case auditor

    /// The rank: a higher one may grant every lower one.
    public var rank: Int {
        switch self {
        case .owner: 3
        case .admin: 2
        case .support: 1
        case .auditor: 0
        }
    }

    public static func < (lhs: AdminRole, rhs: AdminRole) -> Bool { lhs.rank < rhs.rank }
}

/// `POST /admin/v1/admins` body.
public struct AdminAccountRequest: Codable, Sendable, Hashable {
    /// 1–64 printable characters, unique ignoring case.
    public var username: String
    public var role: AdminRole
    public init(username: String, role: AdminRole) {
        self.username = username
        self.role = role
    }
}

/// An admin account.
public struct AdminAccountInfo: Codable, Sendable, Hashable {
    /// `adm_…`; the built-in owner is `adm_root`.
    public var id: String
    public var username: String
    public var role: AdminRole
    public var createdAt: Int64
    /// The account that created this one; nil for the built-in owner.
    public var createdBy: String?
    public init(id: String, username: String, role: AdminRole, createdAt: Int64, createdBy: String?) {
        self.id = id
        self.username = username
        self.role = role
        self.createdAt = createdAt
        self.createdBy = createdBy
    }
}

/// `GET /admin/v1/admins`.
public struct AdminAccountList: Codable, Sendable, Hashable {
    public var admins: [AdminAccountInfo]
    public init(admins: [AdminAccountInfo]) { self.admins = admins }
}

/// `POST /admin/v1/tokens`: an admin token, shown once.
public struct AdminTokenCreated: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    public var role: AdminRole
    /// The account the token belongs to (the caller's).
    public var accountId: String
    /// Unix seconds after which the token is refused; nil for never.
    public var expiresAt: Int64?
    /// The bearer token. Only its hash is stored.
    public var token: String
    public init(id: String, name: String, role: AdminRole, accountId: String, expiresAt: Int64?, token: String) {
        self.id = id
        self.name = name
        self.role = role
        self.accountId = accountId
        self.expiresAt = expiresAt
        self.token = token
    }
}

/// An admin token as listed (never the token itself).
public struct AdminTokenInfo: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    public var role: AdminRole
    public var accountId: String
    /// Unix seconds after which the token is refused; nil for never.
    public var expiresAt: Int64?
    public var createdAt: Int64
    public init(id: String, name: String, role: AdminRole, accountId: String, expiresAt: Int64?, createdAt: Int64) {
        self.id = id
        self.name = name
        self.role = role
        self.accountId = accountId
        self.expiresAt = expiresAt
        self.createdAt = createdAt
    }
}

/// `GET /admin/v1/tokens`.
public struct AdminTokenList: Codable, Sendable, Hashable {
    public var tokens: [AdminTokenInfo]
    public init(tokens: [AdminTokenInfo]) { self.tokens = tokens }
}

/// `POST /admin/v1/tokens` body.
public struct AdminTokenRequest: Codable, Sendable, Hashable {
    public var name: String?
    /// Defaults to the caller's role; may not exceed it.
    public var role: AdminRole?
    /// Seconds until the token expires: 60 … 31,622,400 (366 days); nil for the default, 90 days.
    public var expiresIn: Int64?
    /// The account the token is for (owners only); nil for the caller's own.
    public var accountId: String?
    public init(name: String? = nil, role: AdminRole? = nil, expiresIn: Int64? = nil, accountId: String? = nil) {
        self.name = name
        self.role = role
        self.expiresIn = expiresIn
        self.accountId = accountId
    }
}

/// `POST /admin/v1/keys/rotate`.
public struct AdminKeyRotated: Codable, Sendable, Hashable {
    /// The new active key's id.
    public var keyId: String
    public init(keyId: String) { self.keyId = keyId }
}

/// `GET /admin/v1/client-config?clientId=`: the configuration file an app ships (the SDK's
/// `LatchClientConfiguration`).
public struct AdminClientConfig: Codable, Sendable, Hashable {
    public var serverURL: String
    public var clientId: String
    public var audience: String
    public var namespace: String
    public init(serverURL: String, clientId: String, audience: String, namespace: String) {
        self.serverURL = serverURL
        self.clientId = clientId
        self.audience = audience
        self.namespace = namespace
    }
}

/// `POST /admin/v1/admins/{id}/enrollment`, and what `latch admin bootstrap` prints: a one-time link at which the
/// account registers a passkey for the console.
public struct AdminEnrollmentLink: Codable, Sendable, Hashable {
    public var accountId: String
    public var username: String
    /// `<issuer>/console/enroll?ticket=…`; it works once.
    public var url: String
    /// Unix seconds after which the link no longer works.
    public var expiresAt: Int64

    public init(accountId: String, username: String, url: String, expiresAt: Int64) {
        self.accountId = accountId
        self.username = username
        self.url = url
        self.expiresAt = expiresAt
    }
}

/// `GET /admin/v1/users/{id}/sessions`: a user's sessions that are neither revoked nor expired, newest first.
public struct AdminUserSessionList: Codable, Sendable, Hashable {
    public var sessions: [Session]

    public struct Session: Codable, Sendable, Hashable {
        public var id: String
        public var clientId: String
        /// When the user signed in (OIDC `auth_time`).
        public var authTime: Int64
        /// How (OIDC `amr`).
        public var amr: [String]
        public var scope: String
        public var createdAt: Int64
        public var expiresAt: Int64
        /// The refresh token is bound to a DPoP key.
        public var dpopBound: Bool

        public init(id: String, clientId: String, authTime: Int64, amr: [String], scope: String, createdAt: Int64, expiresAt: Int64, dpopBound: Bool) {
            self.id = id
            self.clientId = clientId
            self.authTime = authTime
            self.amr = amr
            self.scope = scope
            self.createdAt = createdAt
            self.expiresAt = expiresAt
            self.dpopBound = dpopBound
        }
    }

    public init(sessions: [Session]) { self.sessions = sessions }
}

/// `GET /admin/v1/users/{id}/devices`: a user's device sign-in keys, oldest first.
public struct AdminUserDeviceList: Codable, Sendable, Hashable {
    public var devices: [Device]

    public struct Device: Codable, Sendable, Hashable {
        public var keyId: String
        public var algorithm: String
        /// The attestation the key was registered with (`APP_ATTEST`, `ANDROID_KEY`, …); nil for a key registered
        /// with a test key or federated sign-in.
        public var attestation: String?
        public var signCount: UInt32?
        public var createdAt: Int64

        public init(keyId: String, algorithm: String, attestation: String?, signCount: UInt32?, createdAt: Int64) {
            self.keyId = keyId
            self.algorithm = algorithm
            self.attestation = attestation
            self.signCount = signCount
            self.createdAt = createdAt
        }
    }

    public init(devices: [Device]) { self.devices = devices }
}
