import Foundation
import LatchJOSE
import LatchModel
import Logging

/// Verifies Latch's access tokens for a backend (a resource server): one per process, shared by every request.
///
/// ``authenticate(_:requiredScopes:)`` takes the request's `Authorization` and `DPoP` headers and returns the
/// ``VerifiedAccessToken`` or throws a ``ResourceServerError`` that says what to answer. It checks, in order:
///
/// 1. **Credentials**: one `Authorization` header, `Bearer <token>` or `DPoP <token>`.
/// 2. **The token** (RFC 9068 §4, RFC 8725): at most ``ResourceServerConfiguration/maximumTokenBytes``; `typ`
///    `at+jwt`; `alg` on the allowlist (never `none` or HMAC); no `jwk`/`jku`/`x5u`/`x5c`/`crit` header; `iss` exactly
///    the issuer; a `kid` naming one of Latch's published keys ([JWKS cache](``JWKSCache``)) whose algorithm is the
///    token's; the signature; `aud` the audience (or an array holding it); `exp`, `iat` and `nbf` within the clock skew;
///    `sub`, `client_id`, `jti`, `sid` and `auth_time` present.
/// 3. **The binding** (RFC 9449 §7): a token with `cnf.jkt` must come with the `DPoP` scheme and exactly one `DPoP`
///    header whose proof is for this method and URL, carries the token's hash (`ath`), is recent, not replayed, carries
///    a current server nonce (when nonces are on), and was signed by the key the token is bound to. A bound token sent
///    as `Bearer`, and an unbound token sent as `DPoP`, are refused.
/// 4. **Liveness** (optional, RFC 7662): Latch's introspection says the token is active.
/// 5. **Scopes**: every required scope is granted (`insufficient_scope`, 403, otherwise).
///
/// Every time check uses the clock given at creation.
///
/// ```swift
/// let verifier = try AccessTokenVerifier(
///     configuration: ResourceServerConfiguration(issuer: "https://id.example.com", audience: "https://api.example.com"))
/// let token = try await verifier.authenticate(
///     ResourceRequest(method: "GET", path: "/orders", authorization: authorizationHeaders, dpop: dpopHeaders),
///     requiredScopes: ["orders:read"])
/// print(token.subject)
/// ```
public final class AccessTokenVerifier: Sendable {
    /// The configuration, as given.
    public let configuration: ResourceServerConfiguration
    /// Latch's signing keys.
    public let keys: JWKSCache
    /// The DPoP proof `jti`s seen recently.
    public let replayCache: DPoPReplayCache
    /// The server nonces, when ``DPoPOptions/nonces`` is set.
    public let nonces: DPoPNonceSource?

    let introspector: (any TokenIntrospecting)?
    let introspectionCache: IntrospectionCache
    let clock: @Sendable () -> Date
    let logger: Logger
    let challenge: ChallengeStyle
    /// ``ResourceServerConfiguration/externalBaseURL`` without trailing slashes.
    let baseURL: String?
    let skew: Int64
    let proofAge: Int64
    let nonceRule: DPoP.NonceRule

    /// A verifier for `configuration`.
    ///
    /// - Parameters:
    ///   - fetcher: fetches the JWK Set; nil fetches it over HTTP (``HTTPJWKSFetcher``).
    ///   - introspector: asks Latch whether a token is active; nil uses ``HTTPTokenIntrospector`` when
    ///     ``ResourceServerConfiguration/introspection`` is set (and no introspection otherwise). Given, it is used
    ///     whether or not the configuration has introspection options.
    ///   - clock: the current time, for every time check (token lifetime, proof age, caches, nonces).
    ///   - logger: where key-fetch and introspection failures are logged (refused tokens are logged at debug level).
    /// - Throws: ``ResourceServerConfigurationError`` for an empty issuer or audience, a JWKS or external base URL that
    ///   is not an absolute http(s) URL, no accepted algorithm, or a negative duration.
    public init(
        configuration: ResourceServerConfiguration, fetcher: (any JWKSFetching)? = nil, introspector: (any TokenIntrospecting)? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger = Logger(label: "latch.resource-server")
    ) throws(ResourceServerConfigurationError) {
        func refuse(_ message: String) -> ResourceServerConfigurationError { ResourceServerConfigurationError(description: message) }
        guard !configuration.issuer.isEmpty else { throw refuse("the issuer is empty") }
        guard !configuration.audience.isEmpty else { throw refuse("the audience is empty") }
        guard DPoP.normalizedURL(configuration.jwksURL) != nil else { throw refuse("the JWKS URL is not an absolute http(s) URL") }
        guard !configuration.algorithms.isEmpty, !configuration.dpop.algorithms.isEmpty else { throw refuse("no algorithm is accepted") }
        let durations = [configuration.jwksCacheLifetime, configuration.jwksRefetchInterval, configuration.clockSkew, configuration.dpop.maximumProofAge]
        guard durations.allSatisfy({ $0 >= .zero }) else { throw refuse("durations must not be negative") }
        if let base = configuration.externalBaseURL {
            guard DPoP.normalizedURL(base) != nil, let components = URLComponents(string: base), components.query == nil, components.fragment == nil else {
                throw refuse("the external base URL is not an absolute http(s) URL without query or fragment")
            }
            baseURL = ResourceServerConfiguration.trimmingTrailingSlashes(base)
        } else {
            baseURL = nil
        }
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        let seconds: @Sendable () -> Int64 = { Self.unixSeconds(clock()) }
        keys = JWKSCache(
            url: configuration.jwksURL, fetcher: fetcher ?? HTTPJWKSFetcher(timeout: configuration.jwksFetchTimeout.timeAmount), lifetime: configuration.jwksCacheLifetime.wholeSeconds,
            refetchInterval: configuration.jwksRefetchInterval.wholeSeconds, clock: seconds,
            events: { event in
                switch event {
                case .fetched(let url, let count): logger.debug("Latch JWKS fetched", metadata: ["url": "\(url)", "keys": "\(count)"])
                case .failed(let url, let error):
                    logger.warning("Latch JWKS fetch failed; the cached keys stay in use", metadata: ["url": "\(url)", "error": "\(error)"])
                }
            })
        replayCache = DPoPReplayCache(capacity: configuration.dpop.replayCacheCapacity)
        let nonces = configuration.dpop.nonces.map { DPoPNonceSource(window: $0.window.wholeSeconds, secret: $0.secret, clock: seconds) }
        self.nonces = nonces
        nonceRule = nonces.map { source in DPoP.NonceRule(required: true, isValid: { source.isValid($0) }) } ?? DPoP.NonceRule(required: false, isValid: nil)
        self.introspector = introspector ?? configuration.introspection.map { HTTPTokenIntrospector(options: $0) }
        introspectionCache = IntrospectionCache(
            lifetime: configuration.introspection?.cacheLifetime.wholeSeconds ?? 0, capacity: configuration.introspection?.cacheCapacity ?? 1)
        challenge = ChallengeStyle(realm: configuration.realm, dpopAlgorithms: configuration.dpop.algorithms)
        skew = configuration.clockSkew.wholeSeconds
        proofAge = configuration.dpop.maximumProofAge.wholeSeconds
    }

    static func unixSeconds(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite, abs(seconds) < 1e15 else { return 0 }
        return Int64(seconds)
    }

    /// The nonce to send in `DPoP-Nonce` now, when nonces are on (adapters add it to successful answers to DPoP-bound
    /// requests, so clients always hold a current one).
    public func currentDPoPNonce() -> String? { nonces?.current() }

    /// Authenticates `request`: the verified token, or the error to answer with. See ``AccessTokenVerifier`` for the
    /// checks, in order.
    ///
    /// - Parameter requiredScopes: scopes the token must all grant (none by default).
    public func authenticate(_ request: ResourceRequest, requiredScopes: Set<String> = []) async throws(ResourceServerError) -> VerifiedAccessToken {
        let now = Self.unixSeconds(clock())
        // 1. Credentials.
        guard request.authorization.count <= 1 else {
            throw ResourceServerError(.invalidRequest, "more than one Authorization header", scheme: nil, challenge: challenge)
        }
        let presented: PresentedToken
        switch request.authorization.first.map(PresentedToken.read) ?? .absent {
        case .absent:
            throw ResourceServerError(.invalidToken, "an access token is required", scheme: nil, challenge: challenge, missingCredentials: true)
        case .malformed(let scheme):
            throw ResourceServerError(.invalidRequest, "the Authorization header is not `\(scheme.rawValue) <token>`", scheme: scheme, challenge: challenge)
        case .token(let token):
            presented = token
        }
        // 2. The token.
        let token: VerifiedAccessToken
        do {
            token = try await verify(presented.token, scheme: presented.scheme, now: now)
        } catch {
            logger.debug("access token refused", metadata: ["reason": "\(error.message)"])
            throw error
        }
        // 3. The binding (RFC 9449 §7.1, §7.2).
        if let jkt = token.jkt {
            guard presented.scheme == .dpop else {
                throw ResourceServerError(
                    .invalidToken, "this access token is DPoP-bound: present it with the DPoP scheme and a DPoP proof", scheme: .dpop,
                    challenge: challenge)
            }
            try verifyProof(of: request, accessToken: presented.token, jkt: jkt, now: now)
        } else if presented.scheme == .dpop {
            throw ResourceServerError(
                .invalidToken, "this access token is not DPoP-bound: present it with the Bearer scheme", scheme: .bearer, challenge: challenge)
        }
        // 4. Liveness.
        if let introspector {
            try await checkActive(presented.token, token, introspector: introspector, now: now)
        }
        // 5. Scopes.
        try token.requireScopes(requiredScopes)
        return token
    }

    // MARK: The token

    /// Steps 2.x: the JWS, then the claims.
    func verify(_ token: String, scheme: ResourceServerError.Scheme, now: Int64) async throws(ResourceServerError) -> VerifiedAccessToken {
        func invalid(_ message: String) -> ResourceServerError { ResourceServerError(.invalidToken, message, scheme: scheme, challenge: challenge) }
        let maximumBytes = configuration.maximumTokenBytes
        guard token.utf8.count <= maximumBytes else { throw invalid("the access token exceeds \(maximumBytes) bytes") }
        let parsed: ParsedJWS
        do {
            parsed = try ParsedJWS(token, maximumLength: maximumBytes)
        } catch {
            throw invalid("the access token is not a JWS: \(error.detail)")
        }
        guard case .string(let type)? = parsed.header["typ"], Self.isAccessTokenType(type) else {
            throw invalid("the token is not an access token (typ must be at+jwt, RFC 9068)")
        }
        guard let algorithm = JWSAlgorithm(rawValue: parsed.algorithmName), configuration.algorithms.contains(algorithm) else {
            throw invalid("the token's alg is not accepted")
        }
        do {
            try parsed.checkHeaderPolicy()
        } catch {
            throw invalid(error.detail)
        }
        guard case .string(let kid)? = parsed.header["kid"], !kid.isEmpty else { throw invalid("the token has no kid") }
        // Before any key lookup: another issuer's token never costs a JWKS fetch.
        guard case .string(let issuer)? = parsed.claims["iss"], issuer == configuration.issuer else {
            throw invalid("the token was not issued by \(configuration.issuer)")
        }
        let key: PublicKey
        switch await keys.key(kid) {
        case .key(let found): key = found
        case .unknownKeyID: throw invalid("the token's kid names none of the issuer's signing keys")
        case .unavailable:
            throw ResourceServerError(.temporarilyUnavailable, "the issuer's signing keys cannot be fetched; try again", scheme: scheme, challenge: challenge)
        }
        let claims: [String: JSONValue]
        do {
            claims = try parsed.verify(with: key).claims
        } catch {
            throw invalid(error.reason == .badSignature ? "the token's signature does not verify" : error.detail)
        }
        return try readClaims(claims, now: now, invalid: invalid)
    }

    /// RFC 9068 §4 `typ`: `at+jwt`, or the full media type `application/at+jwt`, compared case-insensitively.
    static func isAccessTokenType(_ type: String) -> Bool {
        let lowercased = type.lowercased()
        return lowercased == "at+jwt" || lowercased == "application/at+jwt"
    }

    func readClaims(
        _ claims: [String: JSONValue], now: Int64, invalid: (String) -> ResourceServerError
    ) throws(ResourceServerError) -> VerifiedAccessToken {
        switch claims["aud"] {
        case .string(let audience)? where audience == configuration.audience: break
        case .array(let audiences)? where audiences.contains(.string(configuration.audience)): break
        default: throw invalid("the token is not for this audience")
        }
        guard case .int(let expiresAt)? = claims["exp"] else { throw invalid("the token has no exp (integer seconds)") }
        guard now - skew < expiresAt else { throw invalid("the token has expired") }
        guard case .int(let issuedAt)? = claims["iat"] else { throw invalid("the token has no iat (integer seconds)") }
        guard issuedAt <= now + skew else { throw invalid("the token's iat is in the future") }
        if let notBefore = claims["nbf"] {
            guard case .int(let notBefore) = notBefore, notBefore <= now + skew else { throw invalid("the token is not valid yet (nbf)") }
        }
        guard case .string(let subject)? = claims["sub"], !subject.isEmpty else { throw invalid("the token has no sub") }
        guard case .string(let clientID)? = claims["client_id"] else { throw invalid("the token has no client_id") }
        guard case .string(let tokenID)? = claims["jti"] else { throw invalid("the token has no jti") }
        guard case .string(let sessionID)? = claims["sid"] else { throw invalid("the token has no sid") }
        guard case .int(let authTime)? = claims["auth_time"] else { throw invalid("the token has no auth_time") }
        var scopes: Set<String> = []
        if let scope = claims["scope"] {
            guard case .string(let scope) = scope else { throw invalid("the token's scope is not a string") }
            scopes = Set(scope.split(separator: " ").map(String.init))
        }
        var consumers: [VerifiedAccessToken.Consumer] = []
        if let claim = claims["consumers"] {
            guard case .array(let members) = claim else { throw invalid("the token's consumers claim is malformed") }
            for member in members {
                guard case .string(let issuer)? = member["issuer"], case .string(let consumer)? = member["consumer"] else {
                    throw invalid("the token's consumers claim is malformed")
                }
                consumers.append(.init(issuer: issuer, consumer: consumer))
            }
        }
        var jkt: String?
        if let confirmation = claims["cnf"] {
            // A confirmation this resource server cannot check (mTLS `x5t#S256`, …) is refused, never ignored.
            guard case .string(let thumbprint)? = confirmation["jkt"], !thumbprint.isEmpty else {
                throw invalid("the token is bound to a key by a confirmation method other than DPoP (cnf.jkt)")
            }
            jkt = thumbprint
        }
        return VerifiedAccessToken(
            subject: subject, clientId: clientID, scopes: scopes, sessionId: sessionID, authTime: Date(timeIntervalSince1970: Double(authTime)),
            consumers: consumers, jkt: jkt, issuedAt: Date(timeIntervalSince1970: Double(issuedAt)),
            expiresAt: Date(timeIntervalSince1970: Double(expiresAt)), tokenId: tokenID, claims: claims,
            verifiedAt: Date(timeIntervalSince1970: Double(now)), challenge: challenge)
    }

    // MARK: DPoP

    /// Step 3: RFC 9449 §4.3 on the request's one proof, the proof's key against `cnf.jkt`, then replay.
    func verifyProof(of request: ResourceRequest, accessToken: String, jkt: String, now: Int64) throws(ResourceServerError) {
        func invalid(_ message: String) -> ResourceServerError {
            ResourceServerError(.invalidDPoPProof, message, scheme: .dpop, challenge: challenge, dpopNonce: nonces?.current())
        }
        guard request.dpop.count == 1, let proof = request.dpop.first else {
            throw invalid(request.dpop.isEmpty ? "a DPoP proof (the DPoP header) is required" : "more than one DPoP header")
        }
        guard let url = request.url ?? baseURL.map({ $0 + (request.path.hasPrefix("/") ? request.path : "/" + request.path) }) else {
            logger.error("a DPoP-bound token was presented, but no external base URL is configured: set ResourceServerConfiguration.externalBaseURL")
            throw invalid("this resource server cannot check DPoP proofs (no external URL configured)")
        }
        var expectations = DPoP.Expectations(method: request.method, url: url, accessToken: accessToken, now: now)
        expectations.maximumAge = proofAge
        expectations.futureSkew = skew
        expectations.algorithms = configuration.dpop.algorithms
        expectations.nonce = nonceRule
        let verified: DPoP.Proof
        do {
            verified = try DPoP.verify(proof, expectations)
        } catch {
            guard error.code == .useNonce else { throw invalid(error.message) }
            throw ResourceServerError(.useDPoPNonce, error.message, scheme: .dpop, challenge: challenge, dpopNonce: nonces?.current())
        }
        guard verified.thumbprint == jkt else { throw invalid("the proof's key is not the key the access token is bound to") }
        switch replayCache.admit(jti: verified.jti, until: verified.rememberUntil, now: now) {
        case .accepted: return
        case .replayed: throw invalid("this DPoP proof was used already (its jti was seen)")
        case .full:
            logger.warning("the DPoP replay cache is full of live entries: DPoP requests are refused until entries expire")
            throw ResourceServerError(.temporarilyUnavailable, "too many recent DPoP proofs to remember; try again", scheme: .dpop, challenge: challenge)
        }
    }

    // MARK: Introspection

    /// Step 4: Latch's introspection answers `active: true` for this token (the answer reused while cached).
    func checkActive(_ token: String, _ verified: VerifiedAccessToken, introspector: any TokenIntrospecting, now: Int64) async throws(ResourceServerError) {
        if introspectionCache.isActive(token, now: now) { return }
        let answer: [String: JSONValue]
        do {
            answer = try await introspector.introspect(token: token)
        } catch {
            logger.warning("token introspection failed", metadata: ["error": "\(error)"])
            throw ResourceServerError(.temporarilyUnavailable, "the issuer cannot be asked about this token; try again", scheme: verified.scheme, challenge: challenge)
        }
        func inactive(_ message: String) -> ResourceServerError { ResourceServerError(.invalidToken, message, scheme: verified.scheme, challenge: challenge) }
        guard answer["active"] == .bool(true) else { throw inactive("the access token is no longer active (revoked, or its session ended)") }
        if let subject = answer["sub"], subject != .string(verified.subject) { throw inactive("introspection answered for another subject") }
        if let tokenID = answer["jti"], tokenID != .string(verified.tokenId) { throw inactive("introspection answered for another token") }
        // RFC 9449 §6.2: an answer naming a binding must name the token's.
        if let confirmation = answer["cnf"], confirmation["jkt"] != verified.jkt.map(JSONValue.string) {
            throw inactive("introspection answered with another key binding")
        }
        introspectionCache.remember(token, expiresAt: Self.unixSeconds(verified.expiresAt), now: now)
    }
}
