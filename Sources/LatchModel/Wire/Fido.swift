/// `POST /v1/fido/authentication/options`.
public struct FidoAuthenticationOptionsRequest: Codable, Sendable, Hashable {
    /// The user to sign in; absent for a discoverable credential (passkey) chosen on the device.
    public var username: String?
    public init(username: String? = nil) { self.username = username }
}

/// `POST /v1/fido/sign-up/options`: passwordless sign-up.
public struct FidoSignUpOptionsRequest: Codable, Sendable, Hashable {
    /// The new user's username; absent: the new user's id.
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
    /// The credential id (base64url), which the device holding it knows.
    public var credentialId: String?
    /// For a PIN authenticator: its protection status at the server.
    public var pinStatus: FidoPinStatus?

    public init(
        id: String, name: String, aaguid: String, format: String, backupEligible: Bool, createdAt: Int64, lastUsedAt: Int64?,
        credentialId: String? = nil, pinStatus: FidoPinStatus? = nil
    ) {
        self.id = id
        self.name = name
        self.aaguid = aaguid
        self.format = format
        self.backupEligible = backupEligible
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.credentialId = credentialId
        self.pinStatus = pinStatus
    }
}

/// A PIN authenticator's protection status, counted by the server: `unlocked`, `lastAttemptFailed` (with the tries
/// left and the seconds to wait before the next) or `lockedOut` (until an admin unlocks it).
public struct FidoPinStatus: Codable, Sendable, Hashable {
    public static let unlocked = "unlocked"
    public static let lastAttemptFailed = "lastAttemptFailed"
    public static let lockedOut = "lockedOut"

    /// `unlocked`, `lastAttemptFailed` or `lockedOut`.
    public var state: String
    /// Wrong PINs still allowed before the lockout.
    public var remainingTries: Int
    /// Seconds before the next attempt is accepted (0: now).
    public var coolDown: Int64
    /// Whether the authenticator is bound to its device by a PIN binding key (docs/fido.md, "PIN binding"): `false`
    /// for one registered before binding, which is never locked out (failures only cool it down) and should be
    /// re-enrolled; absent from servers older than binding.
    public var bound: Bool?

    public init(state: String, remainingTries: Int, coolDown: Int64, bound: Bool? = nil) {
        self.state = state
        self.remainingTries = remainingTries
        self.coolDown = coolDown
        self.bound = bound
    }
}

/// `POST /v1/fido/authenticators/status {credentialId}`: a device asks for its PIN authenticator's status before a
/// ceremony.
public struct FidoStatusRequest: Codable, Sendable, Hashable {
    /// The credential id, base64url.
    public var credentialId: String
    public init(credentialId: String) { self.credentialId = credentialId }
}

/// `GET /v1/fido/policy`: what the server accepts, for the SDK's authenticator selector and PIN enroller.
public struct FidoPolicy: Codable, Sendable, Hashable {
    public struct Pin: Codable, Sendable, Hashable {
        public var minLength: Int
        public var maxLength: Int
        /// Wrong PINs before the lockout.
        public var maxAttempts: Int
        /// Seconds to wait after the 1st, 2nd, … wrong PIN (the last entry repeats).
        public var coolDowns: [Int64]
        public init(minLength: Int, maxLength: Int, maxAttempts: Int, coolDowns: [Int64]) {
            self.minLength = minLength
            self.maxLength = maxLength
            self.maxAttempts = maxAttempts
            self.coolDowns = coolDowns
        }
    }

    public var rpId: String
    /// `required` or `preferred`.
    public var userVerification: String
    /// AAGUIDs (lower-case hex, 32 digits) accepted; empty: any not denied.
    public var allowedAaguids: [String]
    public var deniedAaguids: [String]
    /// Whether an attestation chaining to a trust anchor is required.
    public var attestationRequired: Bool
    public var maxAuthenticatorsPerUser: Int
    public var pin: Pin

    public init(
        rpId: String, userVerification: String, allowedAaguids: [String], deniedAaguids: [String], attestationRequired: Bool,
        maxAuthenticatorsPerUser: Int, pin: Pin
    ) {
        self.rpId = rpId
        self.userVerification = userVerification
        self.allowedAaguids = allowedAaguids
        self.deniedAaguids = deniedAaguids
        self.attestationRequired = attestationRequired
        self.maxAuthenticatorsPerUser = maxAuthenticatorsPerUser
        self.pin = pin
    }
}

/// The authenticator models Latch's SDK implements, by AAGUID (lower-case hex). The server reads the model to say
/// in `amr` what was used and to count PIN failures; the SDK's selector picks among them.
public enum LatchAuthenticatorModel: String, CaseIterable, Codable, Sendable {
    /// A PIN authenticator: the private key is derived from the PIN (scrypt) and a device-held salt.
    case pin = "4c41544348004000800050494e000001"
    /// A Secure Enclave key behind Face ID (Apple).
    case face = "4c415443480040008000464143450001"
    /// A Secure Enclave key behind Touch ID (Apple), or a fingerprint-bound hardware key.
    case fingerprint = "4c415443480040008000465054000001"
    /// A software key behind a software user verifier (Linux; development and tests).
    case software = "4c415443480040008000535754000001"

    /// The AAGUID's 16 bytes.
    public var aaguid: [UInt8] {
        var bytes: [UInt8] = []
        var index = rawValue.startIndex
        while index < rawValue.endIndex {
            let next = rawValue.index(index, offsetBy: 2)
            bytes.append(UInt8(rawValue[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }

    /// RFC 8176 authentication method references a sign-in with this model adds.
    public var methods: [String] {
        switch self {
        case .pin: ["pin", "swk"]
        case .face: ["face", "hwk"]
        case .fingerprint: ["fpt", "hwk"]
        case .software: ["swk"]
        }
    }
}

/// `POST /v1/fido/pin-change/options {authenticatorId}`.
public struct FidoPinChangeOptionsRequest: Codable, Sendable, Hashable {
    public var authenticatorId: String
    public init(authenticatorId: String) { self.authenticatorId = authenticatorId }
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

/// `POST /v1/fido/registration/options`, `/v1/fido/sign-up/options`, the console's passkey enrollment: a registration
/// ceremony, `{ceremonyId, publicKey}`; the credential goes back with the ceremony id.
public struct FidoCreationOptions: Codable, Sendable, Hashable {
    public var ceremonyId: String
    public var publicKey: PublicKeyCredentialCreationOptionsJSON

    public init(ceremonyId: String, publicKey: PublicKeyCredentialCreationOptionsJSON) {
        self.ceremonyId = ceremonyId
        self.publicKey = publicKey
    }

    /// The options as a JSON value. Traps only when `publicKey.extensions` holds a number JSON cannot carry (NaN, an
    /// infinity), which a relying party never sends.
    public var json: JSONValue { FidoOptionsJSON.value(self) }
}

/// `POST /v1/fido/authentication/options`, `/v1/fido/pin-change/options`, the console's sign-in: an authentication
/// ceremony, `{ceremonyId, publicKey}`; the assertion goes back with the ceremony id.
public struct FidoRequestOptions: Codable, Sendable, Hashable {
    public var ceremonyId: String
    public var publicKey: PublicKeyCredentialRequestOptionsJSON

    public init(ceremonyId: String, publicKey: PublicKeyCredentialRequestOptionsJSON) {
        self.ceremonyId = ceremonyId
        self.publicKey = publicKey
    }

    /// The options as a JSON value (see ``FidoCreationOptions/json``).
    public var json: JSONValue { FidoOptionsJSON.value(self) }
}

enum FidoOptionsJSON {
    static func value(_ options: some Encodable) -> JSONValue {
        do {
            return try JSONValue(encoding: options)
        } catch {
            preconditionFailure("WebAuthn options that JSON cannot carry: \(error)")
        }
    }
}
