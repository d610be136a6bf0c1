import LatchJOSE
import LatchModel

/// Builds and signs the ID and access tokens of a token response.
public struct TokenMinter: Sendable {
    let keys: SigningKeyRing
    let settings: TokenSettings
    let random: RandomSource

    public init(keys: SigningKeyRing, settings: TokenSettings, random: RandomSource) {
        self.keys = keys
        self.settings = settings
        self.random = random
    }

    /// Claim names Latch sets itself; a custom claim may never take one of them.
    public static let reservedClaims: Set<String> = [
        "iss", "sub", "aud", "exp", "iat", "nbf", "jti", "auth_time", "amr", "acr", "azp", "sid", "nonce",
        "at_hash", "c_hash", "username", "client_id", "scope", "typ", "cnf", "cty", "events", ConsumerPair.claimName,
    ]

    /// The token response for a session at `now`, carrying `refreshToken`; an issuer login's tokens list its
    /// `consumers`. The access token is bound (`cnf.jkt`, `token_type: DPoP`) to `dpopKey` — the session's binding,
    /// or the key a refresh of an unbound session proved. The ID token is signed with `idTokenAlgorithm` (the client's
    /// `idTokenSignedResponseAlg`), else like the access token with the deployment's algorithm.
    public func response(
        user: User, session: Session, refreshToken: String, now: Int64, consumers: [ConsumerPair]? = nil, dpopKey: String? = nil,
        nonce: String? = nil, idTokenAlgorithm: JWSAlgorithm? = nil
    ) async throws -> TokenResponse {
        let signer = keys.signer
        var idSigner = signer
        if let idTokenAlgorithm, idTokenAlgorithm != signer.key.algorithm { idSigner = try await keys.signer(for: idTokenAlgorithm, random: random) }
        var idClaims = idTokenClaims(user: user, session: session, now: now)
        idClaims.consumers = consumers
        idClaims.nonce = nonce
        var accessClaims = accessTokenClaims(user: user, session: session, now: now)
        accessClaims.consumers = consumers
        let bound = session.dpopJKT ?? dpopKey
        accessClaims.confirmationKey = bound
        let idToken = try idSigner.sign(claimsJSON: idClaims.json, type: "JWT")
        let accessToken = try signer.sign(claimsJSON: accessClaims.json, type: "at+jwt")
        return TokenResponse(
            accessToken: accessToken, tokenType: bound == nil ? "Bearer" : "DPoP", expiresIn: Int(settings.accessTokenLifetime),
            refreshToken: refreshToken, refreshExpiresIn: Int(max(0, session.expiresAt - now)), idToken: idToken, scope: session.scope)
    }

    func idTokenClaims(user: User, session: Session, now: Int64) -> IDTokenClaims {
        IDTokenClaims(
            issuer: settings.issuer, subject: user.id, audience: session.clientID, issuedAt: now,
            expiresAt: now.adding(seconds: settings.idTokenLifetime), authTime: session.authTime, amr: session.amr, sessionID: session.id,
            username: user.username, custom: user.claims)
    }

    func accessTokenClaims(user: User, session: Session, now: Int64) -> AccessTokenClaims {
        AccessTokenClaims(
            issuer: settings.issuer, subject: user.id, audience: settings.accessTokenAudience, clientID: session.clientID,
            issuedAt: now, expiresAt: now.adding(seconds: settings.accessTokenLifetime), jwtID: random.token(byteCount: 16),
            scope: session.scope, sessionID: session.id, authTime: session.authTime)
    }
}
