import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// An upstream OpenID provider behind the `UpstreamHTTPClient` seam: discovery, a JWKS with the key the test holds
/// (`TestKeys.rsa`, kid `up-1`), and a token endpoint answering, per authorization code, an ID token the test's claims
/// make — signed for real at the moment of the exchange.
final class FakeUpstream: UpstreamHTTPClient {
    static let issuer = "https://idp.test"
    static let clientID = "latch-at-idp"

    struct State {
        var claims: [String: [String: JSONValue]] = [:]
        var discoveryDown = false
        var tokenStatus = 200
        var forms: [[String: String]] = []
    }

    private let state = Locked(State())

    /// The ID token claims the token endpoint answers for `code`.
    func answer(code: String, claims: [String: JSONValue]) { state.withLock { $0.claims[code] = claims } }
    func discoveryDown(_ down: Bool) { state.withLock { $0.discoveryDown = down } }
    func tokenStatus(_ status: Int) { state.withLock { $0.tokenStatus = status } }
    var forms: [[String: String]] { state.withLock { $0.forms } }

    struct Unreachable: Error {}

    func get(_ url: String, bearer: String?, timeout: Int64) async throws -> UpstreamResponse {
        switch url {
        case Self.issuer + "/.well-known/openid-configuration":
            if state.withLock({ $0.discoveryDown }) { throw Unreachable() }
            let document: JSONValue = [
                "issuer": .string(Self.issuer), "authorization_endpoint": .string(Self.issuer + "/authorize"),
                "token_endpoint": .string(Self.issuer + "/token"), "jwks_uri": .string(Self.issuer + "/jwks"),
                "end_session_endpoint": .string(Self.issuer + "/logout"), "authorization_response_iss_parameter_supported": true,
            ]
            return UpstreamResponse(status: 200, body: Array(document.serialized()))
        case Self.issuer + "/jwks":
            let body = try JSONEncoder().encode(JSONWebKeySet(keys: [TestKeys.rsa.publicKey.jwk(kid: "up-1")]))
            return UpstreamResponse(status: 200, body: Array(body))
        default:
            return UpstreamResponse(status: 404, body: [])
        }
    }

    func postForm(_ url: String, _ form: [(String, String)], basic: (user: String, password: String)?, timeout: Int64) async throws -> UpstreamResponse {
        let fields = Dictionary(form, uniquingKeysWith: { first, _ in first })
        let (status, claims) = state.withLock { state in
            state.forms.append(fields)
            return (state.tokenStatus, fields["code"].flatMap { state.claims[$0] })
        }
        guard url == Self.issuer + "/token", status == 200, let claims else {
            return UpstreamResponse(status: status == 200 ? 400 : status, body: Array(#"{"error":"invalid_grant"}"#.utf8))
        }
        let idToken = try JWTBuilder(header: ["kid": "up-1"], claims: claims).sign(with: TestKeys.rsa)
        let body: JSONValue = ["id_token": .string(idToken), "access_token": "at", "token_type": "Bearer"]
        return UpstreamResponse(status: 200, body: Array(body.serialized()))
    }
}

/// The authorization endpoint and the upstream callback on the in-memory store: which requests get an error page and
/// which a redirect with `error`/`state`/`iss`, the upstream round trip's sealed state (browser-bound, single use,
/// expiring), the upstream's refusals mapped to pages or codes, step-up (`prompt=login`, `max_age`) against the
/// upstream's `auth_time`, email domains, and single sign-on from the web session — with real signed ID tokens.
@Suite("AuthorizationService on the in-memory store")
struct AuthorizationServiceTests {
    static let redirectURI = "https://app.example/callback"
    static let verifier = "verifier-0123456789-0123456789-0123456789-abc"

    let engines: Engines
    let upstream = FakeUpstream()
    let sealer = FederationSealer(keyEncryptionKey: KeySealer.derivedKey(from: [UInt8](repeating: 6, count: 32), purpose: "federation test"))
    let service: AuthorizationService

    init() async throws {
        engines = try await Engines.make()
        let secrets = try KeySealer(keyEncryptionKey: [UInt8](repeating: 1, count: 32))
        service = AuthorizationService(
            store: engines.store, clients: engines.clients, upstream: UpstreamOpenIDClient(http: upstream, clock: engines.clock.clock),
            sealer: sealer, secrets: secrets, keys: engines.keys, tokens: engines.tokens, settings: FederationSettings(), clock: engines.clock.clock, random: engines.random)
        _ = try await engines.store.addClient(
            Client(
                id: "web", name: "Web app", createdAt: 0,
                evidence: ClientEvidence(
                    federation: .init(redirectUris: [Self.redirectURI, "http://127.0.0.1/cb"], upstreamIdps: ["corp", "other", "unconfigured"]))))
        try await addIdP("corp")
    }

    func addIdP(_ id: String, domains: [String]? = nil) async throws {
        let settings = UpstreamIdP.Settings(
            displayName: "IdP \(id)", issuer: FakeUpstream.issuer, clientId: FakeUpstream.clientID, clientAuthentication: .clientSecretPost,
            scopes: ["openid", "email"], usernameClaim: "email", keptClaims: ["email"], allowedEmailDomains: domains, useUserinfo: false,
            algorithms: ["RS256"])
        let sealed = try KeySealer(keyEncryptionKey: [UInt8](repeating: 1, count: 32)).seal(
            Data("upstream-secret".utf8), keyID: AuthorizationService.sealingContext(id))
        struct Taken: Error {}
        try await engines.store.write { $0.insertUpstreamIdP(UpstreamIdP(id: id, settings: settings, sealedSecret: sealed, createdAt: 0), ifTaken: Taken()) }
    }

    /// A valid authorization request of client `web`, changed by `extra` (nil removes a parameter).
    func request(_ extra: [String: String?] = [:]) -> [String: String] {
        var parameters = [
            "client_id": "web", "redirect_uri": Self.redirectURI, "response_type": "code", "state": "app-state", "scope": "openid",
            "code_challenge": PKCE.challenge(Self.verifier), "code_challenge_method": "S256", "nonce": "app-nonce",
        ]
        for (name, value) in extra { parameters[name] = value }
        return parameters
    }

    func authorize(_ extra: [String: String?] = [:], repeated: Set<String> = [], cookies: [String: String] = [:]) async throws -> BrowserAnswer {
        try await service.authorize(request(extra), repeated: repeated, cookies: cookies)
    }

    /// The URL a redirect goes to and its query.
    static func redirect(_ answer: BrowserAnswer, sourceLocation: SourceLocation = #_sourceLocation) throws -> (url: String, query: [String: String]) {
        guard case .redirect(let url) = answer.body else {
            Issue.record("expected a redirect, got \(answer.body)", sourceLocation: sourceLocation)
            return ("", [:])
        }
        // application/x-www-form-urlencoded: `+` is a space, then percent-decoding.
        let query = url.split(separator: "?", maxSplits: 1).dropFirst().first ?? ""
        let pairs = query.split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).map {
                $0.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            return (parts[0], parts.count > 1 ? parts[1] : "")
        }
        return (url, Dictionary(pairs, uniquingKeysWith: { first, _ in first }))
    }

    /// The error page's code and status, or nil for anything else.
    static func errorPage(_ answer: BrowserAnswer) -> (code: String, status: Int)? {
        guard case .page(.error(let problem)) = answer.body else { return nil }
        return (problem.code.rawValue, problem.status)
    }

    /// Starts a sign-in that goes to the upstream; returns its `state`, `nonce` and the browser's binding cookie.
    func toUpstream(_ extra: [String: String?] = [:]) async throws -> (state: String, nonce: String, cookies: [String: String]) {
        let answer = try await authorize(extra)
        let (url, query) = try Self.redirect(answer)
        #expect(url.hasPrefix(FakeUpstream.issuer + "/authorize?"))
        let binding = try #require(answer.cookies.first { $0.name == BrowserCookie.binding }?.value)
        return (try #require(query["state"]), try #require(query["nonce"]), [BrowserCookie.binding: binding])
    }

    /// ID token claims for `nonce`, issued now, of subject `sub`.
    func claims(nonce: String, sub: String = "u-1", email: String = "ann@corp.example", extra: [String: JSONValue] = [:]) -> [String: JSONValue] {
        var claims: [String: JSONValue] = [
            "iss": .string(FakeUpstream.issuer), "aud": .string(FakeUpstream.clientID), "sub": .string(sub), "nonce": .string(nonce),
            "iat": .int(engines.now), "exp": .int(engines.now + 300), "email": .string(email), "email_verified": true, "auth_time": .int(engines.now),
        ]
        claims.merge(extra) { _, new in new }
        return claims
    }

    /// The whole round trip: authorize, the upstream's ID token for `code`, the callback.
    func signIn(
        _ extra: [String: String?] = [:], code: String = "c-1", claims change: (inout [String: JSONValue]) -> Void = { _ in }
    ) async throws -> BrowserAnswer {
        let started = try await toUpstream(extra)
        var claims = claims(nonce: started.nonce)
        change(&claims)
        upstream.answer(code: code, claims: claims)
        return try await service.callback(idp: "corp", ["state": started.state, "code": code, "iss": FakeUpstream.issuer], cookies: started.cookies)
    }

    func federatedUsers() async throws -> Int { try await engines.store.federatedUser(issuer: FakeUpstream.issuer, subject: "u-1") == nil ? 0 : 1 }

    // MARK: The authorization request

    @Test("Without a verified client and redirect URI the answer is an error page, never a redirect (no open redirector)")
    func errorPages() async throws {
        #expect(Self.errorPage(try await authorize(["client_id": "nobody"]))?.code == "invalid_client")
        #expect(Self.errorPage(try await authorize(["client_id": nil]))?.code == "invalid_request")
        #expect(Self.errorPage(try await authorize(["redirect_uri": "https://evil.example/cb"]))?.code == "unregistered_redirect_uri")
        #expect(Self.errorPage(try await authorize(["redirect_uri": nil]))?.code == "unregistered_redirect_uri")
        #expect(Self.errorPage(try await authorize(repeated: ["redirect_uri"]))?.code == "invalid_request")
        // A loopback redirect URI matches with any port (RFC 8252 §7.3); another path does not.
        #expect(Self.errorPage(try await authorize(["redirect_uri": "http://127.0.0.1:51234/cb"])) == nil)
        #expect(Self.errorPage(try await authorize(["redirect_uri": "http://127.0.0.1:51234/other"]))?.code == "unregistered_redirect_uri")
    }

    /// A change to a valid request and the error the app is redirected with.
    static let redirectedErrors: [([String: String?], String)] = [
        (["response_type": "token"], "unsupported_response_type"),
        (["request": "eyJ..."], "request_not_supported"),
        (["request_uri": "https://app.example/r"], "request_uri_not_supported"),
        (["response_mode": "fragment"], "invalid_request"),
        (["code_challenge": nil], "invalid_request"),
        (["code_challenge_method": "plain"], "invalid_request"),
        (["code_challenge": "short"], "invalid_request"),
        (["nonce": ""], "invalid_request"),
        (["scope": "profile"], "invalid_scope"),
        (["scope": "openid admin"], "invalid_scope"),
        (["prompt": "sometimes"], "invalid_request"),
        (["prompt": "none login"], "invalid_request"),
        (["max_age": "-1"], "invalid_request"),
        (["idp_hint": "unconfigured"], "invalid_request"),
        (["prompt": "none"], "login_required"),
    ]

    @Test("Once client and redirect URI are verified, each bad request is a redirect with error, state and iss; nothing is written",
        arguments: 0..<AuthorizationServiceTests.redirectedErrors.count)
    func redirectedError(_ index: Int) async throws {
        let (change, code) = Self.redirectedErrors[index]
        let before = engines.rowCounts
        let (url, query) = try Self.redirect(try await authorize(change))
        #expect(url.hasPrefix(Self.redirectURI + "?"))
        #expect(query["error"] == code && query["state"] == "app-state" && query["iss"] == "https://latch.test")
        #expect(engines.rowCounts == before)
    }

    @Test("A missing state is refused (redirected without one); an app without a configured upstream is access_denied")
    func stateAndUpstreams() async throws {
        let (_, query) = try Self.redirect(try await authorize(["state": nil]))
        #expect(query["error"] == "invalid_request" && query["state"] == nil)
        _ = try await engines.store.addClient(
            Client(id: "bare", name: "Bare", createdAt: 0, evidence: ClientEvidence(federation: .init(redirectUris: [Self.redirectURI], upstreamIdps: ["gone"]))))
        // The client registry reads the store again at most once a second.
        engines.clock.advance(by: 1)
        #expect(try Self.redirect(try await authorize(["client_id": "bare"])).query["error"] == "access_denied")
    }

    @Test("One upstream: the browser goes there with PKCE S256, a fresh nonce, the sealed state, and a binding cookie; prompt=login, max_age and login_hint are forwarded")
    func toTheUpstream() async throws {
        let answer = try await authorize(["prompt": "login", "max_age": "120", "login_hint": "ann"])
        let (_, query) = try Self.redirect(answer)
        #expect(query["client_id"] == FakeUpstream.clientID && query["response_type"] == "code" && query["scope"] == "openid email")
        #expect(query["redirect_uri"] == "https://latch.test/oauth2/upstream/corp/callback")
        #expect(query["code_challenge_method"] == "S256" && PKCE.isChallenge(query["code_challenge"] ?? ""))
        #expect(query["nonce"] != nil && query["nonce"] != "app-nonce", "the upstream gets Latch's own nonce")
        #expect(query["prompt"] == "login" && query["max_age"] == "120" && query["login_hint"] == "ann")
        let binding = try #require(answer.cookies.first)
        #expect(binding.name == BrowserCookie.binding && binding.value.utf8.count == 43 && binding.maxAge == 600)
        // The binding is reused by a second tab.
        let second = try await authorize(cookies: [BrowserCookie.binding: binding.value])
        #expect(second.cookies.isEmpty)
    }

    @Test("Several upstreams: the chooser lists the configured ones; a choice outside them, or a stale request, is an error page")
    func chooser() async throws {
        try await addIdP("other")
        guard case .page(.chooser(let name, let choices)) = try await authorize().body else { Issue.record("no chooser"); return }
        #expect(name == "Web app" && choices.map(\.id) == ["corp", "other"])
        let request = try #require(URLComponents(string: choices[0].url)?.queryItems?.first { $0.name == "request" }?.value)
        #expect(Self.errorPage(try await service.`continue`(request: request, idp: "unconfigured", cookies: [:]))?.code == "upstream_idp_unknown")
        #expect(try Self.redirect(try await service.`continue`(request: request, idp: "other", cookies: [:])).url.hasPrefix(FakeUpstream.issuer))
        #expect(Self.errorPage(try await service.`continue`(request: "forged", idp: "corp", cookies: [:]))?.code == "invalid_authorization_state")
        engines.clock.advance(by: 600)
        #expect(Self.errorPage(try await service.`continue`(request: request, idp: "corp", cookies: [:]))?.code == "invalid_authorization_state")
        // idp_hint picks one without the chooser.
        #expect(try Self.redirect(try await authorize(["idp_hint": "other"])).url.hasPrefix(FakeUpstream.issuer))
    }

    @Test("An unreachable upstream is an error page (502), nothing written")
    func upstreamDown() async throws {
        upstream.discoveryDown(true)
        let page = try #require(Self.errorPage(try await authorize()))
        #expect(page.code == "upstream_unavailable" && page.status == 502)
    }

    // MARK: The callback

    @Test("The callback creates the user from the ID token, opens the web session, and sends the browser back with a code, state and iss")
    func callback() async throws {
        let answer = try await signIn()
        let (url, query) = try Self.redirect(answer)
        #expect(url.hasPrefix(Self.redirectURI + "?") && query["code"] != nil && query["state"] == "app-state" && query["iss"] == "https://latch.test")
        let user = try #require(try await engines.store.federatedUser(issuer: FakeUpstream.issuer, subject: "u-1"))
        #expect(user.kind == .oidc && user.username == "ann@corp.example" && user.claims == ["email": "ann@corp.example"])
        let secret = try #require(answer.cookies.first { $0.name == BrowserCookie.session }?.value)
        let session = try #require(try await engines.store.webSession(id: PKCE.hashHex(secret)))
        #expect(session.userID == user.id && session.upstreamIdP == "corp" && session.authTime == engines.now && session.expiresAt == engines.now + 3600)
        #expect(answer.cookies.contains(BrowserCookie(name: BrowserCookie.binding, value: "", maxAge: 0)))
        // Latch authenticated to the upstream with its client secret (client_secret_post) and the PKCE verifier.
        let form = try #require(upstream.forms.last)
        #expect(form["client_secret"] == "upstream-secret" && form["code_verifier"] != nil && form["grant_type"] == "authorization_code")
        let kinds = try await engines.store.auditRecords(matching: AuditQuery(subject: user.id)).map(\.event.kind.rawValue).sorted()
        #expect(kinds == ["signin.succeeded", "user.registered"])
    }

    @Test("A callback's state is single use: the replay is an error page and writes nothing")
    func replay() async throws {
        let started = try await toUpstream()
        upstream.answer(code: "c-1", claims: claims(nonce: started.nonce))
        let parameters = ["state": started.state, "code": "c-1", "iss": FakeUpstream.issuer]
        _ = try Self.redirect(try await service.callback(idp: "corp", parameters, cookies: started.cookies))
        let before = engines.rowCounts
        #expect(Self.errorPage(try await service.callback(idp: "corp", parameters, cookies: started.cookies))?.code == "invalid_authorization_state")
        #expect(engines.rowCounts == before)
    }

    @Test("Callback refusals before anything is exchanged: another browser, another upstream's path, a forged or expired state, a mix-up iss")
    func callbackRefusals() async throws {
        let started = try await toUpstream()
        upstream.answer(code: "c-1", claims: claims(nonce: started.nonce))
        func callback(idp: String = "corp", _ parameters: [String: String], cookies: [String: String]? = nil) async throws -> String? {
            Self.errorPage(try await service.callback(idp: idp, parameters, cookies: cookies ?? started.cookies))?.code
        }
        let good = ["state": started.state, "code": "c-1", "iss": FakeUpstream.issuer]
        #expect(try await callback(good, cookies: [:]) == "invalid_authorization_state")
        #expect(try await callback(good, cookies: [BrowserCookie.binding: String(repeating: "x", count: 43)]) == "invalid_authorization_state")
        #expect(try await callback(idp: "other", good) == "invalid_authorization_state")
        #expect(try await callback(good.merging(["state": "forged"]) { $1 }) == "invalid_authorization_state")
        #expect(try await callback(good.merging(["iss": "https://evil.example"]) { $1 }) == "invalid_authorization_state")
        // The upstream promises iss (RFC 9207): an answer without it is a mix-up too.
        #expect(try await callback(good.filter { $0.key != "iss" }) == "invalid_authorization_state")
        #expect(upstream.forms.isEmpty, "no code was exchanged")
        engines.clock.advance(by: 600)
        #expect(try await callback(good) == "invalid_authorization_state")
        #expect(try await federatedUsers() == 0 && engines.store.count(.users) == 0)
    }

    @Test("The upstream's refusals: its error goes back to the app as access_denied; a failed exchange or a bad ID token is a 502 page; nothing written")
    func upstreamRefusals() async throws {
        var started = try await toUpstream()
        let denied = try Self.redirect(
            try await service.callback(idp: "corp", ["state": started.state, "error": "access_denied", "iss": FakeUpstream.issuer], cookies: started.cookies))
        #expect(denied.query["error"] == "access_denied" && denied.query["state"] == "app-state")
        // The token endpoint refuses the code.
        upstream.tokenStatus(400)
        var page = try #require(
            Self.errorPage(try await service.callback(idp: "corp", ["state": started.state, "code": "c-1", "iss": FakeUpstream.issuer], cookies: started.cookies)))
        #expect(page.code == "upstream_unavailable" && page.status == 502)
        upstream.tokenStatus(200)
        // ID tokens that fail validation, each a 502 page.
        let bad: [(inout [String: JSONValue]) -> Void] = [
            { $0["nonce"] = "another" }, { $0["aud"] = "someone-else" }, { $0["iss"] = "https://evil.example" },
            { $0["exp"] = .int(0) }, { $0["sub"] = "" },
        ]
        for (index, change) in bad.enumerated() {
            started = try await toUpstream()
            var claims = claims(nonce: started.nonce)
            change(&claims)
            upstream.answer(code: "bad-\(index)", claims: claims)
            page = try #require(
                Self.errorPage(
                    try await service.callback(idp: "corp", ["state": started.state, "code": "bad-\(index)", "iss": FakeUpstream.issuer], cookies: started.cookies)))
            #expect(page.code == "upstream_invalid_id_token" && page.status == 502, "case \(index)")
        }
        #expect(try await federatedUsers() == 0 && engines.store.count(.users) == 0)
    }

    // MARK: Step-up and policy

    @Test("prompt=login: an upstream auth_time from before the browser was sent is login_required (nothing written); a fresh one signs in")
    func promptLogin() async throws {
        let stale = try Self.redirect(try await signIn(["prompt": "login"]) { $0["auth_time"] = .int(engines.now - 61) })
        #expect(stale.query["error"] == "login_required" && stale.query["state"] == "app-state")
        #expect(engines.store.count(.users) == 0)
        let missing = try Self.redirect(try await signIn(["prompt": "login"], code: "c-2") { $0["auth_time"] = nil })
        #expect(missing.query["error"] == "login_required")
        #expect(try Self.redirect(try await signIn(["prompt": "login"], code: "c-3")).query["code"] != nil)
    }

    @Test("max_age: an upstream authentication older than max_age (plus the clock skew) is login_required; within it, a code")
    func maxAge() async throws {
        let old = try Self.redirect(try await signIn(["max_age": "100"]) { $0["auth_time"] = .int(engines.now - 161) })
        #expect(old.query["error"] == "login_required")
        #expect(try Self.redirect(try await signIn(["max_age": "100"], code: "c-2") { $0["auth_time"] = .int(engines.now - 160) }).query["code"] != nil)
    }

    @Test("Without prompt=login or max_age a missing auth_time is stored as unknown (0), never made up")
    func authTimeUnknown() async throws {
        let answer = try await signIn { $0["auth_time"] = nil }
        let secret = try #require(answer.cookies.first { $0.name == BrowserCookie.session }?.value)
        #expect(try await engines.store.webSession(id: PKCE.hashHex(secret))?.authTime == 0)
    }

    @Test("Allowed email domains: an unverified address, or one in another domain, is upstream_identity_refused (403), nothing written")
    func emailDomains() async throws {
        struct Gone: Error {}
        try await engines.store.write { $0.deleteUpstreamIdP(id: "corp", ifMissing: Gone()) }
        try await addIdP("corp", domains: ["corp.example"])
        var page = Self.errorPage(try await signIn { $0["email_verified"] = false })
        #expect(page?.code == "upstream_identity_refused" && page?.status == 403)
        page = Self.errorPage(try await signIn(code: "c-2") { $0["email"] = "ann@elsewhere.example" })
        #expect(page?.code == "upstream_identity_refused")
        #expect(engines.store.count(.users) == 0)
        #expect(try Self.redirect(try await signIn(code: "c-3")).query["code"] != nil)
    }

    // MARK: Single sign-on

    @Test("An active web session answers the next request at once with a code; prompt=login, a too-old max_age or an expired session go upstream")
    func singleSignOn() async throws {
        let first = try await signIn()
        let cookies = [BrowserCookie.session: try #require(first.cookies.first { $0.name == BrowserCookie.session }?.value)]
        let again = try Self.redirect(try await authorize(cookies: cookies))
        #expect(again.url.hasPrefix(Self.redirectURI) && again.query["code"] != nil)
        #expect(try Self.redirect(try await authorize(["prompt": "none"], cookies: cookies)).query["code"] != nil)
        #expect(try Self.redirect(try await authorize(["prompt": "login"], cookies: cookies)).url.hasPrefix(FakeUpstream.issuer))
        engines.clock.advance(by: 30)
        #expect(try Self.redirect(try await authorize(["max_age": "10"], cookies: cookies)).url.hasPrefix(FakeUpstream.issuer))
        engines.clock.advance(by: 3_600)
        #expect(try Self.redirect(try await authorize(cookies: cookies)).url.hasPrefix(FakeUpstream.issuer))
        #expect(try Self.redirect(try await authorize(["prompt": "none"], cookies: cookies)).query["error"] == "login_required")
    }

    // MARK: The code

    /// The token endpoint with the authorization code grant, redeeming codes sealed by this service.
    var codeEndpoint: TokenEndpoint {
        TokenEndpoint(
            grants: [
                AuthorizationCodeGrant(
                    store: engines.store, sealer: sealer, minter: engines.minter, refreshTokens: engines.refreshTokens, tokens: engines.tokens,
                    clock: engines.clock.clock, random: engines.random)
            ], clients: engines.clients)
    }

    func redeem(_ code: String, verifier: String = Self.verifier, redirectURI: String = Self.redirectURI, client: String = "web") async throws -> TokenResponse {
        try await codeEndpoint.exchange([
            "grant_type": "authorization_code", "code": code, "code_verifier": verifier, "redirect_uri": redirectURI, "client_id": client,
        ])
    }

    @Test("A code needs its PKCE verifier, redirect URI and client; it is good once, and a second use revokes what the first issued")
    func codeRedemption() async throws {
        let code = try #require(try Self.redirect(try await signIn()).query["code"])
        await expectCode(.invalidGrant) { _ = try await redeem(code, verifier: String(repeating: "v", count: 43)) }
        await expectCode(.invalidGrant) { _ = try await redeem(code, redirectURI: "http://127.0.0.1/cb") }
        await expectCode(.invalidGrant) { _ = try await redeem(code, client: "other") }
        await expectCode(.invalidGrant) { _ = try await redeem("forged") }
        let tokens = try await redeem(code)
        #expect(tokens.refreshToken.isEmpty == false)
        let refused = await FidoServiceTests.refusal(.invalidGrant) { _ = try await redeem(code) }
        #expect(refused?.verifiedSubject != nil)
        await expectCode(.invalidGrant) { _ = try await engines.refresh(tokens.refreshToken, client: "web") }
    }

    @Test("A code expires after 60 s")
    func codeExpires() async throws {
        let code = try #require(try Self.redirect(try await signIn()).query["code"])
        engines.clock.advance(by: 60)
        await expectCode(.invalidGrant) { _ = try await redeem(code) }
        #expect(try await engines.store.federatedUser(issuer: FakeUpstream.issuer, subject: "u-1") != nil)
    }
}
