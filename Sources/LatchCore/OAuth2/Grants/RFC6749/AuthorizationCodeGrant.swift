import LatchJOSE
import LatchModel
import Logging

/// The `authorization_code` grant (RFC 6749 §4.1.3, with PKCE RFC 7636 §4.6 and RFC 9700 §2.1.1): redeems a code the
/// authorization endpoint issued.
///
/// - Step 1. `code`, `redirect_uri` and `code_verifier` are present; the request names its `client_id` (public
///   clients authenticate with nothing but PKCE).
/// - Step 2. The code opens (sealed by this deployment), has not expired (60 s at most), and was issued to this client
///   for this `redirect_uri` exactly.
/// - Step 3. `BASE64URL(SHA256(code_verifier))` equals the code's challenge (constant time).
/// - Step 4. One unit: the code's id is spent, the user must still exist, and the session the code names is opened.
///   A second redemption finds the id spent: the session the first one opened is revoked (RFC 6749 §4.1.2:
///   "SHOULD revoke … all tokens previously issued based on that authorization code") and the answer is
///   `invalid_grant`.
public struct AuthorizationCodeGrant: TokenGrant {
    let store: any UnitOfWork & UserStore
    let sealer: FederationSealer
    let minter: TokenMinter
    let refreshTokens: RefreshTokenCodec
    let tokens: TokenSettings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(
        store: any UnitOfWork & UserStore, sealer: FederationSealer, minter: TokenMinter, refreshTokens: RefreshTokenCodec, tokens: TokenSettings,
        clock: LatchClock, random: RandomSource, logger: Logger = Logger(label: "latch.authorization-code")
    ) {
        self.random = random
        self.store = store
        self.sealer = sealer
        self.minter = minter
        self.refreshTokens = refreshTokens
        self.tokens = tokens
        self.clock = clock
        self.logger = logger
    }

    public var grantType: String { "authorization_code" }

    enum Refusal: Error { case used, userGone }

    public func exchange(_ request: TokenRequest) async throws -> TokenResponse {
        let now = clock.seconds()
        // Step 1.
        let presented = try request.required("code")
        let redirectURI = try request.required("redirect_uri")
        let verifier = try request.required("code_verifier")
        guard let clientID = request.parameters["client_id"], !clientID.isEmpty else {
            throw LatchError.invalidRequest("client_id is required for this grant_type")
        }
        guard PKCE.isVerifier(verifier) else { throw LatchError.invalidRequest("code_verifier must be 43–128 unreserved characters (RFC 7636 §4.1)") }
        // Step 2.
        guard let code = sealer.open(presented, as: .authorizationCode, AuthorizationCodeContent.self) else {
            throw LatchError.invalidGrant("the authorization code is not valid")
        }
        guard code.expiresAt > now else { throw LatchError.invalidGrant("the authorization code has expired") }
        guard code.clientId == clientID, request.client.id == clientID else {
            throw LatchError.invalidGrant("the authorization code was issued to another client")
        }
        guard code.redirectUri == redirectURI else { throw LatchError.invalidGrant("redirect_uri is not the one of the authorization request") }
        // Step 3.
        guard Secrets.constantTimeEquals(PKCE.challenge(verifier), code.codeChallenge) else {
            throw LatchError.invalidGrant("code_verifier does not match the code_challenge")
        }
        // The code and its verifier are verified: a refusal from here names the code's user.
        do {
            return try await redeem(code, request: request, clientID: clientID, now: now)
        } catch let error as LatchError {
            throw error.afterVerifying(code.userId)
        }
    }

    /// Steps 4–5 for a verified code.
    func redeem(_ code: AuthorizationCodeContent, request: TokenRequest, clientID: String, now: Int64) async throws -> TokenResponse {
        if request.dpop != nil, request.dpopPolicy.attested {
            throw LatchError(.invalidDPoPProof, "this client binds tokens only to a device's registered sign-in key; a browser sign-in has none")
        }
        guard let user = try await store.user(id: code.userId) else { throw LatchError.invalidGrant("this user is not registered") }
        // Step 4.
        let session = Session(
            id: code.sessionId, userID: code.userId, clientID: clientID, authTime: code.authTime, amr: code.amr, scope: code.scope, createdAt: now,
            expiresAt: now.adding(seconds: tokens.refreshFamilyLifetime), dpopJKT: request.dpop?.thumbprint)
        let signedIn = SecurityEvent.now(
            .signInSucceeded, actor: "user", userID: code.userId, sessionID: session.id, clientID: clientID,
            detail: "amr=\(code.amr.joined(separator: ",")) code", clock: clock, random: random)
        do {
            try await store.write { unit in
                unit.consume(.jti(code.id, issuer: "latch:authorization-code", until: code.expiresAt + 60), ifUnavailable: Refusal.used)
                unit.requireUser(id: code.userId, ifMissing: Refusal.userGone)
                unit.insertSession(session)
                unit.record(signedIn)
            }
        } catch Refusal.used {
            let revoked = try await store.revokeSession(id: code.sessionId, at: now)
            logger.warning("authorization code used twice", metadata: ["sid": "\(code.sessionId)", "revoked": "\(revoked)"])
            throw LatchError.invalidGrant("the authorization code was used before; the tokens it issued are revoked")
        } catch Refusal.userGone {
            throw LatchError.invalidGrant("this user is not registered")
        }
        return try await minter.response(
            user: user, session: session, refreshToken: refreshTokens.token(sessionID: session.id, generation: session.generation), now: now,
            nonce: code.nonce, idTokenAlgorithm: request.client.idTokenAlgorithm)
    }
}
