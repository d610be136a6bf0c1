import Crypto
import Foundation
import LatchJOSE
import LatchModel

/// Issues the challenges device attestation binds (`POST /v1/registrations/challenge`), and checks them at
/// registration.
///
/// Like sign-in nonces (``SignInNonces``) a challenge is stateless: `lrc_<random>.<expiry>.<MAC>`, the MAC
/// (HMAC-SHA256 under a key derived from the key-encryption key, shared by every replica) binding the random part,
/// the expiry and the proof type. Issuing one writes nothing; the registration consumes it as a single-use value in
/// the unit of work that creates the user, so a challenge registers at most one device, on any replica.
public struct RegistrationChallenges: Sendable {
    public static let prefix = "lrc_"
    /// The namespace in which a used challenge is remembered (until it expires).
    static let consumedIssuer = "latch:registration-challenge"
    /// The proof types that take a challenge.
    public static let types: Set<RegistrationMethod> = [.appAttest, .androidKey, .playIntegrity]

    private let format: MACToken
    let lifetime: Int64
    let clock: LatchClock
    let random: RandomSource

    public init(key: SymmetricKey, lifetime: Int64, clock: LatchClock, random: RandomSource) {
        format = MACToken(prefix: Self.prefix, domain: "lrc1", maximumLength: 128, key: key)
        self.lifetime = lifetime
        self.clock = clock
        self.random = random
    }

    /// A new challenge for `request.challengeType`, which must be a type that takes one and is `accepted` here.
    public func issue(_ request: RegistrationChallengeRequest, accepted: Set<RegistrationMethod>) throws -> RegistrationChallengeResponse {
        guard Self.types.contains(request.challengeType) else {
            throw LatchError(.unsupportedChallengeType, "\(request.challengeType.rawValue.prefix(32)) registrations take no challenge")
        }
        guard accepted.contains(request.challengeType) else {
            throw LatchError(.challengeTypeDisabled, "\(request.challengeType.rawValue) registration is not enabled on this deployment")
        }
        let expiresAt = clock.seconds().adding(seconds: lifetime)
        let random = random.timeOrderedToken(now: clock.now())
        let challenge = format.seal([random, String(expiresAt)], bound: [request.challengeType.rawValue])
        return RegistrationChallengeResponse(challenge: challenge, expiresIn: Int(lifetime))
    }

    /// The single-use value of `challenge` when Latch issued it for `type` and it is still valid at `now`; else
    /// `invalid_challenge`.
    public func check(_ challenge: String?, for type: RegistrationMethod, now: Int64) throws(LatchError) -> SingleUse {
        guard let challenge, !challenge.isEmpty else { throw LatchError(.invalidInput, "challenge is required for \(type.rawValue) registrations") }
        guard challenge.utf8.count <= 128, challenge.hasPrefix(Self.prefix) else {
            throw LatchError(.invalidChallenge, "the challenge is not one Latch issued")
        }
        guard let fields = format.open(challenge, fieldCount: 2, bound: [type.rawValue]), !fields[0].isEmpty,
            let expiresAt = MACToken.integer(fields[1])
        else { throw LatchError(.invalidChallenge, "the challenge is not one Latch issued for \(type.rawValue) registrations") }
        guard now < expiresAt else { throw LatchError(.invalidChallenge, "the challenge has expired; ask for a new one") }
        return .jti(challenge, issuer: Self.consumedIssuer, until: expiresAt)
    }
}
