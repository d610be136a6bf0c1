import Foundation
import LatchJOSE
import LatchModel
import Logging

/// Settings of browser sign-in.
public struct FederationSettings: Sendable {
    /// Seconds a browser stays signed in at the hosted pages (a second app's sign-in skips the upstream until then).
    public var webSessionLifetime: Int64 = 3600
    /// Seconds between the authorization request and the upstream's callback.
    public var pendingLifetime: Int64 = 600
    /// Seconds an authorization code is good for (RFC 9700 §4.5: short; at most 60).
    public var codeLifetime: Int64 = 60
    /// Seconds an upstream call may take.
    public var upstreamTimeout: Int64 = 10

    public init() {}
}

/// The pending authorization request, sealed into the chooser's links and the upstream's `state`.
struct PendingAuthorization: Codable, Sendable {
    var clientId: String
    var redirectUri: String
    var state: String
    var nonce: String?
    var codeChallenge: String
    var scope: String
    var forceLogin: Bool
    var maxAge: Int64?
    var loginHint: String?
    /// The upstreams the request may use.
    var allowed: [String]
    var expiresAt: Int64
}

/// The upstream's `state`: the pending request, the values of this upstream round trip and the browser binding.
struct UpstreamState: Codable, Sendable {
    /// Spent at the callback (single use).
    var id: String
    var request: PendingAuthorization
    var idp: String
    var nonce: String
    var verifier: String
    /// SHA-256 of the binding cookie's value.
    var binding: String
    /// When Latch sent the browser to the upstream: a `prompt=login` authentication is no earlier (absent in states
    /// sealed by earlier versions: the authorization request's time stands in).
    var sentAt: Int64?
}

/// An authorization code's content (sealed; its `id` spent at redemption).
struct AuthorizationCodeContent: Codable, Sendable {
    var id: String
    var clientId: String
    var redirectUri: String
    var codeChallenge: String
    var nonce: String?
    var userId: String
    var authTime: Int64
    var amr: [String]
    var scope: String
    /// The session the code opens: a second redemption revokes it.
    var sessionId: String
    var expiresAt: Int64
}

/// The authorization endpoint (OAuth 2.1 code flow with PKCE, OpenID Connect Core §3.1) for apps, federating the
/// user's authentication to upstream OpenID providers; RP-initiated logout; the upstream callback.
///
/// Nothing is stored between the authorization request and the code redemption but what must be: the pending request
/// travels sealed (``FederationSealer``) in the upstream's `state`, bound to the browser by a cookie; the callback's
/// one unit of work spends that state, creates or updates the user and opens the web session; the code is sealed too
/// and spent at the token endpoint with the session it opens.
public struct AuthorizationService: Sendable {
    let store: any (UnitOfWork & FederationStore & UserStore & SessionStore)
    let clients: ClientRegistry
    let upstream: UpstreamOpenIDClient
    let sealer: FederationSealer
    let secrets: KeySealer
    let keys: SigningKeyRing
    let tokens: TokenSettings
    public let settings: FederationSettings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(
        store: any (UnitOfWork & FederationStore & UserStore & SessionStore), clients: ClientRegistry, upstream: UpstreamOpenIDClient, sealer: FederationSealer, secrets: KeySealer,
        keys: SigningKeyRing, tokens: TokenSettings, settings: FederationSettings, clock: LatchClock, random: RandomSource,
        logger: Logger = Logger(label: "latch.authorize")
    ) {
        self.store = store
        self.clients = clients
        self.upstream = upstream
        self.sealer = sealer
        self.secrets = secrets
        self.keys = keys
        self.tokens = tokens
        self.settings = settings
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    var issuer: String { tokens.issuer }

    /// The URL to register at an upstream as Latch's redirect URI.
    public static func callbackURL(issuer: String, idp: String) -> String { "\(issuer)/oauth2/upstream/\(idp)/callback" }
    /// The URL to register at an upstream as Latch's post-logout redirect URI.
    public static func signedOutURL(issuer: String, idp: String) -> String { "\(issuer)/oauth2/upstream/\(idp)/signed-out" }

    /// The largest value accepted for `state`, `nonce`, `login_hint` and the like.
    static let maximumValueLength = 512
    static let prompts: Set<String> = ["none", "login", "consent", "select_account"]

    static func errorPage(_ problem: SignInProblem) -> BrowserAnswer { .page(.error(problem)) }

    // MARK: Redirect URIs

    /// Whether `candidate` is one of `registered` (RFC 9700 §2.1: exact string comparison; a loopback http URI
    /// with any port, RFC 8252 §7.3).
    public static func matches(_ candidate: String, registered: [String]) -> Bool {
        if registered.contains(candidate) { return true }
        guard let loopback = withoutLoopbackPort(candidate) else { return false }
        return registered.contains { withoutLoopbackPort($0) == loopback }
    }

    /// `http://127.0.0.1:PORT/path` (or `[::1]`) with the port taken out; nil for every other URI.
    static func withoutLoopbackPort(_ uri: String) -> String? {
        for prefix in ["http://127.0.0.1", "http://[::1]"] where uri.hasPrefix(prefix) {
            var rest = uri.dropFirst(prefix.count)
            if rest.first == ":" {
                rest = rest.dropFirst()
                let digits = rest.prefix { $0.isASCII && $0.isNumber }
                guard !digits.isEmpty, digits.count <= 5 else { return nil }
                rest = rest.dropFirst(digits.count)
            }
            guard rest.isEmpty || rest.first == "/" || rest.first == "?" else { return nil }
            return prefix + rest
        }
        return nil
    }

    /// A redirect URI an admin may register: absolute, no fragment, no userinfo, at most 2,048 bytes; https, a
    /// loopback http, or a private-use scheme with a dot (reverse domain, RFC 8252 §7.1).
    public static func isRegistrableRedirectURI(_ uri: String) -> Bool {
        guard uri.utf8.count <= 2048, !uri.contains("#"), let url = URL(string: uri), let scheme = url.scheme?.lowercased(), url.user == nil,
            url.password == nil
        else { return false }
        switch scheme {
        case "https": return !(url.host ?? "").isEmpty
        case "http": return withoutLoopbackPort(uri) != nil
        default: return scheme.contains(".") && scheme != "javascript" && scheme != "data"
        }
    }

    // MARK: The authorization request

    /// `GET /oauth2/authorize` (RFC 6749 §4.1.1, OIDC Core §3.1.2.1).
    ///
    /// - Step 1. `client_id` names a client and `redirect_uri` is one of its registered URIs — otherwise an error page,
    ///   never a redirect (RFC 6749 §4.1.2.1: no open redirector).
    /// - Step 2. From here every error is a redirect to that URI with `error`, `state` and `iss` (RFC 9207):
    ///   `response_type=code`; no `request`/`request_uri`; `state`; PKCE S256 only; `scope` with `openid`, within the
    ///   allowed scopes; `prompt`; `max_age`; `response_mode` query; the upstream identity providers the client allows.
    /// - Step 3. The browser's web session answers at once when it is active, from an upstream the request allows,
    ///   recent enough for `max_age`, and `prompt` is not `login`; `prompt=none` without one is `login_required`.
    /// - Step 4. One upstream (or `idp_hint`): the browser goes there; several: the chooser page.
    public func authorize(_ parameters: [String: String], repeated: Set<String>, cookies: [String: String]) async throws -> BrowserAnswer {
        let now = clock.seconds()
        // Step 1.
        guard !repeated.contains("client_id"), !repeated.contains("redirect_uri") else {
            return Self.errorPage(.repeatedClientParameters)
        }
        guard let clientID = parameters["client_id"], !clientID.isEmpty, clientID.utf8.count <= 128 else {
            return Self.errorPage(.missingClientID)
        }
        guard var client = try? await clients.resolve(clientID) else {
            return Self.errorPage(.unknownClient)
        }
        guard let redirectURI = parameters["redirect_uri"] else {
            return Self.errorPage(.unregisteredRedirectURI)
        }
        if !Self.matches(redirectURI, registered: client.evidence.federation?.redirectUris ?? []) {
            // Another replica may have registered it a moment ago: read the client again before refusing.
            guard let fresh = try await clients.refreshed(client.id), Self.matches(redirectURI, registered: fresh.evidence.federation?.redirectUris ?? [])
            else {
                return Self.errorPage(.unregisteredRedirectURI)
            }
            client = fresh
        }
        let federation = client.evidence.federation ?? .init()
        // Step 2.
        let state = parameters["state"]
        func fail(_ code: ErrorCode, _ message: String) -> BrowserAnswer {
            .redirect(authorizationResponse(redirectURI, [("error", code.rawValue), ("error_description", message)], state: state))
        }
        if let name = repeated.sorted().first { return fail(.invalidRequest, "\(name) is repeated") }
        for (name, value) in parameters where value.utf8.count > 2048 { return fail(.invalidRequest, "\(name) is longer than 2048 bytes") }
        guard parameters["response_type"] == "code" else { return fail(.unsupportedResponseType, "response_type must be code") }
        if parameters["request"] != nil { return fail(.requestNotSupported, "request objects are not supported") }
        if parameters["request_uri"] != nil { return fail(.requestURINotSupported, "request_uri is not supported") }
        if let mode = parameters["response_mode"], mode != "query" { return fail(.invalidRequest, "response_mode must be query") }
        guard let state, !state.isEmpty, state.utf8.count <= Self.maximumValueLength else {
            return fail(.invalidRequest, "state is required (1–512 bytes)")
        }
        guard let challenge = parameters["code_challenge"] else { return fail(.invalidRequest, "code_challenge is required (PKCE, RFC 7636)") }
        guard parameters["code_challenge_method"] == "S256" else { return fail(.invalidRequest, "code_challenge_method must be S256") }
        guard PKCE.isChallenge(challenge) else { return fail(.invalidRequest, "code_challenge must be 43 base64url characters") }
        if let nonce = parameters["nonce"], nonce.isEmpty || nonce.utf8.count > Self.maximumValueLength {
            return fail(.invalidRequest, "nonce must be 1–512 bytes")
        }
        let scopes = (parameters["scope"] ?? "").split(separator: " ").map(String.init)
        guard scopes.contains("openid") else { return fail(.invalidScope, "scope must include openid") }
        if let unknown = scopes.first(where: { !tokens.allowedScopes.contains($0) }) {
            return fail(.invalidScope, "scope \(unknown.prefix(64)) is not allowed")
        }
        let prompt = Set((parameters["prompt"] ?? "").split(separator: " ").map(String.init))
        if let unknown = prompt.first(where: { !Self.prompts.contains($0) }) { return fail(.invalidRequest, "prompt \(unknown.prefix(32)) is not known") }
        if prompt.contains("none"), prompt.count > 1 { return fail(.invalidRequest, "prompt=none cannot be combined with other values") }
        var maxAge: Int64?
        if let text = parameters["max_age"] {
            guard let value = Int64(text), value >= 0 else { return fail(.invalidRequest, "max_age must be a non-negative integer") }
            maxAge = value
        }
        if let hint = parameters["login_hint"], hint.utf8.count > Self.maximumValueLength { return fail(.invalidRequest, "login_hint is too long") }
        let configured = Set(try await store.upstreamIdPs().map(\.id))
        let allowed = federation.upstreamIdps.filter(configured.contains)
        guard !allowed.isEmpty else { return fail(.accessDenied, "no upstream identity provider is enabled for this app") }
        var chosen: String? = allowed.count == 1 && !prompt.contains("select_account") ? allowed[0] : nil
        if let hint = parameters["idp_hint"] {
            guard allowed.contains(hint) else { return fail(.invalidRequest, "idp_hint names no identity provider this app allows") }
            chosen = hint
        }
        let scope = scopes.joined(separator: " ")
        // Step 3.
        if !prompt.contains("login"), !prompt.contains("select_account"), let webSession = try await activeWebSession(cookies, now: now),
            allowed.contains(webSession.upstreamIdP), chosen == nil || chosen == webSession.upstreamIdP,
            maxAge.map({ now - webSession.authTime <= $0 }) ?? true
        {
            let code = try issueCode(
                clientID: client.id, redirectURI: redirectURI, challenge: challenge, nonce: parameters["nonce"], userID: webSession.userID,
                authTime: webSession.authTime, scope: scope, now: now)
            logger.debug("authorized from the web session", metadata: ["client": "\(client.id)"])
            return .redirect(authorizationResponse(redirectURI, [("code", code)], state: state))
        }
        if prompt.contains("none") { return fail(.loginRequired, "the user must sign in") }
        let pending = PendingAuthorization(
            clientId: client.id, redirectUri: redirectURI, state: state, nonce: parameters["nonce"], codeChallenge: challenge, scope: scope,
            forceLogin: prompt.contains("login"), maxAge: maxAge, loginHint: parameters["login_hint"], allowed: allowed,
            expiresAt: now.adding(seconds: settings.pendingLifetime))
        // Step 4.
        if let chosen { return try await toUpstream(pending, idp: chosen, cookies: cookies, now: now) }
        let sealed = try sealer.seal(pending, as: .pendingRequest)
        var choices: [HostedPage.Choice] = []
        for id in allowed {
            guard let idp = try await store.upstreamIdP(id: id) else { continue }
            let url = "\(issuer)/oauth2/authorize/continue?" + FormEncoding.query([("request", sealed), ("idp", id)])
            choices.append(HostedPage.Choice(id: id, displayName: idp.settings.displayName, url: url))
        }
        return .page(.chooser(clientName: client.name, choices: choices))
    }

    /// `GET /oauth2/authorize/continue?request=…&idp=…`: the chooser's choice.
    public func `continue`(request: String?, idp: String?, cookies: [String: String]) async throws -> BrowserAnswer {
        let now = clock.seconds()
        guard let request, let pending = sealer.open(request, as: .pendingRequest, PendingAuthorization.self), pending.expiresAt > now else {
            return Self.errorPage(.requestExpired)
        }
        guard let idp, pending.allowed.contains(idp) else {
            return Self.errorPage(.identityProviderNotAllowed)
        }
        return try await toUpstream(pending, idp: idp, cookies: cookies, now: now)
    }

    /// Sends the browser to upstream `id` with a fresh nonce and PKCE verifier, the request sealed in `state`.
    func toUpstream(_ pending: PendingAuthorization, idp id: String, cookies: [String: String], now: Int64) async throws -> BrowserAnswer {
        guard let idp = try await store.upstreamIdP(id: id) else {
            return Self.errorPage(.identityProviderNotConfigured)
        }
        let metadata: UpstreamMetadata
        do {
            metadata = try await upstream.metadata(issuer: idp.settings.issuer)
        } catch let error as LatchError {
            logger.warning("upstream unavailable", metadata: ["idp": "\(id)", "error": "\(error)"])
            return Self.errorPage(.upstreamUnreachable)
        }
        // One binding per browser, reused by sign-ins in several tabs.
        var setCookies: [BrowserCookie] = []
        let binding: String
        if let existing = cookies[BrowserCookie.binding], existing.utf8.count == 43 {
            binding = existing
        } else {
            binding = random.token()
            setCookies.append(BrowserCookie(name: BrowserCookie.binding, value: binding, maxAge: settings.pendingLifetime))
        }
        let state = UpstreamState(
            id: random.token(byteCount: 16), request: pending, idp: id, nonce: random.token(), verifier: random.token(), binding: PKCE.hashHex(binding),
            sentAt: now)
        var query: [(String, String)] = [
            ("response_type", "code"), ("client_id", idp.settings.clientId),
            ("redirect_uri", Self.callbackURL(issuer: issuer, idp: id)), ("scope", idp.settings.scopes.joined(separator: " ")),
            ("state", try sealer.seal(state, as: .upstreamState)), ("nonce", state.nonce),
            ("code_challenge", PKCE.challenge(state.verifier)), ("code_challenge_method", "S256"),
        ]
        if pending.forceLogin { query.append(("prompt", "login")) }
        if let maxAge = pending.maxAge { query.append(("max_age", String(maxAge))) }
        if let hint = pending.loginHint { query.append(("login_hint", hint)) }
        return .redirect(FormEncoding.appending(query, to: metadata.authorizationEndpoint), cookies: setCookies)
    }

    /// The app's redirect URI with the authorization response's parameters, `state` and `iss` (RFC 9207).
    func authorizationResponse(_ redirectURI: String, _ parameters: [(String, String)], state: String?) -> String {
        var all = parameters
        if let state, !state.isEmpty, state.utf8.count <= Self.maximumValueLength { all.append(("state", state)) }
        all.append(("iss", issuer))
        return FormEncoding.appending(all, to: redirectURI)
    }

    // MARK: The upstream's callback

    /// `GET /oauth2/upstream/{id}/callback` (OIDC Core §3.1.2.5).
    ///
    /// - Step 1. `state` opens (sealed by this deployment, not expired), is for this upstream, and the browser holds
    ///   the binding cookie it was sent with — otherwise an error page (no redirect: nothing here is verified).
    /// - Step 2. `iss`, when present or when the upstream promises it, is the upstream's issuer (RFC 9207 mix-up
    ///   defence).
    /// - Step 3. An upstream `error` goes back to the app as `access_denied`.
    /// - Step 4. The code is exchanged and the ID token validated (``UpstreamOpenIDClient/validate(idToken:nonce:idp:metadata:)``);
    ///   when Latch forwarded `prompt=login` or `max_age`, the upstream's `auth_time` is required and must satisfy them
    ///   (``stepUpProblem(_:request:sentAt:now:)``), else the app gets `login_required`; the email domain and the
    ///   username claim are checked.
    /// - Step 5. One unit: the state is spent, the user created (first sign-in of this (issuer, sub)) or their kept
    ///   claims refreshed, the web session opened. Then the browser goes back to the app with a code.
    public func callback(idp id: String, _ parameters: [String: String], cookies: [String: String]) async throws -> BrowserAnswer {
        let now = clock.seconds()
        // Step 1.
        guard let sealed = parameters["state"], let state = sealer.open(sealed, as: .upstreamState, UpstreamState.self),
            state.request.expiresAt > now, state.idp == id
        else {
            return Self.errorPage(.stateNotFromHere)
        }
        guard let binding = cookies[BrowserCookie.binding], Secrets.constantTimeEquals(PKCE.hashHex(binding), state.binding) else {
            return Self.errorPage(.otherBrowser)
        }
        let request = state.request
        guard let idp = try await store.upstreamIdP(id: id) else {
            return Self.errorPage(.identityProviderNotConfigured)
        }
        let metadata: UpstreamMetadata
        do {
            metadata = try await upstream.metadata(issuer: idp.settings.issuer)
        } catch {
            return Self.errorPage(.upstreamUnreachable)
        }
        // Step 2.
        if let iss = parameters["iss"] ?? (metadata.issParameterSupported ? "" : nil), iss != metadata.issuer {
            return Self.errorPage(.answerFromOtherIssuer)
        }
        // Step 3.
        if let error = parameters["error"] {
            logger.info("upstream refused", metadata: ["idp": "\(id)", "error": "\(error.prefix(64))"])
            return .redirect(
                authorizationResponse(
                    request.redirectUri, [("error", ErrorCode.accessDenied.rawValue), ("error_description", "the identity provider refused the sign-in")],
                    state: request.state))
        }
        guard let code = parameters["code"], !code.isEmpty, code.utf8.count <= 2048 else {
            return Self.errorPage(.answerWithoutCode)
        }
        // Step 4.
        let identity: UpstreamIdentity
        do {
            let secret = try idp.sealedSecret.map { String(decoding: try secrets.open($0, keyID: Self.sealingContext(id)), as: UTF8.self) }
            identity = try await upstream.signIn(
                code: code, verifier: state.verifier, nonce: state.nonce, redirectURI: Self.callbackURL(issuer: issuer, idp: id), idp: idp,
                clientSecret: secret, clientAssertion: { audience in try clientAssertion(clientID: idp.settings.clientId, audience: audience) },
                metadata: metadata)
        } catch let error as LatchError where error.code == .upstreamInvalidIDToken {
            logger.warning("upstream ID token refused", metadata: ["idp": "\(id)", "error": "\(error)"])
            return Self.errorPage(.answerNotVerified)
        } catch let error as LatchError where error.code == .upstreamUnavailable {
            logger.warning("upstream unavailable", metadata: ["idp": "\(id)", "error": "\(error)"])
            return Self.errorPage(.upstreamTimedOut)
        }
        if let problem = stepUpProblem(identity.authTime, request: request, sentAt: state.sentAt, now: now) {
            logger.info("upstream authentication not fresh enough", metadata: ["idp": "\(id)", "problem": "\(problem)"])
            return .redirect(
                authorizationResponse(
                    request.redirectUri, [("error", ErrorCode.loginRequired.rawValue), ("error_description", problem)], state: request.state))
        }
        if let domains = idp.settings.allowedEmailDomains {
            // The domain after the one unquoted `@` (``EmailDomain``): `a@evil.example@corp.example` has none.
            let domain = identity.claims["email"]?.stringValue.flatMap(EmailDomain.of)
            let verified = identity.claims["email_verified"] == .bool(true)
            guard verified, let domain, domains.compactMap(EmailDomain.normalized).contains(domain) else {
                return Self.errorPage(.emailDomainRefused)
            }
        }
        guard let username = Self.username(identity, claim: idp.settings.usernameClaim) else {
            return Self.errorPage(.usernameClaimMissing)
        }
        let kept = Dictionary(
            idp.settings.keptClaims.compactMap { name in identity.claims[name].map { (name, $0) } }, uniquingKeysWith: { first, _ in first })
        // Step 5. The upstream's auth_time, never one made up: without it the time is unknown, stored as 0 (older than
        // any max_age, so every freshness check asks again) and left out of Latch's ID tokens.
        let authTime = identity.authTime.map { min($0, now) } ?? 0
        let secret = random.token()
        let sealedIDToken = try secrets.seal(Data(identity.idToken.utf8), keyID: "web-session-id-token")
        var user: User?
        for attempt in 0..<2 {
            let existing = try await store.federatedUser(issuer: metadata.issuer, subject: identity.subject)
            let candidate =
                existing
                ?? User(
                    id: random.timeOrderedID(now: clock.now()), username: username, kind: .oidc, issuer: metadata.issuer, subject: identity.subject,
                    claims: kept, createdAt: now)
            let webSession = WebSession(
                id: PKCE.hashHex(secret), userID: candidate.id, upstreamIdP: id, authTime: authTime, sealedUpstreamIDToken: sealedIDToken,
                createdAt: now, expiresAt: now.adding(seconds: settings.webSessionLifetime))
            // Built here, not in the unit's body: the body may run on a store thread, without the request's origin.
            let registered = SecurityEvent.now(
                .userRegistered, actor: "system", userID: candidate.id, clientID: request.clientId, detail: "OIDC:\(id) amr=fed", clock: clock,
                random: random)
            let signedIn = SecurityEvent.now(
                .signInSucceeded, actor: "user", userID: candidate.id, clientID: request.clientId, detail: "web upstream=\(id)", clock: clock,
                random: random)
            do {
                try await store.write { unit in
                    unit.consume(.jti(state.id, issuer: "latch:upstream-state", until: request.expiresAt), ifUnavailable: Refusal.replayed)
                    if existing == nil {
                        unit.insertUser(candidate, ifTaken: Refusal.taken)
                        unit.record(registered)
                    } else {
                        unit.requireUser(id: candidate.id, ifMissing: Refusal.taken)
                        if candidate.claims != kept { unit.updateClaims(userID: candidate.id, claims: kept) }
                    }
                    unit.insertWebSession(webSession)
                    unit.record(signedIn)
                }
                user = candidate
                break
            } catch Refusal.replayed {
                return Self.errorPage(.alreadyCompleted)
            } catch Refusal.taken where attempt == 0 {
                // A concurrent first sign-in created the user, or the username is another upstream subject's.
                continue
            } catch Refusal.taken {
                return Self.errorPage(.usernameTaken)
            }
        }
        guard let user else { throw LatchError(.temporarilyUnavailable, "the sign-in raced a change of its user; try again") }
        let issued = try issueCode(
            clientID: request.clientId, redirectURI: request.redirectUri, challenge: request.codeChallenge, nonce: request.nonce, userID: user.id,
            authTime: authTime, scope: request.scope, now: now)
        logger.debug("federated sign-in", metadata: ["idp": "\(id)", "user": "\(user.id)"])
        return .redirect(
            authorizationResponse(request.redirectUri, [("code", issued)], state: request.state),
            cookies: [
                BrowserCookie(name: BrowserCookie.session, value: secret, maxAge: settings.webSessionLifetime),
                BrowserCookie(name: BrowserCookie.binding, value: "", maxAge: 0),
            ])
    }

    enum Refusal: Error { case replayed, taken }

    /// Why the upstream's `auth_time` does not answer what Latch forwarded of the app's request, or nil when it does
    /// (or nothing was forwarded). OpenID Connect Core 1.0 §3.1.2.1: with `max_age` the ID token MUST carry
    /// `auth_time`, and `prompt=login` asks for a new authentication; §3.1.3.7 step 13: the client checks `auth_time`
    /// and requests a re-authentication when too much time has passed. With the clock skew allowance, `auth_time` must
    /// be within `max_age` of now, and for `prompt=login` no earlier than when the browser was sent upstream.
    func stepUpProblem(_ authTime: Int64?, request: PendingAuthorization, sentAt: Int64?, now: Int64) -> String? {
        guard request.forceLogin || request.maxAge != nil else { return nil }
        guard let authTime else { return "the identity provider did not say when the user authenticated (auth_time)" }
        let skew = upstream.clockSkew
        if let maxAge = request.maxAge, now - authTime > maxAge + skew {
            return "the identity provider's authentication is older than max_age"
        }
        if request.forceLogin, authTime < (sentAt ?? request.expiresAt - settings.pendingLifetime) - skew {
            return "the identity provider did not authenticate the user again (prompt=login)"
        }
        return nil
    }

    /// The username from the upstream's claims: a string of 1–255 printable bytes.
    static func username(_ identity: UpstreamIdentity, claim: String) -> String? {
        let value = claim == "sub" ? identity.subject : identity.claims[claim]?.stringValue
        guard let value, !value.isEmpty, value.utf8.count <= 255, !value.containsControlCharacters else {
            return nil
        }
        return value
    }

    /// The sealing context of upstream `id`'s client secret.
    public static func sealingContext(_ id: String) -> String { "upstream-idp:\(id)" }

    /// A `private_key_jwt` client assertion (RFC 7523 §2.2) signed with the deployment's signing key (the upstream
    /// reads Latch's JWKS).
    func clientAssertion(clientID: String, audience: String) throws -> String {
        let now = clock.seconds()
        return try keys.signer.sign(
            claims: [
                "iss": .string(clientID), "sub": .string(clientID), "aud": .string(audience), "iat": .int(now), "exp": .int(now + 60),
                "jti": .string(random.token(byteCount: 16)),
            ])
    }

    func issueCode(
        clientID: String, redirectURI: String, challenge: String, nonce: String?, userID: String, authTime: Int64, scope: String, now: Int64
    ) throws -> String {
        try sealer.seal(
            AuthorizationCodeContent(
                id: random.token(byteCount: 16), clientId: clientID, redirectUri: redirectURI, codeChallenge: challenge, nonce: nonce, userId: userID,
                authTime: authTime, amr: ["fed"], scope: scope, sessionId: random.timeOrderedID(now: clock.now()),
                expiresAt: now.adding(seconds: min(settings.codeLifetime, 60))),
            as: .authorizationCode)
    }

    /// The browser's active web session, whose user still exists.
    func activeWebSession(_ cookies: [String: String], now: Int64) async throws -> WebSession? {
        guard let secret = cookies[BrowserCookie.session], secret.utf8.count == 43,
            let session = try await store.webSession(id: PKCE.hashHex(secret)), session.isActive(at: now)
        else { return nil }
        return session
    }
}
