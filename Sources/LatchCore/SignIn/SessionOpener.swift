import LatchJOSE
import LatchModel
import Logging

/// Opens the session of a verified sign-in and answers with its tokens.
///
/// One unit of work: consume the proof's single-use value, hold the user against deletion, update kept
/// claims, insert the session. The single-use value goes first so that, across replicas, a concurrent
/// duplicate waits on it and then finds it spent.
public struct SessionOpener: Sendable {
    let store: any UnitOfWork & UserStore
    let minter: TokenMinter
    let refreshTokens: RefreshTokenCodec
    let tokens: TokenSettings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(
        store: any UnitOfWork & UserStore, minter: TokenMinter, refreshTokens: RefreshTokenCodec, tokens: TokenSettings,
        clock: LatchClock, random: RandomSource, logger: Logger = Logger(label: "latch.sign-in")
    ) {
        self.store = store
        self.minter = minter
        self.refreshTokens = refreshTokens
        self.tokens = tokens
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// Why a sign-in's unit of work was refused.
    enum Refusal: Error {
        case replayed, userGone, counter
    }

    /// Opens a session for a verified sign-in; with a DPoP proof, its tokens are bound to the proof's key (for a
    /// client with attested DPoP, only when that key is the device key that signed in: `amr` then adds `hwk` for an
    /// attested key, `swk` for a test key).
    ///
    /// The sign-in was verified: a refusal from here names its user (``LatchError/verifiedSubject``).
    public func open(_ signIn: VerifiedSignIn, client: Client, scope: String, now: Int64, dpop: DPoP.Proof? = nil) async throws -> TokenResponse {
        do {
            return try await openVerified(signIn, client: client, scope: scope, now: now, dpop: dpop)
        } catch let error as LatchError {
            throw error.afterVerifying(signIn.user.id)
        }
    }

    func openVerified(_ signIn: VerifiedSignIn, client: Client, scope: String, now: Int64, dpop: DPoP.Proof?) async throws -> TokenResponse {
        var amr = signIn.amr
        if let vouched = signIn.vouchedDPoPKey, vouched != dpop?.thumbprint {
            throw LatchError(.invalidDPoPProof, "the sign-in vouched for another DPoP key (dpop_jkt) than the proof's")
        }
        if let dpop, (client.evidence.dpop ?? .default).attested {
            let method: String
            if let deviceKey = signIn.deviceKey, deviceKey.key.thumbprint == dpop.thumbprint {
                method = deviceKey.attestation == nil ? "swk" : "hwk"
            } else if signIn.vouchedDPoPKey == dpop.thumbprint {
                method = "hwk"
            } else {
                throw LatchError(
                    .invalidDPoPProof,
                    "this client binds tokens only to the device's attested key: the device sign-in key, or a key its App Attest assertion vouched for")
            }
            if !amr.contains(method) { amr.append(method) }
        }
        let session = Session(
            id: random.timeOrderedID(now: clock.now()), userID: signIn.user.id, clientID: client.id, authTime: now,
            amr: amr, scope: scope, createdAt: now, expiresAt: now.adding(seconds: tokens.refreshFamilyLifetime), dpopJKT: dpop?.thumbprint)
        let event = SecurityEvent.now(
            .signInSucceeded, actor: "user", userID: session.userID, sessionID: session.id, clientID: client.id,
            detail: "amr=\(amr.joined(separator: ","))", clock: clock, random: random)
        do {
            try await store.write {
                Self.start(session, signIn, on: $0)
                $0.record(event)
            }
        } catch Refusal.replayed {
            // A deleted user's nonces go with them: say what really happened.
            guard try await store.user(id: signIn.user.id) != nil else { throw LatchError.invalidGrant("this user is not registered") }
            throw LatchError.invalidGrant("the assertion was used before, or its nonce is unknown or expired")
        } catch Refusal.userGone {
            throw LatchError.invalidGrant("this user is not registered")
        } catch Refusal.counter {
            throw LatchError.invalidGrant(
                "the counter is not greater than the last accepted one, or a concurrent attempt changed the authenticator (a replayed or concurrent assertion)")
        }
        var user = signIn.user
        if let updated = signIn.updatedClaims { user.claims = updated }
        logger.debug("signed in", metadata: ["user": "\(user.id)", "sid": "\(session.id)"])
        return try await minter.response(
            user: user, session: session, refreshToken: refreshTokens.token(sessionID: session.id, generation: session.generation),
            now: now, idTokenAlgorithm: client.idTokenAlgorithm)
    }

    static func start(
        _ session: Session, _ signIn: VerifiedSignIn, on transaction: some SingleUseWrites & UserWrites & SessionWrites & AuthenticatorWrites
    ) {
        transaction.consume(signIn.consumes, ifUnavailable: Refusal.replayed)
        transaction.requireUser(id: session.userID, ifMissing: Refusal.userGone)
        if let advance = signIn.advancesSignCount {
            transaction.advanceSignCount(userID: session.userID, keyID: advance.keyID, to: advance.signCount, ifNotGreater: Refusal.counter)
        }
        if let use = signIn.usesAuthenticator {
            transaction.recordAuthenticatorUse(
                id: use.id, signCount: use.signCount, failedAttempts: use.failedAttempts, at: session.authTime, ifChanged: Refusal.counter)
        }
        if let claims = signIn.updatedClaims { transaction.updateClaims(userID: session.userID, claims: claims) }
        transaction.insertSession(session)
    }
}
