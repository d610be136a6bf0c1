import LatchJOSE
import LatchModel
import Logging

/// The refresh-token grant (RFC 6749 §6) with rotation and reuse detection (RFC 9700 §4.14.2): the session is
/// changed by ``RefreshRotation`` under its lock, in one step of the store.
public struct RefreshTokenGrant: TokenGrant {
    public var grantType: String { GrantType.refreshToken }

    let store: any SessionStore
    let minter: TokenMinter
    let refreshTokens: RefreshTokenCodec
    let tokens: TokenSettings
    let clock: LatchClock
    let logger: Logger
    /// Where an issuer login's (issuer, consumer) pairs are read, so refreshed tokens list them too.
    let consumers: (any IssuerLoginStore)?
    /// Makes the record of a reuse detection, which the store writes with the revocation.
    let audit: AuditRecorder?

    public init(
        store: any SessionStore, minter: TokenMinter, refreshTokens: RefreshTokenCodec, tokens: TokenSettings, clock: LatchClock,
        consumers: (any IssuerLoginStore)? = nil, audit: AuditRecorder? = nil, logger: Logger = Logger(label: "latch.refresh")
    ) {
        self.audit = audit
        self.consumers = consumers
        self.store = store
        self.minter = minter
        self.refreshTokens = refreshTokens
        self.tokens = tokens
        self.clock = clock
        self.logger = logger
    }

    /// The proof's `jti` is spent with the rotation, in one step of the store.
    public var spendsDPoPProof: Bool { true }

    public func exchange(_ request: TokenRequest) async throws -> TokenResponse {
        let token = try request.required("refresh_token")
        guard let (sessionID, generation) = refreshTokens.parse(token) else {
            throw LatchError.invalidGrant("the refresh token is invalid")
        }
        let now = clock.seconds()
        let decided = try await store.rotateRefreshToken(
            sessionID: sessionID, presented: generation, clientID: request.client.id, presentedKey: request.dpop?.thumbprint,
            spending: request.dpop.map(DPoPGate.spending), now: now, grace: tokens.refreshGrace,
            recordingReuse: audit?.reuseRecord(presented: generation, clientID: request.client.id))
        guard let (outcome, session, user) = decided else { throw LatchError.invalidGrant("the refresh token is invalid") }
        switch outcome {
        case .rotated, .reissued:
            let pairs = session.amr.contains(IssuerLoginGrant.method) ? try await consumers?.sessionConsumers(sessionID: session.id) : nil
            return try await minter.response(
                user: user, session: session,
                refreshToken: refreshTokens.token(sessionID: session.id, generation: session.generation), now: now, consumers: pairs,
                dpopKey: request.dpop?.thumbprint, idTokenAlgorithm: request.client.idTokenAlgorithm)
        case .unknown:
            throw LatchError.invalidGrant("the refresh token is invalid")
        case .inactive:
            throw LatchError.invalidGrant("the session has ended (signed out, revoked or expired)")
        case .wrongClient:
            throw LatchError.invalidGrant("the refresh token was issued to another client")
        case .replayedProof:
            throw LatchError(.invalidDPoPProof, "this DPoP proof was used before (its jti)")
        case .wrongKey:
            // RFC 9449 §5: a bound refresh token is refused without a proof of its key; nothing changes.
            throw LatchError(
                .invalidDPoPProof,
                request.dpop == nil ? "this refresh token is bound to a DPoP key: send a proof of it" : "this refresh token is bound to another DPoP key")
        case .reuseDetected:
            // The store revoked the family and recorded token.reuse_detected in one unit.
            logger.warning("refresh token reuse: family revoked", metadata: ["sid": "\(session.id)", "user": "\(session.userID)"])
            throw LatchError.invalidGrant("the refresh token was already used; the session is revoked", detail: LatchError.reuseDetectedDetail)
        }
    }
}
