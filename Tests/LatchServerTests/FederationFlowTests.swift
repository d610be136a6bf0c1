import AsyncHTTPClient
import Foundation
import HTTPTypes
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
@testable import LatchServer
@testable import LatchSQLite
import LatchTesting
import NIOCore
import NIOHTTP1
import Testing

/// Browser sign-in end to end: Latch over HTTP (in-process router) as the apps' OpenID provider, a real upstream OpenID
/// provider (Authlib, `Tests/Peers/upstream_oidc_provider.py`) as a process, and a browser that follows redirects,
/// keeps cookies and submits the upstream's login form.
@Suite("Federated sign-in through an upstream OpenID provider", .serialized)
struct FederationFlowTests {
    static let appRedirect = "com.example.app:/callback"
    static let appSignedOut = "com.example.app:/signed-out"
    static let upstreamClientID = "latch-rp"
    static let upstreamSecret = "upstream-secret-0123456789abcdef"

    /// The app's side of one authorization request: PKCE verifier, state, nonce.
    struct AppRequest {
        let verifier = Base64URL.encode((0..<32).map { _ in UInt8.random(in: 0...255) })
        let state = Base64URL.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        let nonce = Base64URL.encode((0..<16).map { _ in UInt8.random(in: 0...255) })

        func url(client: String = "default", redirect: String = FederationFlowTests.appRedirect, extra: [(String, String)] = []) -> String {
            "https://latch.test/oauth2/authorize?" + FormEncoding.query(
                [
                    ("response_type", "code"), ("client_id", client), ("redirect_uri", redirect), ("scope", "openid profile"), ("state", state),
                    ("nonce", nonce), ("code_challenge", PKCE.challenge(verifier)), ("code_challenge_method", "S256"),
                ] + extra)
        }
    }

    /// Runs `body` with a deployment (clock starting now: the upstream's tokens carry real times), the upstream provider
    /// registered as `corp` and allowed for the default client.
    static func withUpstream(
        configure: @escaping (inout LatchConfiguration) -> Void = { _ in },
        users: [String] = ["alice:password:alice@example.com:Alice Liddell", "bob:hunter22:bob@other.example:Bob"],
        allowedEmailDomains: [String]? = nil,
        _ body: @Sendable (Client, UpstreamProviderProcess, Deployment) async throws -> Void
    ) async throws {
        // Its tests take `.requires(.upstreamProvider)`: skipped without Authlib and Flask, failed here under LATCH_CI=1.
        try await Peer.upstreamProvider.require()
        let directory = TemporaryDirectory(prefix: "latch-upstream")
        defer { directory.remove() }
        let provider = try await UpstreamProviderProcess(
            clientID: upstreamClientID, clientSecret: upstreamSecret,
            redirectURIs: [
                "https://latch.test/oauth2/upstream/corp/callback", "https://latch.test/oauth2/upstream/corp/signed-out",
                "https://latch.test/oauth2/upstream/partner/callback",
            ],
            users: users, output: directory.path + "/upstream.log")
        do {
            let deployment = try await Deployment.make(clock: .running()) { configuration in
                configuration.federation.upstreamTimeout = 8
                configure(&configuration)
            }
            try await deployment.run { client in
                let added = try await client.admin(
                    .post, "/admin/v1/upstream-idps",
                    AdminUpstreamIdPRequest(
                        id: "corp", displayName: "Corp SSO", issuer: provider.issuer, clientId: upstreamClientID, clientSecret: upstreamSecret,
                        scopes: ["openid", "profile", "email"], usernameClaim: "preferred_username", keptClaims: ["email", "name"],
                        allowedEmailDomains: allowedEmailDomains))
                #expect(added.status == .created, "\(added.json)")
                let patched = try await client.admin(
                    .patch, "/admin/v1/clients/default",
                    AdminClientPatch(redirectUris: [appRedirect, "https://app.example.com/cb"], postLogoutRedirectUris: [appSignedOut], upstreamIdps: ["corp"]))
                #expect(patched.status == .ok, "\(patched.json)")
                try await body(client, provider, deployment)
            }
        } catch {
            await provider.stop()
            throw error
        }
        await provider.stop()
    }

    static func upstreamState(_ provider: UpstreamProviderProcess) async throws -> JSONValue {
        let response = try await TestBrowser.http.execute(HTTPClientRequest(url: provider.issuer + "/test/state"), timeout: .seconds(10))
        return try JSONValue.parse(Array(try await response.body.collect(upTo: 1 << 20).readableBytesView))
    }

    static func misbehave(_ provider: UpstreamProviderProcess, _ mode: String) async throws {
        var request = HTTPClientRequest(url: provider.issuer + "/test/misbehave")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"mode": "\#(mode)"}"#))
        let response = try await TestBrowser.http.execute(request, timeout: .seconds(10))
        #expect(response.status.code == 200)
    }

    /// Redeems the code of the app redirect `url` for `request`.
    static func redeem(_ client: Client, _ url: String, _ request: AppRequest, redirect: String = appRedirect) async throws -> Reply {
        let code = queryParameters(url)["code"] ?? ""
        return try await client.postForm(
            "/oauth2/token",
            [("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirect), ("code_verifier", request.verifier), ("client_id", "default")])
    }

    @Test(
        "The whole app flow: authorize → upstream login → callback → code → tokens → refresh → single sign-on → RP-initiated logout through the upstream; discovery and admin answers",
        .requires(.upstreamProvider))
    func wholeFlow() async throws {
        try await Self.withUpstream { client, provider, deployment in
            let discovery = try await client.get("/.well-known/openid-configuration").json
            #expect(discovery["authorization_endpoint"]?.stringValue == "https://latch.test/oauth2/authorize")
            #expect(discovery["end_session_endpoint"]?.stringValue == "https://latch.test/oauth2/logout")
            #expect(discovery["code_challenge_methods_supported"] == .array([.string("S256")]))
            #expect(discovery["authorization_response_iss_parameter_supported"] == .bool(true))
            #expect(discovery["grant_types_supported"]?.arrayValue?.contains(.string("authorization_code")) == true)
            let listed = try await client.admin(.get, "/admin/v1/upstream-idps").decode(AdminUpstreamIdPList.self)
            #expect(listed.upstreamIdps.map(\.callbackURL) == ["https://latch.test/oauth2/upstream/corp/callback"])
            #expect(listed.upstreamIdps.first?.hasClientSecret == true)
            #expect(!String(decoding: try await client.admin(.get, "/admin/v1/upstream-idps/corp").body, as: UTF8.self).contains(Self.upstreamSecret))

            let browser = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            let app = AppRequest()
            // Latch sends the browser to the upstream, which shows its login form.
            let login = try await browser.open(app.url())
            #expect(login.status == 200 && login.body.contains("Example Upstream IdP"), "\(login.body.prefix(300))")
            #expect(browser.visited.withLock { $0.contains { $0.hasPrefix(provider.issuer + "/authorize?") } })
            #expect(browser.cookies("https://latch.test")["__Host-latch_authz"] != nil)
            // Signing in there brings the browser back through Latch's callback to the app, with a code, the state and iss.
            let back = try await browser.signIn(at: login)
            let redirect = try #require(back.appURL, "\(back)")
            #expect(redirect.hasPrefix(Self.appRedirect + "?"))
            let parameters = queryParameters(redirect)
            #expect(parameters["state"] == app.state)
            #expect(parameters["iss"] == "https://latch.test")
            #expect(browser.cookies("https://latch.test")["__Host-latch_session"] != nil)
            #expect(browser.cookies("https://latch.test")["__Host-latch_authz"] == nil)

            let tokens = try await Self.redeem(client, redirect, app)
            #expect(tokens.status == .ok, "\(tokens.json)")
            let response = try tokens.decode(TokenResponse.self)
            let jwks = try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self)
            let claims = try verifyAgainstJWKS(response.idToken, jwks: jwks)
            #expect(claims["nonce"]?.stringValue == app.nonce)
            #expect(claims["aud"]?.stringValue == "default")
            #expect(claims["username"]?.stringValue == "alice")
            #expect(claims["amr"] == .array([.string("fed")]))
            #expect(claims["email"]?.stringValue == "alice@example.com")
            #expect(claims["name"]?.stringValue == "Alice Liddell")
            let user = try #require(try await deployment.store.federatedUser(issuer: provider.issuer, subject: "user-alice"))
            #expect(user.kind == .oidc && user.id == claims["sub"]?.stringValue)
            // The refresh token works like any other.
            let refreshed = try await client.refresh(response.refreshToken)
            #expect(refreshed.status == .ok, "\(refreshed.json)")
            let refreshToken = try refreshed.decode(TokenResponse.self).refreshToken
            // The ID token from the refresh carries no nonce (OIDC Core §12.2).
            #expect(try verifyAgainstJWKS(try refreshed.decode(TokenResponse.self).idToken, jwks: jwks)["nonce"] == nil)

            // Single sign-on: a second app sign-in in this browser does not ask the upstream again.
            let second = AppRequest()
            let again = try await browser.open(second.url(redirect: "https://app.example.com/cb"))
            let secondRedirect = try #require(again.appURL, "\(again)")
            #expect(secondRedirect.hasPrefix("https://app.example.com/cb?"))
            let secondTokens = try await Self.redeem(client, secondRedirect, second, redirect: "https://app.example.com/cb")
            #expect(secondTokens.status == .ok, "\(secondTokens.json)")
            #expect(try await Self.upstreamState(provider)["logins"] == .int(1))
            // prompt=login sends the browser to the upstream with prompt=login.
            let forced = try await browser.open(AppRequest().url(extra: [("prompt", "login")]))
            #expect(forced.body.contains("Example Upstream IdP"))

            // RP-initiated logout with the ID token hint: the web session ends, the upstream's end-session endpoint is
            // called with its ID token, and the browser lands on the app's logout URI with its state.
            let logout = try await browser.open(
                "https://latch.test/oauth2/logout?" + FormEncoding.query(
                    [("id_token_hint", response.idToken), ("post_logout_redirect_uri", Self.appSignedOut), ("state", "bye-1")]))
            #expect(logout.appURL == Self.appSignedOut + "?state=bye-1", "\(logout)")
            let upstream = try await Self.upstreamState(provider)
            #expect(upstream["logouts"] == .int(1))
            #expect(upstream["last_logout_id_token_hint"]?.stringValue?.isEmpty == false)
            #expect(browser.cookies("https://latch.test")["__Host-latch_session"] == nil)
            // As in Sudo, federated sign-out leaves the app's tokens alone.
            #expect(try await client.refresh(refreshToken).status == .ok)
            // The next sign-in goes to the upstream again.
            let fresh = try await browser.open(AppRequest().url())
            #expect(fresh.body.contains("Example Upstream IdP"), "\(fresh)")
        }
    }

    /// Counts of what a refused request must not have written.
    static func written(_ deployment: Deployment) async throws -> [Int64] {
        [try await deployment.count("users"), try await deployment.count("web_sessions"), try await deployment.count("sessions")]
    }

    @Test(
        "Authorization requests: an error page when the client or redirect URI is not verified (never an open redirect), else a redirect with error, state and iss; nothing written",
        .requires(.upstreamProvider))
    func authorizationErrors() async throws {
        try await Self.withUpstream { client, provider, deployment in
            let before = try await Self.written(deployment)
            let app = AppRequest()
            let base = app.url()
            // Error pages.
            let pages: [(String, String)] = [
                (base.replacingOccurrences(of: "client_id=default", with: "client_id="), "invalid_request"),
                (base.replacingOccurrences(of: "client_id=default", with: "client_id=nobody"), "invalid_client"),
                (base + "&client_id=default", "invalid_request"),
            ]
            var cases = pages
            for uri in [
                "com.example.App:/callback", "com.example.app:/callback/", "com.example.app:/callback?x=1", "https://user@app.example.com/cb",
                "https://app.example.com/cb#f", "https://app.example.com:8443/cb", "https://APP.example.com/cb", "http://app.example.com/cb",
                "https://evil.example/cb",
            ] {
                cases.append((app.url(redirect: uri), "unregistered_redirect_uri"))
            }
            let browser = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            for (url, code) in cases {
                let stop = try await browser.open(url)
                #expect(stop.status >= 400 && stop.appURL == nil, "\(url) → \(stop)")
                #expect(stop.body.contains(#"<code id="error-code">\#(code)</code>"#), "\(url): \(stop.body.prefix(400))")
            }
            // Redirects with an error.
            func without(_ name: String, _ url: String = base) -> String {
                url.split(separator: "&").filter { !$0.hasPrefix(name + "=") }.joined(separator: "&")
            }
            let redirects: [(String, String, Bool)] = [
                (base.replacingOccurrences(of: "response_type=code", with: "response_type=token"), "unsupported_response_type", true),
                (without("code_challenge"), "invalid_request", true),
                (base.replacingOccurrences(of: "code_challenge_method=S256", with: "code_challenge_method=plain"), "invalid_request", true),
                (without("code_challenge_method"), "invalid_request", true),
                (without("state"), "invalid_request", false),
                (base.replacingOccurrences(of: "scope=openid+profile", with: "scope=profile"), "invalid_scope", true),
                (base.replacingOccurrences(of: "scope=openid+profile", with: "scope=openid+admin"), "invalid_scope", true),
                (base + "&request=eyJhbGciOiJub25lIn0.e30.", "request_not_supported", true),
                (base + "&request_uri=https%3A%2F%2Fevil.example%2Fr", "request_uri_not_supported", true),
                (base + "&prompt=none", "login_required", true),
                (base + "&prompt=none+login", "invalid_request", true),
                (base + "&prompt=bogus", "invalid_request", true),
                (base + "&max_age=-1", "invalid_request", true),
                (base + "&idp_hint=elsewhere", "invalid_request", true),
                (base + "&scope=openid", "invalid_request", true),
                (base + "&response_mode=fragment", "invalid_request", true),
            ]
            for (url, code, hasState) in redirects {
                let stop = try await browser.open(url)
                let redirect = try #require(stop.appURL, "\(url) → \(stop)")
                let parameters = queryParameters(redirect)
                #expect(redirect.hasPrefix(Self.appRedirect + "?"))
                #expect(parameters["error"] == code, "\(url) → \(redirect)")
                #expect(parameters["iss"] == "https://latch.test")
                #expect((parameters["state"] == app.state) == hasState, "\(url) → \(redirect)")
                #expect(parameters["code"] == nil)
            }
            #expect(try await Self.written(deployment) == before)
            #expect(try await Self.upstreamState(provider)["logins"] == .int(0))
        }
    }

    @Test(
        "Codes: PKCE, redirect URI and client are checked; a code is good once for 60 s, and a second use revokes what the first issued",
        .requires(.upstreamProvider))
    func codeRedemption() async throws {
        try await Self.withUpstream { client, provider, deployment in
            let other = try await client.admin(.post, "/admin/v1/clients", AdminClientRequest(clientId: "other"))
            #expect(other.status == .created)
            let browser = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            // The first sign-in at the upstream; later codes come from the web session.
            let first = AppRequest()
            let back = try await browser.signIn(at: try await browser.open(first.url()))
            let firstURL = try #require(back.appURL)
            @Sendable func code() async throws -> (AppRequest, String) {
                let request = AppRequest()
                let url = try #require(try await browser.open(request.url()).appURL)
                return (request, url)
            }
            func redeem(_ url: String, verifier: String, redirect: String = Self.appRedirect, clientID: String = "default") async throws -> Reply {
                try await client.postForm(
                    "/oauth2/token",
                    [("grant_type", "authorization_code"), ("code", queryParameters(url)["code"] ?? ""), ("redirect_uri", redirect),
                     ("code_verifier", verifier), ("client_id", clientID)])
            }
            let sessionsBefore = try await deployment.count("sessions")
            // Each refusal leaves the code usable: wrong verifier, redirect URI, client; malformed verifier; garbage.
            let (request, url) = try await code()
            #expect(try await redeem(url, verifier: AppRequest().verifier).code == "invalid_grant")
            #expect(try await redeem(url, verifier: request.verifier, redirect: "https://app.example.com/cb").code == "invalid_grant")
            #expect(try await redeem(url, verifier: request.verifier, clientID: "other").code == "invalid_grant")
            #expect(try await redeem(url, verifier: "short").code == "invalid_request")
            #expect(try await redeem("x:/?code=forged", verifier: request.verifier).code == "invalid_grant")
            let missing = try await client.postForm(
                "/oauth2/token", [("grant_type", "authorization_code"), ("code", "x"), ("redirect_uri", Self.appRedirect), ("client_id", "default")])
            #expect(missing.code == "invalid_request")
            #expect(try await deployment.count("sessions") == sessionsBefore)
            // Good once; the second use is refused and revokes the session the first opened.
            let good = try await redeem(url, verifier: request.verifier)
            #expect(good.status == .ok, "\(good.json)")
            let reused = try await redeem(url, verifier: request.verifier)
            #expect(reused.code == "invalid_grant")
            #expect(try await client.refresh(try good.decode(TokenResponse.self).refreshToken).code == "invalid_grant")
            // The audit log names the user only for the reuse (code and verifier verified); the refusals before
            // (wrong verifier, redirect URI, client, garbage) verified nothing and name nobody.
            let failed = try await client.admin(.get, "/admin/v1/audit?limit=500&type=signin.failed").decode(AuditPage.self).records
            let user = try verifyAgainstJWKS(try good.decode(TokenResponse.self).idToken, jwks: try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self))["sub"]
            #expect(failed.count == 7, "\(failed.map(\.detail))")
            #expect(failed.first.map { JSONValue.string($0.subject ?? "") } == user)
            #expect(failed.dropFirst().allSatisfy { $0.subject == nil })
            // The first flow's code still works (each code is its own).
            #expect(try await Self.redeem(client, firstURL, first).status == .ok)
            // Expired after 60 s.
            let (late, lateURL) = try await code()
            deployment.clock.advance(by: 61)
            #expect(try await redeem(lateURL, verifier: late.verifier).code == "invalid_grant")
        }
    }

    @Test(
        "Upstream ID tokens with a wrong nonce, audience, issuer, expiry, signature, alg none/HS256 or an unpublished key are refused with an error page, nothing written; an upstream error goes back to the app as access_denied; a key rotation is followed",
        .requires(.upstreamProvider))
    func upstreamMisbehaviour() async throws {
        try await Self.withUpstream { client, provider, deployment in
            let before = try await Self.written(deployment)
            for mode in ["wrong_nonce", "wrong_aud", "wrong_iss", "expired", "bad_signature", "alg_none", "hs256", "unknown_kid"] {
                try await Self.misbehave(provider, mode)
                let browser = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
                let stop = try await browser.signIn(at: try await browser.open(AppRequest().url()))
                #expect(stop.status == 502 && stop.body.contains(#"id="error-code">upstream_invalid_id_token<"#), "\(mode): \(stop)")
                #expect(browser.cookies("https://latch.test")["__Host-latch_session"] == nil)
            }
            #expect(try await Self.written(deployment) == before)
            // The upstream's error response goes back to the app.
            try await Self.misbehave(provider, "error_response")
            let refusing = AppRequest()
            let refused = try await TestBrowser(latch: client, upstreamOrigin: provider.issuer).open(refusing.url())
            let redirect = try #require(refused.appURL, "\(refused)")
            #expect(queryParameters(redirect)["error"] == "access_denied")
            #expect(queryParameters(redirect)["state"] == refusing.state)
            // The upstream's token endpoint failing, or too slow (the timeout is 8 s here, the provider waits 20 s): an error page.
            for mode in ["token_500", "slow_token"] {
                try await Self.misbehave(provider, mode)
                let browser = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
                let stop = try await browser.signIn(at: try await browser.open(AppRequest().url()))
                #expect(stop.status == 502 && stop.body.contains(#"id="error-code">upstream_unavailable<"#), "\(mode): \(stop)")
            }
            #expect(try await Self.written(deployment) == before)
            // A rotated upstream key: the JWKS is read again for the unknown kid (the cache waits 5 s between reads).
            try await Self.misbehave(provider, "none")
            var rotate = HTTPClientRequest(url: provider.issuer + "/test/rotate-keys")
            rotate.method = .POST
            _ = try await TestBrowser.http.execute(rotate, timeout: .seconds(10))
            deployment.clock.advance(by: 6)
            let browser = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            let app = AppRequest()
            let back = try await browser.signIn(at: try await browser.open(app.url()))
            #expect(try await Self.redeem(client, try #require(back.appURL, "\(back)"), app).status == .ok)
        }
    }

    @Test(
        "The callback refuses a forged or replayed state, a state from another browser, a mix-up (another iss); an unreachable upstream is an error page",
        .requires(.upstreamProvider))
    func callbackDefences() async throws {
        try await Self.withUpstream { client, provider, deployment in
            // Another browser: the binding cookie is missing when the callback arrives.
            let browser = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            let login = try await browser.open(AppRequest().url())
            let pending = try #require(TestBrowser.capture(#"name="pending" value="([^"]*)""#, in: login.body))
            let answer = try await browser.fetch(.post, provider.issuer + "/login", form: [("username", "alice"), ("password", "password"), ("pending", pending)])
            let callback = try #require(answer.location)
            #expect(callback.hasPrefix("https://latch.test/oauth2/upstream/corp/callback?"))
            let stranger = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            let elsewhere = try await stranger.open(callback)
            #expect(elsewhere.body.contains(#"id="error-code">invalid_authorization_state<"#), "\(elsewhere)")
            // Mix-up: an iss that is not the upstream's.
            let mixed = try await browser.open(callback.replacingOccurrences(of: "iss=", with: "iss=https%3A%2F%2Fevil.example&x="))
            #expect(mixed.body.contains(#"id="error-code">invalid_authorization_state<"#), "\(mixed)")
            // Forged state.
            let forged = try await browser.open("https://latch.test/oauth2/upstream/corp/callback?code=abc&state=forged")
            #expect(forged.body.contains(#"id="error-code">invalid_authorization_state<"#))
            #expect(try await deployment.count("users") == 0)
            // The real one succeeds once; replayed, it is refused.
            let done = try await browser.open(callback)
            #expect(done.appURL != nil, "\(done)")
            let replay = try await browser.open(callback)
            #expect(replay.body.contains(#"id="error-code">"#) && replay.appURL == nil, "\(replay)")
            #expect(try await deployment.count("users") == 1)
            // An upstream that does not answer.
            let down = try await client.admin(
                .post, "/admin/v1/upstream-idps",
                AdminUpstreamIdPRequest(id: "down", displayName: "Down", issuer: "http://127.0.0.1:\(try LoopbackPort.free())", clientId: "x", clientSecret: "secret"))
            #expect(down.status == .created)
            _ = try await client.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(upstreamIdps: ["corp", "down"]))
            let unreachable = try await TestBrowser(latch: client, upstreamOrigin: provider.issuer).open(AppRequest().url(extra: [("idp_hint", "down")]))
            #expect(unreachable.status == 502 && unreachable.body.contains(#"id="error-code">upstream_unavailable<"#), "\(unreachable)")
        }
    }

    @Test(
        "Hosted pages: the chooser lists the app's upstreams (idp_hint and prompt=select_account), in German on request; strict CSP, no framing, no caching; escapes what it shows",
        .requires(.upstreamProvider))
    func chooserAndPages() async throws {
        try await Self.withUpstream { client, provider, deployment in
            let second = try await client.admin(
                .post, "/admin/v1/upstream-idps",
                AdminUpstreamIdPRequest(
                    id: "partner", displayName: "Partner <script>alert(1)</script>", issuer: provider.issuer, clientId: Self.upstreamClientID,
                    clientSecret: Self.upstreamSecret, clientAuthentication: "client_secret_post"))
            #expect(second.status == .created, "\(second.json)")
            _ = try await client.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(upstreamIdps: ["corp", "partner"]))
            let app = AppRequest()
            let reply = try await client.send(.get, String(app.url().dropFirst("https://latch.test".count)))
            #expect(reply.status == .ok)
            let html = String(decoding: reply.body, as: UTF8.self)
            #expect(html.contains("Choose how to sign in") && html.contains("Corp SSO"))
            #expect(html.contains("Partner &lt;script&gt;") && !html.contains("<script>"))
            #expect(reply.headers[.contentSecurityPolicy]?.contains("frame-ancestors 'none'") == true)
            #expect(reply.headers[.contentSecurityPolicy]?.contains("script-src") == false)
            #expect(reply.headers[.cacheControl] == "no-store")
            #expect(reply.headers[HTTPField.Name("X-Frame-Options")!] == "DENY")
            let german = try await client.send(
                .get, String(app.url().dropFirst("https://latch.test".count)), headers: [.acceptLanguage: "de-CH, de;q=0.9, en;q=0.5"])
            #expect(String(decoding: german.body, as: UTF8.self).contains("Anmeldung auswählen"))
            #expect(german.headers[.contentLanguage] == "de")
            // A choice leads to that upstream; the sign-in completes through it.
            let browser = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            let chooser = try await browser.open(app.url())
            let link = try #require(TestBrowser.capture(#"id="idp-partner" href="([^"]*)""#, in: chooser.body)).replacingOccurrences(of: "&amp;", with: "&")
            let login = try await browser.open(link)
            let back = try await browser.signIn(at: login)
            #expect(try await Self.redeem(client, try #require(back.appURL, "\(back)"), app).status == .ok)
            #expect(try await Self.upstreamState(provider)["last_token_auth_method"]?.stringValue == "client_secret_post")
            // idp_hint skips the chooser; prompt=select_account shows it even with a web session.
            let hinted = try await TestBrowser(latch: client, upstreamOrigin: provider.issuer).open(AppRequest().url(extra: [("idp_hint", "corp")]))
            #expect(hinted.body.contains("Example Upstream IdP"))
            let select = try await browser.open(AppRequest().url(extra: [("prompt", "select_account")]))
            #expect(select.body.contains("Choose how to sign in"))
            // A tampered continue link.
            let tampered = try await browser.open("https://latch.test/oauth2/authorize/continue?request=AAAA&idp=corp")
            #expect(tampered.body.contains(#"id="error-code">invalid_authorization_state<"#))
            let css = try await client.get("/oauth2/assets/latch.css")
            #expect(css.status == .ok && css.headers[.contentType]?.hasPrefix("text/css") == true)
        }
    }
}
