import LatchJOSE
import Logging

/// Token revocation (RFC 7009): revokes the session of a refresh token or of one of Latch's access tokens.
/// Unknown tokens are not an error (§2.2); a token of another client is refused (§2.1).
public struct TokenRevocation: Sendable {
    let store: any SessionStore & UnitOfWork
    let refreshTokens: RefreshTokenCodec
    let accessTokens: AccessTokenGate
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(
        store: any SessionStore & UnitOfWork, refreshTokens: RefreshTokenCodec, accessTokens: AccessTokenGate,
        clock: LatchClock, random: RandomSource, logger: Logger = Logger(label: "latch.revocation")
    ) {
        self.random = random
        self.store = store
        self.refreshTokens = refreshTokens
        self.accessTokens = accessTokens
        self.clock = clock
        self.logger = logger
    }

    public func revoke(token: String, clientID: String) async throws {
        guard !token.isEmpty, token.utf8.count <= ParsedJWS.defaultMaximumLength else { return }
        let session: Session
        if token.hasPrefix(RefreshTokenCodec.prefix) {
            guard let (sessionID, _) = refreshTokens.parse(token), let found = try await store.session(id: sessionID) else { return }
            session = found
        } else {
            // An access token that is not (or no longer) valid is "unknown": nothing to do. Store failures
            // still propagate, so an unreachable database never looks like a successful revocation.
            do {
                session = try await accessTokens.authenticate(accessToken: token).session
            } catch is LatchError {
                return
            }
        }
        guard session.clientID == clientID else { throw LatchError.invalidClient("the token was issued to another client") }
        guard session.revokedAt == nil else { return }
        // Sign-out: the session ends with its record.
        let event = SecurityEvent.now(
            .loggedOut, actor: "user", userID: session.userID, sessionID: session.id, clientID: clientID, detail: "token revocation", clock: clock,
            random: random)
        let now = clock.seconds()
        _ = try await store.count { transaction in
            let revoked = transaction.revokeSession(id: session.id, at: now)
            transaction.record(event)
            return revoked
        }
        logger.info("session revoked", metadata: ["sid": "\(session.id)"])
    }
}
