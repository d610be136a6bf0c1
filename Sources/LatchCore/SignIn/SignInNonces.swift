import LatchModel

/// Issues the nonces a device signs to sign in with its key (``DeviceKeySignIn``).
///
/// An unknown username gets a well-formed nonce too, with nothing stored: the answer does not reveal who is
/// registered, and the sign-in that follows fails at the token endpoint like any bad assertion.
public struct SignInNonces: Sendable {
    /// Every sign-in nonce starts with this, so the token endpoint knows a device assertion by its `jti`.
    public static let prefix = "lsn_"

    let store: any UserStore & UnitOfWork
    let settings: AssertionSettings
    let clock: LatchClock
    let random: RandomSource

    public init(store: any UserStore & UnitOfWork, settings: AssertionSettings, clock: LatchClock, random: RandomSource) {
        self.store = store
        self.settings = settings
        self.clock = clock
        self.random = random
    }

    public func issue(_ request: SignInChallengeRequest) async throws -> SignInChallengeResponse {
        guard !request.username.isEmpty, request.username.utf8.count <= 255 else {
            throw LatchError.invalidInput("username must be 1–255 bytes")
        }
        let nonce = Self.prefix + random.token()
        let now = clock.seconds()
        if let user = try await store.user(username: request.username) {
            let expiresAt = now.adding(seconds: settings.nonceLifetime)
            let keep = settings.maxOutstandingNonces
            try await store.write { $0.insertNonce(nonce, userID: user.id, expiresAt: expiresAt, keepNewest: keep) }
        }
        return SignInChallengeResponse(nonce: nonce, audience: settings.audience, expiresIn: Int(settings.nonceLifetime))
    }
}
