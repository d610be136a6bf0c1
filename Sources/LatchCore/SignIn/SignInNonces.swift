import Crypto
import Foundation
import LatchJOSE
import LatchModel

/// Issues the nonces a device signs to sign in with its key (``DeviceKeySignIn``).
///
/// A nonce is stateless: `lsn_<random>.<expiry>.<MAC>`, the MAC (HMAC-SHA256 under a key derived from the
/// deployment's key-encryption key, so every replica shares it) binding the random part, the expiry and the
/// username it was asked for. Issuing one reads and writes nothing, so:
/// - the answer and its timing are the same for registered and unknown usernames (nothing is looked up);
/// - nobody can evict anybody's nonce by asking for many (nothing is stored to evict);
/// - only nonces Latch issued are accepted, each once: the sign-in consumes it as a single-use value in the unit
///   of work that opens the session.
public struct SignInNonces: Sendable {
    /// Every sign-in nonce starts with this, so the token endpoint knows a device assertion by its `jti`.
    public static let prefix = "lsn_"
    /// The namespace in which a used nonce is remembered (until it expires).
    public static let consumedIssuer = "latch:sign-in-nonce"

    let codec: SignInNonceCodec
    let settings: AssertionSettings
    let clock: LatchClock
    let random: RandomSource

    public init(codec: SignInNonceCodec, settings: AssertionSettings, clock: LatchClock, random: RandomSource) {
        self.codec = codec
        self.settings = settings
        self.clock = clock
        self.random = random
    }

    public func issue(_ request: SignInChallengeRequest) async throws -> SignInChallengeResponse {
        // The nonce binds the username in its normalised form, the form the sign-in compares.
        let username: String
        do {
            username = try Usernames.native(request.username)
        } catch {
            throw LatchError.invalidInput("username \(error)")
        }
        let expiresAt = clock.seconds().adding(seconds: settings.nonceLifetime)
        let nonce = codec.nonce(username: username, random: random.timeOrderedToken(now: clock.now()), expiresAt: expiresAt)
        return SignInChallengeResponse(nonce: nonce, audience: settings.audience, expiresIn: Int(settings.nonceLifetime))
    }
}

/// Makes and checks sign-in nonces: `lsn_<random>.<expiry>.<MAC>` with MAC = HMAC-SHA256(key,
/// "lsn1|<random>|<expiry>|<username>").
public struct SignInNonceCodec: Sendable {
    private let format: MACToken

    public init(key: SymmetricKey) { format = MACToken(prefix: SignInNonces.prefix, domain: "lsn1", maximumLength: 128, key: key) }

    func nonce(username: String, random: String, expiresAt: Int64) -> String {
        format.seal([random, String(expiresAt)], bound: [username])
    }

    /// The expiry of `nonce` when Latch issued it for `username` and it is still valid at `now`; nil otherwise.
    public func expiry(of nonce: String, username: String, now: Int64) -> Int64? {
        guard let fields = format.open(nonce, fieldCount: 2, bound: [username]), !fields[0].isEmpty, let expiresAt = MACToken.integer(fields[1])
        else { return nil }
        return now < expiresAt ? expiresAt : nil
    }
}
