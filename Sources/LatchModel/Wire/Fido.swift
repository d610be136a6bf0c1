/// `POST /v1/fido/authentication/options`.
public struct FidoAuthenticationOptionsRequest: Codable, Sendable, Hashable {
    /// The user to sign in; absent for a discoverable credential (passkey) chosen on the device.
    public var username: String?
    public init(username: String? = nil) { self.username = username }
}

/// An authenticator registered to the signed-in user (`GET /v1/me/authenticators`).
public struct FidoAuthenticatorInfo: Codable, Sendable, Hashable {
    public var id: String
    public var name: String
    /// The authenticator model's AAGUID (hex).
    public var aaguid: String
    public var format: String
    /// Whether the credential may be synced to other devices (a multi-device passkey).
    public var backupEligible: Bool
    public var createdAt: Int64
    public var lastUsedAt: Int64?

    public init(id: String, name: String, aaguid: String, format: String, backupEligible: Bool, createdAt: Int64, lastUsedAt: Int64?) {
        self.id = id
        self.name = name
        self.aaguid = aaguid
        self.format = format
        self.backupEligible = backupEligible
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}

/// `GET /v1/me/authenticators`.
public struct FidoAuthenticatorList: Codable, Sendable, Hashable {
    public var authenticators: [FidoAuthenticatorInfo]
    public init(authenticators: [FidoAuthenticatorInfo]) { self.authenticators = authenticators }
}

/// `PATCH /v1/me/authenticators/{id}`.
public struct FidoAuthenticatorPatch: Codable, Sendable, Hashable {
    public var name: String
    public init(name: String) { self.name = name }
}

extension GrantType {
    /// Sign-in with a WebAuthn assertion (`ceremony_id`, `credential`: an AuthenticationResponseJSON).
    public static let webauthn = "urn:latch:params:oauth:grant-type:webauthn"
}
