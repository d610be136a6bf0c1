import LatchModel

/// Issues sign-in nonces for device-key sign-in (REFERENCE §4 step 1).
///
/// An unknown username gets a well-formed nonce too, with nothing stored: the answer does not reveal who is
/// registered, and the sign-in that follows fails at the token endpoint like any bad assertion.
public struct ChallengeService: Sendable {
    let store: any (UserStore & ChallengeStore)
    let settings: AssertionSettings
    let clock: LatchClock
    let random: RandomSource

    public init(store: any (UserStore & ChallengeStore), settings: AssertionSettings, clock: LatchClock, random: RandomSource) {
        self.store = store
        self.settings = settings
        self.clock = clock
        self.random = random
    }

    public func challenge(_ request: SignInChallengeRequest) async throws -> SignInChallengeResponse {
        guard !request.username.isEmpty, request.username.utf8.count <= 255 else {
            throw LatchError.invalidInput("username must be 1–255 bytes")
        }
        let nonce = random.token()
        let now = clock.seconds()
        if let user = try await store.user(username: request.username) {
            try await store.insertNonce(
                nonce, userID: user.id, expiresAt: now + settings.nonceLifetime,
                maxOutstanding: settings.maxOutstandingNonces)
        }
        return SignInChallengeResponse(nonce: nonce, audience: settings.audience, expiresIn: Int(settings.nonceLifetime))
    }
}
