import Foundation

// Custom registration (OneWelcome's "custom identity providers"): the operator's own service, called as an HTTP
// hook, decides whether a registration succeeds. See docs/custom-registration.md.

/// `POST /admin/v1/custom-providers`.
public struct AdminCustomProviderRequest: Codable, Sendable, Hashable {
    /// 1–64 characters of `A–Z a–z 0–9 . _ -`: what the app names as `identityProvider`.
    public var id: String
    /// Shown to people (1–200 characters).
    public var name: String
    /// `one_step` or `two_step`.
    public var flow: String
    /// Where Latch POSTs each step: http or https.
    public var hookURL: String
    /// The HMAC-SHA256 key is the UTF-8 bytes of this secret (16–512 bytes). Write-only: never shown again.
    public var hookSecret: String
    /// Seconds one hook call may take (1–60, default 5).
    public var timeout: Int?
    /// Further attempts after a network error, a timeout or an HTTP 5xx/429 answer (0–5, default 2).
    public var retries: Int?
    /// Seconds a transaction stays usable (30–86,400, default 600).
    public var transactionLifetime: Int?
    /// The hook user's `attributes` kept as claims (default none).
    public var allowedClaims: [String]?
    /// Default true.
    public var enabled: Bool?

    public init(
        id: String, name: String, flow: String, hookURL: String, hookSecret: String, timeout: Int? = nil, retries: Int? = nil,
        transactionLifetime: Int? = nil, allowedClaims: [String]? = nil, enabled: Bool? = nil
    ) {
        self.id = id
        self.name = name
        self.flow = flow
        self.hookURL = hookURL
        self.hookSecret = hookSecret
        self.timeout = timeout
        self.retries = retries
        self.transactionLifetime = transactionLifetime
        self.allowedClaims = allowedClaims
        self.enabled = enabled
    }
}

/// `PATCH /admin/v1/custom-providers/{id}`: the members present are changed (not `id`).
public struct AdminCustomProviderPatch: Codable, Sendable, Hashable {
    public var name: String?
    public var flow: String?
    public var hookURL: String?
    public var hookSecret: String?
    public var timeout: Int?
    public var retries: Int?
    public var transactionLifetime: Int?
    public var allowedClaims: [String]?
    public var enabled: Bool?

    public init(
        name: String? = nil, flow: String? = nil, hookURL: String? = nil, hookSecret: String? = nil, timeout: Int? = nil, retries: Int? = nil,
        transactionLifetime: Int? = nil, allowedClaims: [String]? = nil, enabled: Bool? = nil
    ) {
        self.name = name
        self.flow = flow
        self.hookURL = hookURL
        self.hookSecret = hookSecret
        self.timeout = timeout
        self.retries = retries
        self.transactionLifetime = transactionLifetime
        self.allowedClaims = allowedClaims
        self.enabled = enabled
    }
}

/// A custom provider as the admin API shows it (never its secret).
public struct AdminCustomProvider: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    public var flow: String
    public var hookURL: String
    public var timeout: Int
    public var retries: Int
    public var transactionLifetime: Int
    public var allowedClaims: [String]
    public var enabled: Bool
    public var createdAt: Int64
    public var updatedAt: Int64

    public init(
        id: String, name: String, flow: String, hookURL: String, timeout: Int, retries: Int, transactionLifetime: Int, allowedClaims: [String],
        enabled: Bool, createdAt: Int64, updatedAt: Int64
    ) {
        self.id = id
        self.name = name
        self.flow = flow
        self.hookURL = hookURL
        self.timeout = timeout
        self.retries = retries
        self.transactionLifetime = transactionLifetime
        self.allowedClaims = allowedClaims
        self.enabled = enabled
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// `GET /admin/v1/custom-providers`.
public struct AdminCustomProviderList: Codable, Sendable, Hashable {
    public var customProviders: [AdminCustomProvider]

    public init(customProviders: [AdminCustomProvider]) { self.customProviders = customProviders }
}

/// `GET /admin/v1/custom-providers/{id}/transactions[?state=open]`: the provider's transactions (newest first) and how
/// many are in each state.
public struct AdminCustomTransactions: Codable, Sendable, Hashable {
    public var providerId: String
    /// `open`, `completed`, `cancelled`, `failed` → count (every state listed, zero included).
    public var counts: [String: Int]
    public var transactions: [AdminCustomTransaction]

    public init(providerId: String, counts: [String: Int], transactions: [AdminCustomTransaction]) {
        self.providerId = providerId
        self.counts = counts
        self.transactions = transactions
    }
}

/// One transaction as the admin API shows it.
public struct AdminCustomTransaction: Codable, Sendable, Hashable {
    public var transactionId: String
    public var clientId: String
    /// `open`, `completed`, `cancelled` or `failed`.
    public var state: String
    /// Whether `init` succeeded (two-step providers).
    public var initCompleted: Bool
    /// Hook calls made.
    public var attempts: Int64
    /// The last status the hook answered.
    public var lastStatus: Int64?
    public var userId: String?
    public var createdAt: Int64
    public var expiresAt: Int64
    public var finishedAt: Int64?

    public init(
        transactionId: String, clientId: String, state: String, initCompleted: Bool, attempts: Int64, lastStatus: Int64?, userId: String?,
        createdAt: Int64, expiresAt: Int64, finishedAt: Int64?
    ) {
        self.transactionId = transactionId
        self.clientId = clientId
        self.state = state
        self.initCompleted = initCompleted
        self.attempts = attempts
        self.lastStatus = lastStatus
        self.userId = userId
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.finishedAt = finishedAt
    }
}

/// `GET /v1/custom-registrations/providers`: the enabled providers an app may offer.
public struct CustomProviderList: Codable, Sendable, Hashable {
    public var providers: [CustomProviderInfo]

    public init(providers: [CustomProviderInfo]) { self.providers = providers }
}

/// One enabled custom provider, as apps see it.
public struct CustomProviderInfo: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    /// `one_step` or `two_step`.
    public var flow: String

    public init(id: String, name: String, flow: String) {
        self.id = id
        self.name = name
        self.flow = flow
    }
}

/// `POST /v1/custom-registrations/init` (two-step providers).
public struct CustomRegistrationInitRequest: Codable, Sendable, Hashable {
    public var identityProvider: String
    /// Passed to the hook as is (at most 16 KiB as JSON).
    public var data: JSONValue?
    /// Repeats `init` on this transaction after a 4xxx answer to it.
    public var transactionId: String?
    /// The app's OAuth client (default: the deployment's default client). The transaction is bound to it.
    public var clientId: String?

    public init(identityProvider: String, data: JSONValue? = nil, transactionId: String? = nil, clientId: String? = nil) {
        self.identityProvider = identityProvider
        self.data = data
        self.transactionId = transactionId
        self.clientId = clientId
    }
}

/// The answer to a successful `init`.
public struct CustomRegistrationInitResponse: Codable, Sendable, Hashable {
    public var transactionId: String
    /// The hook's status (2000–2999).
    public var status: Int
    /// The hook's `data`, for the app to show.
    public var data: JSONValue?

    public init(transactionId: String, status: Int, data: JSONValue? = nil) {
        self.transactionId = transactionId
        self.status = status
        self.data = data
    }
}

/// `POST /v1/custom-registrations/complete`: `transactionId` (two-step, or a retry after a 4xxx) or
/// `identityProvider` (one-step), not both.
public struct CustomRegistrationCompleteRequest: Codable, Sendable, Hashable {
    public var transactionId: String?
    public var identityProvider: String?
    /// Passed to the hook as is (at most 16 KiB as JSON).
    public var data: JSONValue?
    /// The device sign-in key registered with the new user.
    public var publicKey: RegistrationPublicKey?
    /// Idempotency key: a retried `complete` with it after success answers the same user.
    public var registrationId: String?
    /// The app's OAuth client (default: the deployment's default client).
    public var clientId: String?

    public init(
        transactionId: String? = nil, identityProvider: String? = nil, data: JSONValue? = nil, publicKey: RegistrationPublicKey? = nil,
        registrationId: String? = nil, clientId: String? = nil
    ) {
        self.transactionId = transactionId
        self.identityProvider = identityProvider
        self.data = data
        self.publicKey = publicKey
        self.registrationId = registrationId
        self.clientId = clientId
    }
}

/// 201: the user exists.
public struct CustomRegistrationCompleteResponse: Codable, Sendable, Hashable {
    public var userId: String
    public var username: String
    /// The hook's status (2000–2999).
    public var status: Int
    /// The hook's `data`, if it sent any.
    public var data: JSONValue?

    public init(userId: String, username: String, status: Int, data: JSONValue? = nil) {
        self.userId = userId
        self.username = username
        self.status = status
        self.data = data
    }
}

/// `POST /v1/custom-registrations/cancel` (answers 204).
public struct CustomRegistrationCancelRequest: Codable, Sendable, Hashable {
    public var transactionId: String
    /// The client that started the transaction (default: the deployment's default client).
    public var clientId: String?

    public init(transactionId: String, clientId: String? = nil) {
        self.transactionId = transactionId
        self.clientId = clientId
    }
}
