/// How a registration proves itself: the `challengeType` of the Sudo Platform registration request (an attestation,
/// a signed JWT, a WebAuthn ceremony — not always a challenge, hence the name).
public struct RegistrationMethod: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// Custom federated sign-on: the answer is a JWT signed by a registered issuer.
    public static let fsso = RegistrationMethod(rawValue: "FSSO")
    /// A JWT signed by an admin-issued test registration key.
    public static let test = RegistrationMethod(rawValue: "TEST")
    /// Apple DeviceCheck.
    public static let deviceCheck = RegistrationMethod(rawValue: "DEVICE_CHECK")
    /// Apple App Attest: the answer is the base64 attestation object of the device key `keyId`.
    public static let appAttest = RegistrationMethod(rawValue: "APP_ATTEST")
    /// Google Play Integrity: the answer is the integrity token binding the challenge and the device key.
    public static let playIntegrity = RegistrationMethod(rawValue: "PLAY_INTEGRITY")
    /// Android Keystore key attestation: the answer is a JSON array of base64 DER certificates, leaf first.
    public static let androidKey = RegistrationMethod(rawValue: "ANDROID_KEY")
    /// Passwordless sign-up: the answer is `{ceremonyId, credential, name?}` (JSON) completing a WebAuthn
    /// registration ceremony from `POST /v1/fido/sign-up/options`.
    public static let webauthn = RegistrationMethod(rawValue: "WEBAUTHN")
}

/// ``RegistrationMethod``'s name in 0.1.0 (after the wire's `challengeType`).
@available(*, deprecated, renamed: "RegistrationMethod")
public typealias ChallengeType = RegistrationMethod

/// A device sign-in public key as sent with a registration.
public struct RegistrationPublicKey: Codable, Sendable, Hashable {
    /// The key's id, chosen by the device; the `kid` of its sign-in assertions.
    public var keyId: String
    /// `RS256` or `ES256`.
    public var algorithm: String
    /// PEM (PKCS#1 `RSA PUBLIC KEY` or SPKI `PUBLIC KEY`) or base64 of the DER.
    public var publicKey: String

    public init(keyId: String, algorithm: String, publicKey: String) {
        self.keyId = keyId
        self.algorithm = algorithm
        self.publicKey = publicKey
    }
}

/// `POST /v1/registrations`.
public struct RegistrationRequest: Codable, Sendable, Hashable {
    /// How the registration proves itself.
    public var challengeType: RegistrationMethod
    /// The proof: a JWT for `FSSO` and `TEST`, an attestation for the device types.
    public var answer: String
    /// An idempotency key chosen by the client (a UUID): a retry with the same id and proof returns the same user.
    public var registrationId: String?
    /// The device sign-in key (all types but `FSSO`).
    public var publicKey: RegistrationPublicKey?
    /// Device identifier (informational).
    public var deviceId: String?
    /// iOS build type (informational).
    public var buildType: String?
    /// Android package name (Play Integrity: the app the token must be for).
    public var packageName: String?
    /// The registration challenge (`POST /v1/registrations/challenge`) the evidence binds (device attestation types).
    public var challenge: String?
    /// App Attest: the base64 key id (SHA-256 of the attested key) the app got from `generateKey`.
    public var keyId: String?
    /// iOS identifierForVendor (DeviceCheck, informational).
    public var vendorId: String?

    public init(
        challengeType: RegistrationMethod, answer: String, registrationId: String? = nil,
        publicKey: RegistrationPublicKey? = nil, deviceId: String? = nil, buildType: String? = nil,
        packageName: String? = nil, challenge: String? = nil, keyId: String? = nil, vendorId: String? = nil
    ) {
        self.challengeType = challengeType
        self.answer = answer
        self.registrationId = registrationId
        self.publicKey = publicKey
        self.deviceId = deviceId
        self.buildType = buildType
        self.packageName = packageName
        self.challenge = challenge
        self.keyId = keyId
        self.vendorId = vendorId
    }
}

/// `POST /v1/registrations/challenge`.
public struct RegistrationChallengeRequest: Codable, Sendable, Hashable {
    /// The proof type the challenge is for.
    public var challengeType: RegistrationMethod
    public init(challengeType: RegistrationMethod) { self.challengeType = challengeType }
}

/// A single-use server nonce the registration's evidence must bind.
public struct RegistrationChallengeResponse: Codable, Sendable, Hashable {
    public var challenge: String
    /// Seconds until it expires.
    public var expiresIn: Int
    public init(challenge: String, expiresIn: Int) {
        self.challenge = challenge
        self.expiresIn = expiresIn
    }
}

/// The answer to a registration.
public struct RegistrationResponse: Codable, Sendable, Hashable {
    /// The stable user id (the `sub` of Latch's tokens).
    public var userId: String
    /// The name to sign in with.
    public var username: String
    /// For a `WEBAUTHN` sign-up: the id of the user's first authenticator.
    public var authenticatorId: String?

    public init(userId: String, username: String, authenticatorId: String? = nil) {
        self.userId = userId
        self.username = username
        self.authenticatorId = authenticatorId
    }
}

/// `POST /v1/sign-in/challenge`.
public struct SignInChallengeRequest: Codable, Sendable, Hashable {
    /// The username to sign in.
    public var username: String
    public init(username: String) { self.username = username }
}

/// A nonce to sign: the `jti` of the device's sign-in assertion.
public struct SignInChallengeResponse: Codable, Sendable, Hashable {
    /// Single-use nonce.
    public var nonce: String
    /// The `aud` the assertion must carry.
    public var audience: String
    /// Seconds until the nonce expires.
    public var expiresIn: Int

    public init(nonce: String, audience: String, expiresIn: Int) {
        self.nonce = nonce
        self.audience = audience
        self.expiresIn = expiresIn
    }
}
