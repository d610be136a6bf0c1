import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel

/// `PLAY_INTEGRITY`: the answer is a Play Integrity token for app `packageName`, requested with a request hash that
/// binds the registration: in `binding` mode (the default) base64url(SHA-256(UTF-8 challenge ‖ SPKI DER of the
/// registered public key)); in `deviceId` mode (Sudo's Android SDK, only when the app is configured for it) the
/// request's `deviceId`. Decrypted and verified locally with the app's Play Console keys (``PlayIntegrity``). The
/// request's `publicKey` becomes the device key. The username is a new random id.
///
/// In `binding` mode the challenge is spent with the registration; in `deviceId` mode, which binds no challenge,
/// the token itself is spent (a verdict registers once) and its freshness bounds replays.
public struct PlayIntegrityProof: RegistrationProof {
    public var proofType: RegistrationMethod { .playIntegrity }

    let apps: EvidenceApps
    let challenges: RegistrationChallenges
    let policy: PlayIntegrity.Policy
    let random: RandomSource
    public let maximumAnswerBytes: Int?

    public init(apps: EvidenceApps, challenges: RegistrationChallenges, settings: AttestationSettings, random: RandomSource) {
        self.apps = apps
        self.challenges = challenges
        self.policy = settings.playIntegrityPolicy
        self.random = random
        maximumAnswerBytes = settings.maximumAnswerBytes
    }

    public func checkShape(_ request: RegistrationRequest) throws(LatchError) {
        guard let packageName = request.packageName, EvidenceRules.isPackageName(packageName) else {
            throw LatchError.invalidInput("packageName (the app's package name) is required for PLAY_INTEGRITY registrations")
        }
        guard request.publicKey != nil else { throw LatchError.invalidInput("publicKey is required for PLAY_INTEGRITY registrations") }
    }

    public func verify(_ request: RegistrationRequest, now: Int64) async throws -> VerifiedRegistration {
        let deviceKey = try request.checkedDeviceKey(required: proofType)
        let packageName = request.packageName!
        let snapshot = try await apps.snapshot()
        guard let entry = snapshot.android[packageName] else {
            throw LatchError(.attestationAppMismatch, "no registered app has package \(packageName)")
        }
        guard let app = snapshot.playIntegrity[packageName] else {
            throw LatchError(.attestationAppMismatch, "the app \(packageName) has no Play Integrity keys registered")
        }
        let requestHash: String
        let consumes: SingleUse
        if entry.settings.requestHashMode == "deviceId" {
            guard let deviceId = request.deviceId, !deviceId.isEmpty, deviceId.utf8.count <= 128 else {
                throw LatchError.invalidInput("deviceId (the request hash this app sends) is required for its PLAY_INTEGRITY registrations")
            }
            requestHash = deviceId
            consumes = .jti(
                Base64URL.encode(Data(SHA256.hash(data: Array(request.answer.utf8)))), issuer: "latch:play-integrity",
                until: now.adding(seconds: policy.freshness + 60))
        } else {
            consumes = try challenges.check(request.challenge, for: proofType, now: now)
            requestHash = PlayIntegrity.bindingRequestHash(challenge: request.challenge!, publicKeySPKI: Array(deviceKey.key.derRepresentation))
        }
        var trace = AttestationTrace()
        do {
            _ = try PlayIntegrity.verify(
                request.answer, requestHash: requestHash, app: app, policy: policy, now: Date(timeIntervalSince1970: TimeInterval(now)), trace: &trace)
        } catch {
            throw LatchError(error)
        }
        return VerifiedRegistration(
            username: random.uuid(), kind: .playIntegrity, deviceKey: deviceKey,
            deviceKeyAttestation: DeviceKeyAttestation(type: proofType.rawValue), consumes: consumes)
    }
}
