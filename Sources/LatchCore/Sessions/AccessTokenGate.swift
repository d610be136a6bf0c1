import LatchJOSE
import LatchModel

/// Who is calling a signed-in endpoint: the checked access token and its live session.
public struct SignedInCaller: Sendable {
    public var user: User
    public var session: Session
    /// The access token's claims.
    public var claims: AccessTokenClaims
}

/// Checks bearer access tokens for Latch's own endpoints (RFC 9068 §4), and that their session is still live —
/// so a revoked session is refused at once, not when its token expires.
public struct AccessTokenGate: Sendable {
    let store: any SessionStore
    let keys: SigningKeyRing
    let issuer: String
    let verifier: AssertionVerifier
    let clock: LatchClock
    let verified: VerifiedTokenCache?

    /// `cacheCapacity` is how many verified tokens to remember (with their claims, until they expire); 0 verifies
    /// every token every time.
    public init(store: any SessionStore, keys: SigningKeyRing, issuer: String, clock: LatchClock, cacheCapacity: Int = 8192) {
        self.store = store
        self.keys = keys
        self.issuer = issuer
        self.verifier = AssertionVerifier()
        self.clock = clock
        self.verified = cacheCapacity > 0 ? VerifiedTokenCache(capacity: cacheCapacity) : nil
    }

    /// - Steps 1–4 (``AssertionVerifier`` with the access-token profile): a JWS with `typ: at+jwt`, signed by one of
    ///   our published keys with its algorithm; our `iss`, unexpired, with the claims we write. A token verified
    ///   before is taken from the cache, and only its expiry is checked again.
    /// - Step 5. The session exists, is live, and belongs to `sub`.
    public func authenticate(accessToken: String) async throws -> SignedInCaller {
        let now = clock.seconds()
        let claims: AccessTokenClaims
        if let known = verified?.claims(for: accessToken) {
            guard known.expiresAt > now else { throw LatchError.invalidToken("the access token has expired") }
            claims = known
        } else {
            claims = try await verifier.verify(accessToken, as: AccessTokenProfile(keys: keys, issuer: issuer, now: now)).claims
            verified?.insert(claims, for: accessToken)
        }
        // Step 5.
        guard let (session, user) = try await store.sessionWithUser(id: claims.sessionID), session.userID == claims.subject,
            session.isActive(at: now)
        else { throw LatchError.invalidToken("the session has ended") }
        return SignedInCaller(user: user, session: session, claims: claims)
    }
}

/// Latch's own access tokens, as a bearer presents them.
struct AccessTokenProfile: AssertionProfile {
    let keys: SigningKeyRing
    let issuer: String
    let now: Int64

    var code: ErrorCode { .invalidToken }
    var noun: String { "access token" }
    var signedByLatch: Bool { true }

    /// RFC 9068 §4: the `typ` header is `at+jwt`, so an ID token cannot be used as an access token.
    func checkHeader(_ token: ParsedJWS) throws(LatchError) {
        guard token.header["typ"]?.stringValue?.lowercased() == "at+jwt" else { throw LatchError.invalidToken("not an access token") }
    }

    func resolveKey(for token: ParsedJWS) async throws -> PublicKey {
        guard let kid = token.keyID, let key = try await keys.verificationKeyReloading(kid: kid) else {
            throw LatchError.invalidToken("the access token's key is unknown")
        }
        return key
    }

    func publicKey(of key: PublicKey) -> PublicKey { key }

    func checkClaims(_ claims: [String: JSONValue], key: PublicKey) throws(LatchError) -> AccessTokenClaims {
        guard let read = AccessTokenClaims(claims) else { throw LatchError.invalidToken("the access token's claims are not Latch's") }
        guard read.issuer == issuer else { throw LatchError.invalidToken("foreign issuer") }
        guard read.expiresAt > now else { throw LatchError.invalidToken("the access token has expired") }
        return read
    }
}
