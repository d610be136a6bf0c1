import LatchJOSE
import LatchModel
import Logging

/// Who is calling a signed-in endpoint: the checked access token and its live session.
public struct SignedInCaller: Sendable {
    public var user: User
    public var session: Session
    /// The access token's claims.
    public var claims: [String: JSONValue]
}

/// Access-token checks for Latch's own endpoints, and the sign-out / deletion levels of REFERENCE §6.
public struct SessionService: Sendable {
    public typealias Store = UserStore & SessionStore

    let store: any Store
    let keys: SigningKeyRing
    let refreshTokens: RefreshTokenCodec
    let tokens: TokenSettings
    let sensitiveMaxAge: Int64
    let clock: LatchClock
    let logger: Logger

    public init(
        store: any Store, keys: SigningKeyRing, refreshTokens: RefreshTokenCodec, tokens: TokenSettings,
        sensitiveMaxAge: Int64, clock: LatchClock,
        logger: Logger = Logger(label: "latch.sessions")
    ) {
        self.store = store
        self.keys = keys
        self.refreshTokens = refreshTokens
        self.tokens = tokens
        self.sensitiveMaxAge = sensitiveMaxAge
        self.clock = clock
        self.logger = logger
    }

    /// Checks a bearer access token (RFC 9068 §4) and that its session is still live — so a revoked session is
    /// refused at once, not when the token expires.
    ///
    /// - Step 1. A compact JWS with `typ: at+jwt`, signed by one of our published keys with its algorithm.
    /// - Step 2. `iss` is ours, `exp` not passed, `sub` and `sid` present.
    /// - Step 3. The session exists, is live, and belongs to `sub`.
    public func authenticate(accessToken: String) async throws -> SignedInCaller {
        // Step 1.
        let parsed: ParsedJWS
        do {
            parsed = try ParsedJWS(accessToken)
        } catch {
            throw LatchError.invalidToken("the access token is malformed")
        }
        guard parsed.header["typ"]?.stringValue?.lowercased() == "at+jwt" else {
            throw LatchError.invalidToken("not an access token")
        }
        guard let kid = parsed.keyID, let key = try await keys.verificationKeyReloading(kid: kid) else {
            throw LatchError.invalidToken("the access token's key is unknown")
        }
        let verified: VerifiedJWS
        do {
            verified = try parsed.verify(with: key)
        } catch {
            throw LatchError.invalidToken("the access token's signature does not verify")
        }
        // Step 2.
        let claims = verified.claims
        guard claims["iss"]?.stringValue == tokens.issuer else { throw LatchError.invalidToken("foreign issuer") }
        guard case .int(let exp)? = claims["exp"], exp > clock.seconds() else {
            throw LatchError.invalidToken("the access token has expired")
        }
        guard let sub = claims["sub"]?.stringValue, let sid = claims["sid"]?.stringValue else {
            throw LatchError.invalidToken("the access token has no sub or sid")
        }
        // Step 3.
        guard let (session, user) = try await store.sessionWithUser(id: sid), session.userID == sub,
            session.isActive(at: clock.seconds())
        else { throw LatchError.invalidToken("the session has ended") }
        return SignedInCaller(user: user, session: session, claims: claims)
    }

    /// Refuses a caller whose sign-in is older than the sensitive window (RFC 9470).
    public func requireRecentAuthentication(_ caller: SignedInCaller) throws(LatchError) {
        guard clock.seconds() - caller.session.authTime <= sensitiveMaxAge else {
            throw LatchError.insufficientUserAuthentication(maxAge: Int(sensitiveMaxAge))
        }
    }

    /// OIDC Core §5.3 UserInfo claims.
    public func userInfo(_ caller: SignedInCaller) -> [String: JSONValue] {
        var info: [String: JSONValue] = [:]
        for (name, value) in caller.user.claims where !TokenMinter.reservedClaims.contains(name) { info[name] = value }
        info["sub"] = .string(caller.user.id)
        info["username"] = .string(caller.user.username)
        return info
    }

    /// RFC 7009: revokes the family of a refresh token, or the session of one of our access tokens.
    /// Unknown tokens are not an error (§2.2). A token of another client is refused (§2.1).
    public func revoke(token: String, clientID: String) async throws {
        guard !token.isEmpty, token.utf8.count <= ParsedJWS.defaultMaximumLength else { return }
        let now = clock.seconds()
        if token.hasPrefix(RefreshTokenCodec.prefix) {
            guard let (sessionID, _) = refreshTokens.parse(token), let session = try await store.session(id: sessionID) else {
                return
            }
            guard session.clientID == clientID else {
                throw LatchError.invalidClient("the token was issued to another client")
            }
            try await store.revokeSession(id: session.id, at: now)
            logger.info("session revoked", metadata: ["sid": "\(session.id)"])
        } else {
            // An access token that is not (or no longer) valid is "unknown": nothing to do. Store failures
            // still propagate, so an unreachable database never looks like a successful revocation.
            let caller: SignedInCaller
            do {
                caller = try await authenticate(accessToken: token)
            } catch is LatchError {
                return
            }
            guard caller.session.clientID == clientID else {
                throw LatchError.invalidClient("the token was issued to another client")
            }
            try await store.revokeSession(id: caller.session.id, at: now)
            logger.info("session revoked", metadata: ["sid": "\(caller.session.id)"])
        }
    }

    /// Revokes every session of the caller's user, on every device.
    public func globalSignOut(_ caller: SignedInCaller) async throws -> Int {
        let count = try await store.revokeSessions(userID: caller.user.id, at: clock.seconds())
        logger.info("global sign-out", metadata: ["user": "\(caller.user.id)", "sessions": "\(count)"])
        return count
    }

    /// De-registration: deletes the user and everything that belongs to them. Needs a recent sign-in.
    public func deregister(_ caller: SignedInCaller) async throws {
        try requireRecentAuthentication(caller)
        _ = try await store.deleteUser(id: caller.user.id)
        logger.info("user de-registered", metadata: ["user": "\(caller.user.id)"])
    }
}
