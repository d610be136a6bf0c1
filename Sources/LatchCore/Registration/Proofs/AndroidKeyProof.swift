import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel

/// `ANDROID_KEY`: the device key was generated in Android Keystore with the registration challenge (its UTF-8
/// bytes) as attestation challenge; the answer is the key's certificate chain as a JSON array of base64 DER
/// certificates, leaf first. Verified offline (``AndroidKeyAttestation``) against Google's hardware attestation
/// roots and the package names and signing certificates registered on the clients. `publicKey.keyId` names the
/// key for sign-in (device-key assertions); `publicKey.publicKey`, when given, must be the attested key. The
/// username is a new random id.
public struct AndroidKeyProof: RegistrationProof {
    public var proofType: RegistrationMethod { .androidKey }

    let apps: EvidenceApps
    let challenges: RegistrationChallenges
    let chains: CertificateChainValidator
    let policy: AndroidKeyAttestation.Policy
    let random: RandomSource
    public let maximumAnswerBytes: Int?

    public init(apps: EvidenceApps, challenges: RegistrationChallenges, settings: AttestationSettings, random: RandomSource) {
        self.apps = apps
        self.challenges = challenges
        self.chains = CertificateChainValidator(anchors: settings.androidKeyAnchors, rules: AndroidKeyAttestation.chainRules)
        self.policy = settings.androidKeyPolicy
        self.random = random
        maximumAnswerBytes = settings.maximumAnswerBytes
    }

    public func checkShape(_ request: RegistrationRequest) throws(LatchError) {
        guard let key = request.publicKey, RegistrationService.isIdentifier(key.keyId) else {
            throw LatchError.invalidInput("publicKey.keyId (1–128 printable characters) names the attested key for sign-in")
        }
        guard request.challenge != nil else { throw LatchError.invalidInput("challenge is required for ANDROID_KEY registrations") }
    }

    public func verify(_ request: RegistrationRequest, now: Int64) async throws -> VerifiedRegistration {
        let consumes = try challenges.check(request.challenge, for: proofType, now: now)
        guard case .array(let items)? = try? JSONValue.parse(Data(request.answer.utf8)), !items.isEmpty, items.count <= AndroidKeyAttestation.chainRules.maximumLength
        else { throw LatchError(.attestationMalformed, "answer must be a JSON array of 1–8 base64 DER certificates, leaf first") }
        var chain: [[UInt8]] = []
        for item in items {
            guard let text = item.stringValue, let der = Data(base64Encoded: text) else {
                throw LatchError(.attestationMalformed, "answer must be a JSON array of base64 DER certificates")
            }
            chain.append(Array(der))
        }
        var trace = AttestationTrace()
        let verified: AndroidKeyAttestation.VerifiedKey
        do {
            verified = try AndroidKeyAttestation.verify(
                chain: chain, challenge: Array(request.challenge!.utf8), apps: try await apps.snapshot().androidDigests, policy: policy,
                chains: chains, at: Date(timeIntervalSince1970: TimeInterval(now)), trace: &trace)
        } catch let failure as AttestationFailure {
            throw LatchError(failure)
        }
        let keyID = request.publicKey!.keyId
        if let given = request.publicKey?.publicKey, !given.isEmpty {
            let key = try request.checkedDeviceKey(required: proofType).key
            guard key.derRepresentation == verified.publicKey.derRepresentation else {
                throw LatchError(.attestationKeyMismatch, "publicKey is not the attested key")
            }
        }
        return VerifiedRegistration(
            username: random.uuid(), kind: .androidKey, deviceKey: (keyID, verified.publicKey),
            deviceKeyAttestation: DeviceKeyAttestation(type: proofType.rawValue), consumes: consumes)
    }
}
