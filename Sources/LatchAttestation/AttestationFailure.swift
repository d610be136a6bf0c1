import LatchModel

/// Why evidence was refused: a stable ``ErrorCode`` (one per kind of failed check) and the step that failed.
public struct AttestationFailure: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable code apps and operators branch on.
    public let code: ErrorCode
    /// The verification step that failed (as listed in ``AttestationTrace``).
    public let step: String
    /// A human-readable detail; never holds key material or secrets.
    public let detail: String

    public init(_ code: ErrorCode, step: String, _ detail: String) {
        self.code = code
        self.step = step
        self.detail = detail
    }

    public var description: String { "\(code.rawValue) at \(step): \(detail)" }

    public static func == (lhs: AttestationFailure, rhs: AttestationFailure) -> Bool { lhs.code == rhs.code && lhs.step == rhs.step }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(step)
    }
}

extension ErrorCode {
    /// The evidence is not well-formed: CBOR, ASN.1, JWE/JWS or base64 that cannot be read, or a field of the wrong
    /// type or size.
    public static let attestationMalformed = ErrorCode("attestation_malformed")
    /// The certificate chain does not verify to a trusted root at the verification time (signature, validity,
    /// CA constraints), or a signature over the evidence does not verify.
    public static let attestationUntrusted = ErrorCode("attestation_untrusted")
    /// The evidence does not bind the registration challenge (nonce, attestation challenge or request hash).
    public static let attestationChallengeMismatch = ErrorCode("attestation_challenge_mismatch")
    /// The attested key is not the key the request names (App Attest key id, credential id, registered key).
    public static let attestationKeyMismatch = ErrorCode("attestation_key_mismatch")
    /// The evidence names an app that is not registered with Latch (App ID, package name, signing certificate).
    public static let attestationAppMismatch = ErrorCode("attestation_app_mismatch")
    /// App Attest: the environment (development or production AAGUID) is not the app's.
    public static let attestationEnvironmentMismatch = ErrorCode("attestation_environment_mismatch")
    /// The signature counter is not the expected one (not 0 at attestation; not greater than the stored one later).
    public static let attestationCounterInvalid = ErrorCode("attestation_counter_invalid")
    /// Android key attestation: the security level or verified-boot state is below the deployment's policy.
    public static let attestationPolicyFailed = ErrorCode("attestation_policy_failed")
    /// A certificate of the chain is on the attestation status (revocation) list.
    public static let attestationRevoked = ErrorCode("attestation_revoked")
    /// The registration challenge is unknown, expired, already used or for another proof type.
    public static let invalidChallenge = ErrorCode("invalid_challenge")
}

/// The steps a verifier ran, in order, for `latch attestation verify --json` and for logs.
public struct AttestationTrace: Sendable {
    /// One step: its name, whether it passed, and what was compared.
    public struct Step: Sendable, Hashable {
        public var name: String
        public var ok: Bool
        public var detail: String
    }

    public private(set) var steps: [Step] = []

    public init() {}

    /// Records a passed step.
    public mutating func passed(_ name: String, _ detail: String = "") {
        steps.append(Step(name: name, ok: true, detail: detail))
    }

    /// Records a failed step and returns the failure to throw.
    public mutating func failed(_ name: String, _ code: ErrorCode, _ detail: String) -> AttestationFailure {
        steps.append(Step(name: name, ok: false, detail: detail))
        return AttestationFailure(code, step: name, detail)
    }

    /// Records the step as passed (with `passed`) when `check` holds, else throws `code` with `failure`.
    public mutating func require(
        _ name: String, _ check: Bool, else code: ErrorCode, _ failure: @autoclosure () -> String, passed detail: String = ""
    ) throws(AttestationFailure) {
        guard check else { throw failed(name, code, failure()) }
        passed(name, detail)
    }
}
