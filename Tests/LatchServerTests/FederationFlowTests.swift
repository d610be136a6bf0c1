import AsyncHTTPClient
import Foundation
import HTTPTypes
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
@testable import LatchSQLite
import LatchTesting
import NIOCore
import NIOHTTP1
import Synchronization
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
        _ body: @Sendable (Client, UpstreamProviderProcess, Deployment) async throws -> Void
    ) async throws {
        guard await UpstreamProviderProcess.isAvailable else {
            if ProcessInfo.processInfo.environment["LATCH_CI"] == "1" { Issue.record("CI must run this: python3 -m pip install authlib flask") }
            return
        }
        let directory = TemporaryDirectory(prefix: "latch-upstream")
        defer { directory.remove() }
        let provider = try await UpstreamProviderProcess(
            clientID: upstreamClientID, clientSecret: upstreamSecret,
            redirectURIs: ["https://latch.test/oauth2/upstream/corp/callback", "https://latch.test/oauth2/upstream/corp/signed-out"],
            users: ["alice:password:alice@example.com:Alice Liddell", "bob:hunter22:bob@other.example:Bob"], output: directory.path + "/upstream.log")
        do {
            let deployment = try await Deployment.make(clockStart: Date()) { configuration in
                configuration.federation.upstreamTimeout = 3
                configure(&configuration)
            }
            try await deployment.run { client in
                let added = try await client.admin(
                    .post, "/admin/v1/upstream-idps",
                    AdminUpstreamIdPRequest(
                        id: "corp", displayName: "Corp SSO", issuer: provider.issuer, clientId: upstreamClientID, clientSecret: upstreamSecret,
                        scopes: ["openid", "profile", "email"], usernameClaim: "preferred_username", keptClaims: ["email", "name"]))
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

    @Test("The whole app flow: authorize → upstream login → callback → code → tokens → refresh → single sign-on → RP-initiated logout through the upstream; discovery and admin answers")
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
}
