import LatchJOSE
import LatchModel

/// What a verified registration proof says about the user to create.
public struct VerifiedRegistration: Sendable {
    public var username: String
    public var kind: UserKind
    /// For federated users: the issuer that vouches for them, and their subject there.
    public var federatedIdentity: (issuer: String, subject: String)?
    /// Custom claims to keep on the user.
    public var claims: [String: JSONValue]
    /// The device sign-in key to register with the user.
    public var deviceKey: (keyID: String, key: PublicKey)?
    /// How the device key was attested, when it was.
    public var deviceKeyAttestation: DeviceKeyAttestation?
    /// The new user's id when the proof fixed it (a WebAuthn sign-up binds it as the user handle); else a new one.
    public var userID: String?
    /// The FIDO authenticator to register with the user (its `userID` is the new user's).
    public var authenticator: Authenticator?
    /// Consumed in the same transaction that creates the user.
    public var consumes: SingleUse
    /// Runs once the user is created (e.g. marking the device at Apple); its failure is the proof's to log.
    public var afterCommit: (@Sendable () async -> Void)?

    public init(
        username: String, kind: UserKind, federatedIdentity: (issuer: String, subject: String)? = nil, claims: [String: JSONValue] = [:],
        deviceKey: (keyID: String, key: PublicKey)? = nil, deviceKeyAttestation: DeviceKeyAttestation? = nil, userID: String? = nil,
        authenticator: Authenticator? = nil, consumes: SingleUse, afterCommit: (@Sendable () async -> Void)? = nil
    ) {
        self.userID = userID
        self.authenticator = authenticator
        self.afterCommit = afterCommit
        self.username = username
        self.kind = kind
        self.federatedIdentity = federatedIdentity
        self.claims = claims
        self.deviceKey = deviceKey
        self.deviceKeyAttestation = deviceKeyAttestation
        self.consumes = consumes
    }
}

/// One registration proof type (`challengeType`). A new proof type is a new type conforming to this,
/// registered with ``RegistrationService``.
public protocol RegistrationProof: Sendable {
    /// The `challengeType` this proof answers.
    var proofType: RegistrationMethod { get }
    /// Checks the shape of the request fields this proof type reads or forbids (`invalid_input`), before any
    /// lookup.
    func checkShape(_ request: RegistrationRequest) throws(LatchError)
    /// Verifies the proof at `now` (`invalid_proof` and the like) and says who to create.
    func verify(_ request: RegistrationRequest, now: Int64) async throws -> VerifiedRegistration
    /// The longest `answer` this proof type takes, bytes (nil: the deployment's token limit).
    var maximumAnswerBytes: Int? { get }
}

extension RegistrationProof {
    public var maximumAnswerBytes: Int? { nil }
}

extension RegistrationRequest {
    /// The device key the request carries, checked: a 1–128 printable `keyId` and a key of a supported algorithm.
    func checkedDeviceKey(required proofType: RegistrationMethod) throws(LatchError) -> (keyID: String, key: PublicKey) {
        guard let publicKey else { throw LatchError.invalidInput("publicKey is required for \(proofType) registrations") }
        return try publicKey.checked()
    }
}

extension RegistrationPublicKey {
    /// The key id and the parsed key, or `invalid_input` / `invalid_public_key`.
    func checked() throws(LatchError) -> (keyID: String, key: PublicKey) {
        let publicKey = self
        guard RegistrationService.isIdentifier(publicKey.keyId) else {
            throw LatchError.invalidInput("publicKey.keyId must be 1–128 printable characters")
        }
        guard let algorithm = JWSAlgorithm(rawValue: publicKey.algorithm) else {
            throw LatchError(.invalidPublicKey, "publicKey.algorithm must be RS256, ES256 or ES384")
        }
        do {
            return (publicKey.keyId, try PublicKey(pemOrBase64DER: publicKey.publicKey, algorithm: algorithm))
        } catch {
            throw LatchError(.invalidPublicKey, error.detail)
        }
    }
}
