import Foundation
import LatchJOSE
import LatchModel
import Logging

/// The token endpoint's engine (RFC 6749 §4–6, RFC 7523): JWT-bearer sign-in and refresh with rotation.
public struct TokenService: Sendable {
    public typealias Store = UserStore & SessionStore & IssuerStore

    let store: any Store
    let clients: ClientRegistry
    let minter: TokenMinter
    let refreshTokens: RefreshTokenCodec
    let tokens: TokenSettings
    let assertions: AssertionSettings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(
        store: any Store, clients: ClientRegistry, minter: TokenMinter, refreshTokens: RefreshTokenCodec, tokens: TokenSettings,
        assertions: AssertionSettings, clock: LatchClock, random: RandomSource,
        logger: Logger = Logger(label: "latch.token")
    ) {
        self.store = store
        self.clients = clients
        self.minter = minter
        self.refreshTokens = refreshTokens
        self.tokens = tokens
        self.assertions = assertions
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// Answers a token request given its form parameters (each at most once).
    public func exchange(_ parameters: [String: String]) async throws -> TokenResponse {
        guard let grantType = parameters["grant_type"], !grantType.isEmpty else {
            throw LatchError.invalidRequest("grant_type is required")
        }
        let client = try await clients.resolve(parameters["client_id"])
        switch grantType {
        case GrantType.jwtBearer:
            guard let assertion = parameters["assertion"], !assertion.isEmpty else {
                throw LatchError.invalidRequest("assertion is required for the jwt-bearer grant")
            }
            let scope = try grantedScope(parameters["scope"])
            return try await signIn(assertion: assertion, client: client, scope: scope)
        case GrantType.refreshToken:
            guard let refreshToken = parameters["refresh_token"], !refreshToken.isEmpty else {
                throw LatchError.invalidRequest("refresh_token is required")
            }
            return try await refresh(refreshToken, client: client)
        default:
            throw LatchError(.unsupportedGrantType, "grant_type must be jwt-bearer or refresh_token")
        }
    }

    /// `openid` plus the requested scopes, each of which must be allowed.
    func grantedScope(_ requested: String?) throws(LatchError) -> String {
        var scopes = ["openid"]
        for scope in (requested ?? "").split(separator: " ").map(String.init) where scope != "openid" {
            guard tokens.allowedScopes.contains(scope) else { throw LatchError(.invalidScope, "unknown scope") }
            if !scopes.contains(scope) { scopes.append(scope) }
        }
        return scopes.joined(separator: " ")
    }

    // MARK: - JWT-bearer sign-in (RFC 7523 §2.1)

    func signIn(assertion: String, client: Client, scope: String) async throws -> TokenResponse {
        let parsed: ParsedJWS
        do {
            parsed = try ParsedJWS(assertion, maximumLength: assertions.maximumTokenBytes)
            _ = try parsed.algorithm()
            try parsed.checkHeaderPolicy()
        } catch {
            throw LatchError.invalidGrant("the assertion is not acceptable: \(error.detail)")
        }
        guard let kid = parsed.keyID, !kid.isEmpty, kid.utf8.count <= 255 else {
            throw LatchError.invalidGrant("the assertion header has no kid")
        }
        guard let iss = parsed.claims["iss"]?.stringValue, !iss.isEmpty, iss.utf8.count <= 255 else {
            throw LatchError.invalidGrant("the assertion has no iss claim")
        }
        // A registered (issuer, kid) makes it a custom federated assertion; otherwise it can only be a
        // device sign-in assertion, whose iss is the username.
        if let issuerKey = try await store.issuerKey(issuer: iss, keyID: kid) {
            return try await federatedSignIn(parsed, issuerKey: issuerKey, client: client, scope: scope)
        }
        return try await deviceSignIn(parsed, username: iss, kid: kid, client: client, scope: scope)
    }

    /// Custom federated sign-in (REFERENCE §5).
    func federatedSignIn(_ parsed: ParsedJWS, issuerKey: IssuerKey, client: Client, scope: String) async throws
        -> TokenResponse
    {
        let now = clock.seconds()
        do {
            _ = try parsed.verify(with: issuerKey.key)
        } catch {
            throw LatchError.invalidGrant("the assertion's signature does not verify", detail: error.description)
        }
        let claims = try AssertionClaims.check(
            parsed.claims, audience: issuerKey.audience, now: now, skew: assertions.clockSkew,
            maxLifetime: issuerKey.maxLifetime, code: .invalidGrant)
        guard let user = try await store.federatedUser(issuer: claims.issuer, subject: claims.subject) else {
            throw LatchError.invalidGrant("this user is not registered")
        }
        let kept = Self.keptClaims(claims.all, allowed: issuerKey.allowedClaims)
        return try await openSession(
            user: user, client: client, scope: scope, amr: ["fed"], now: now,
            consumes: .jti(claims.jwtID, issuer: claims.issuer, until: claims.expiresAt + assertions.clockSkew),
            // Only a change is written: most sign-ins carry the same claims as last time.
            updatedClaims: kept == user.claims ? nil : kept)
    }

    /// Device sign-in key assertion (REFERENCE §4).
    func deviceSignIn(_ parsed: ParsedJWS, username: String, kid: String, client: Client, scope: String) async throws
        -> TokenResponse
    {
        let now = clock.seconds()
        guard let user = try await store.user(username: username),
            let deviceKey = try await store.deviceKey(userID: user.id, keyID: kid)
        else {
            throw LatchError.invalidGrant("no issuer or device key matches the assertion's iss and kid")
        }
        do {
            _ = try parsed.verify(with: deviceKey.key)
        } catch {
            throw LatchError.invalidGrant("the assertion's signature does not verify", detail: error.description)
        }
        let claims = try AssertionClaims.check(
            parsed.claims, audience: assertions.audience, now: now, skew: assertions.clockSkew,
            maxLifetime: assertions.deviceAssertionMaxLifetime, code: .invalidGrant)
        guard claims.subject == username else { throw LatchError.invalidGrant("sub must equal iss (the username)") }
        return try await openSession(
            user: user, client: client, scope: scope, amr: ["pop"], now: now,
            consumes: .nonce(claims.jwtID, userID: user.id, now: now), updatedClaims: nil)
    }

    /// The custom claims an issuer allows, from an assertion.
    static func keptClaims(_ claims: [String: JSONValue], allowed: [String]) -> [String: JSONValue] {
        var kept: [String: JSONValue] = [:]
        for name in allowed where !TokenMinter.reservedClaims.contains(name) {
            if let value = claims[name] { kept[name] = value }
        }
        return kept
    }

    func openSession(
        user: User, client: Client, scope: String, amr: [String], now: Int64, consumes: SingleUse,
        updatedClaims: [String: JSONValue]?
    ) async throws -> TokenResponse {
        let session = Session(
            id: random.timeOrderedID(now: clock.now()), userID: user.id, clientID: client.id, authTime: now, amr: amr,
            scope: scope, createdAt: now, expiresAt: now + tokens.refreshFamilyLifetime)
        let outcome = try await store.startSession(NewSignIn(session: session, consumes: consumes, updatedClaims: updatedClaims))
        switch outcome {
        case .started:
            var signedIn = user
            if let updatedClaims { signedIn.claims = updatedClaims }
            logger.debug("signed in", metadata: ["user": "\(user.id)", "sid": "\(session.id)"])
            return try minter.response(
                user: signedIn, session: session,
                refreshToken: refreshTokens.token(sessionID: session.id, generation: session.generation), now: now)
        case .replayed:
            throw LatchError.invalidGrant("the assertion was used before, or its nonce is unknown or expired")
        case .userGone:
            throw LatchError.invalidGrant("this user is not registered")
        }
    }

    // MARK: - Refresh (RFC 6749 §6, RFC 9700 §4.14)

    func refresh(_ refreshToken: String, client: Client) async throws -> TokenResponse {
        guard let (sessionID, generation) = refreshTokens.parse(refreshToken) else {
            throw LatchError.invalidGrant("the refresh token is invalid")
        }
        let now = clock.seconds()
        let outcome = try await store.refresh(
            RefreshRequest(sessionID: sessionID, generation: generation, clientID: client.id, now: now, graceSeconds: tokens.refreshGrace))
        switch outcome {
        case .rotated(let session, let user), .reissued(let session, let user):
            return try minter.response(
                user: user, session: session,
                refreshToken: refreshTokens.token(sessionID: session.id, generation: session.generation), now: now)
        case .unknown:
            throw LatchError.invalidGrant("the refresh token is invalid")
        case .inactive:
            throw LatchError.invalidGrant("the session has ended (signed out, revoked or expired)")
        case .wrongClient:
            throw LatchError.invalidGrant("the refresh token was issued to another client")
        case .reuseDetected(let session):
            logger.warning(
                "refresh token reuse: family revoked", metadata: ["sid": "\(session.id)", "user": "\(session.userID)"])
            throw LatchError.invalidGrant("the refresh token was already used; the session is revoked")
        }
    }
}
