import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel

/// `APP_ATTEST`: the answer is the base64 attestation object Apple's `DCAppAttestService.attestKey` returned for
/// the key `keyId`, over clientDataHash = SHA-256 of the UTF-8 registration challenge. Verified offline (Apple's
/// steps 1–9, ``AppAttest/verifyAttestation(_:keyID:clientDataHash:apps:chains:at:trace:)``) against the App IDs
/// registered on the clients; the attested P-256 key becomes the user's device key (key id = the base64 key id),
/// signing in later with App Attest assertions. The username is a new random id.
public struct AppAttestProof: RegistrationProof {
    public var proofType: RegistrationMethod { .appAttest }

    let apps: EvidenceApps
    let challenges: RegistrationChallenges
    let chains: CertificateChainValidator
    let random: RandomSource

    public let maximumAnswerBytes: Int?

    public init(apps: EvidenceApps, challenges: RegistrationChallenges, settings: AttestationSettings, random: RandomSource) {
        self.apps = apps
        self.challenges = challenges
        self.chains = CertificateChainValidator(anchors: settings.appAttestAnchors)
        self.random = random
        maximumAnswerBytes = settings.maximumAnswerBytes
    }

    public func checkShape(_ request: RegistrationRequest) throws(LatchError) {
        guard request.publicKey == nil else {
            throw LatchError.invalidInput("App Attest registrations carry no publicKey: the attested key is the device key")
        }
        guard let keyId = request.keyId, let bytes = Data(base64Encoded: keyId), bytes.count == 32 else {
            throw LatchError.invalidInput("keyId must be the base64 App Attest key id (32 bytes)")
        }
        guard request.challenge != nil else { throw LatchError.invalidInput("challenge is required for APP_ATTEST registrations") }
    }

    public func verify(_ request: RegistrationRequest, now: Int64) async throws -> VerifiedRegistration {
        let consumes = try challenges.check(request.challenge, for: proofType, now: now)
        guard let object = Data(base64Encoded: request.answer, options: .ignoreUnknownCharacters) else {
            throw LatchError(.attestationMalformed, "answer is not base64")
        }
        let keyID = request.keyId.flatMap { Data(base64Encoded: $0) }.map(Array.init) ?? []
        let clientDataHash = Array(SHA256.hash(data: Array(request.challenge!.utf8)))
        var trace = AttestationTrace()
        let verified: AppAttest.VerifiedAttestation
        do {
            verified = try AppAttest.verifyAttestation(
                Array(object), keyID: keyID, clientDataHash: clientDataHash, apps: try await apps.snapshot().appAttest, chains: chains,
                at: Date(timeIntervalSince1970: TimeInterval(now)), trace: &trace)
        } catch let failure as AttestationFailure {
            throw LatchError(failure)
        }
        return VerifiedRegistration(
            username: random.uuid(), kind: .appAttest, deviceKey: (Data(keyID).base64EncodedString(), PublicKey(p256: verified.publicKey)),
            deviceKeyAttestation: DeviceKeyAttestation(type: proofType.rawValue, signCount: 0, receipt: Data(verified.receipt)),
            consumes: consumes)
    }
}

extension LatchError {
    /// An attestation failure: its code, with the failed step in the description.
    init(_ failure: AttestationFailure) {
        self.init(failure.code, "\(failure.step): \(failure.detail)")
    }
}
