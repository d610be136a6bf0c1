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

/// What Latch asks of the upstream: a fresh auth_time for step-up, private_key_jwt, allowed email domains.
extension FederationFlowTests {
    @Test(
        "Step-up: when prompt=login or max_age was forwarded, an upstream auth_time that is missing, too old or from before the request is login_required for the app, nothing written; a fresh one is Latch's; without either, a missing auth_time is left out, never made up",
        .requires(.upstreamProvider))
    func stepUpNeedsUpstreamAuthTime() async throws {
        try await Self.withUpstream { client, provider, deployment in
            let before = try await Self.written(deployment)
            let refused: [(String, [(String, String)])] = [
                ("stale_auth_time", [("prompt", "login")]), ("no_auth_time", [("prompt", "login")]),
                ("stale_auth_time", [("max_age", "60")]), ("no_auth_time", [("max_age", "600")]),
            ]
            for (mode, extra) in refused {
                try await Self.misbehave(provider, mode)
                let browser = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
                let app = AppRequest()
                let back = try await browser.signIn(at: try await browser.open(app.url(extra: extra)))
                let redirect = try #require(back.appURL, "\(mode) \(extra): \(back)")
                let parameters = queryParameters(redirect)
                #expect(redirect.hasPrefix(Self.appRedirect + "?"))
                #expect(parameters["error"] == "login_required" && parameters["code"] == nil, "\(mode) \(extra): \(redirect)")
                #expect(parameters["state"] == app.state && parameters["iss"] == "https://latch.test")
                #expect(browser.cookies("https://latch.test")["__Host-latch_session"] == nil)
            }
            #expect(try await Self.written(deployment) == before)
            let jwks = try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self)
            // A fresh authentication answers both; Latch's auth_time is the upstream's (at most Latch's now).
            try await Self.misbehave(provider, "none")
            let fresh = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            let app = AppRequest()
            let back = try await fresh.signIn(at: try await fresh.open(app.url(extra: [("prompt", "login"), ("max_age", "600")])))
            let tokens = try await Self.redeem(client, try #require(back.appURL, "\(back)"), app)
            let authTime = try #require(try verifyAgainstJWKS(try tokens.decode(TokenResponse.self).idToken, jwks: jwks)["auth_time"]?.intValue)
            #expect(authTime <= deployment.now && authTime > deployment.now - 60)
            // Nothing forwarded and no auth_time from the upstream: the ID token has none (not "now").
            try await Self.misbehave(provider, "no_auth_time")
            let plain = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            let plainApp = AppRequest()
            let plainBack = try await plain.signIn(at: try await plain.open(plainApp.url()))
            let plainTokens = try await Self.redeem(client, try #require(plainBack.appURL, "\(plainBack)"), plainApp)
            let claims = try verifyAgainstJWKS(try plainTokens.decode(TokenResponse.self).idToken, jwks: jwks)
            #expect(claims["auth_time"] == nil && claims["sub"] != nil)
            // That web session's age is unknown, so it answers no max_age: the browser goes upstream again.
            try await Self.misbehave(provider, "none")
            _ = try await plain.open(AppRequest().url(extra: [("max_age", "3600")]))
            #expect(plain.visited.withLock { $0.contains { $0.hasPrefix(provider.issuer + "/authorize?") && $0.contains("max_age=3600") } })
        }
    }

    @Test(
        "private_key_jwt with Latch's own signing key (the upstream reads Latch's JWKS), UserInfo claims kept, allowed email domains, max_age",
        .requires(.upstreamProvider))
    func privateKeyJWTUserinfoAndDomains() async throws {
        // This test takes `.requires(.upstreamProvider)`: skipped without Authlib and Flask, failed here under LATCH_CI=1.
        try await Peer.upstreamProvider.require()
        let directory = TemporaryDirectory(prefix: "latch-upstream-pkjwt")
        defer { directory.remove() }
        let deployment = try await Deployment.make(clock: .running()) { $0.federation.upstreamTimeout = 20 }
        // The upstream fetches Latch's JWKS: here from a static file server (the deployment runs in-process).
        try Data(deployment.services.keys.jwksJSON).write(to: URL(fileURLWithPath: directory.path + "/jwks.json"))
        let files = try ChildProcess(
            executable: "/usr/bin/env", arguments: ["python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", directory.path],
            environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"], outputPath: directory.path + "/files.log")
        defer { files.signal(SIGKILL) }
        var filesPort: Int?
        for _ in 0..<600 where filesPort == nil {
            let log = (try? String(contentsOfFile: directory.path + "/files.log", encoding: .utf8)) ?? ""
            filesPort = TestBrowser.capture(#"port (\d+)"#, in: log).flatMap(Int.init)
            if filesPort == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        let port = try #require(filesPort, "the file server did not start")
        let provider = try await UpstreamProviderProcess(
            clientID: Self.upstreamClientID, clientSecret: Self.upstreamSecret, redirectURIs: ["https://latch.test/oauth2/upstream/corp/callback"],
            users: ["alice:password:alice@example.com:Alice Liddell", "bob:hunter22:bob@other.example:Bob"],
            clientJWKSURI: "http://127.0.0.1:\(port)/jwks.json", output: directory.path + "/upstream.log")
        do {
            try await deployment.run { client in
                let added = try await client.admin(
                    .post, "/admin/v1/upstream-idps",
                    AdminUpstreamIdPRequest(
                        id: "corp", displayName: "Corp SSO", issuer: provider.issuer, clientId: Self.upstreamClientID, clientAuthentication: "private_key_jwt",
                        keptClaims: ["groups", "email"], allowedEmailDomains: ["Example.com"], useUserinfo: true))
                #expect(added.status == .created, "\(added.json)")
                #expect(try added.decode(AdminUpstreamIdP.self).hasClientSecret == false)
                _ = try await client.admin(.patch, "/admin/v1/clients/default", AdminClientPatch(redirectUris: [Self.appRedirect], upstreamIdps: ["corp"]))
                let browser = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
                let app = AppRequest()
                let back = try await browser.signIn(at: try await browser.open(app.url()))
                let tokens = try await Self.redeem(client, try #require(back.appURL, "\(back)"), app)
                #expect(tokens.status == .ok, "\(tokens.json)")
                let state = try await Self.upstreamState(provider)
                #expect(state["last_token_auth_method"]?.stringValue == "private_key_jwt")
                let claims = try verifyAgainstJWKS(try tokens.decode(TokenResponse.self).idToken, jwks: try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self))
                // `groups` comes from UserInfo only.
                #expect(claims["groups"] == .array([.string("staff")]))
                #expect(claims["username"]?.stringValue == "user-alice")
                // Another email domain: refused, nothing written.
                let users = try await deployment.count("users")
                let other = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
                let refused = try await other.signIn(at: try await other.open(AppRequest().url()), username: "bob", password: "hunter22")
                #expect(refused.status == 403 && refused.body.contains(#"id="error-code">upstream_identity_refused<"#), "\(refused)")
                #expect(try await deployment.count("users") == users)
                // max_age: a web session older than it goes back to the upstream (which answers from its own session).
                deployment.clock.advance(by: 120)
                let recent = AppRequest()
                // (Only the way there is checked: the jump of the test clock makes Latch's client assertion look 2 minutes
                // early to the upstream.)
                _ = try await browser.open(recent.url(extra: [("max_age", "60")]))
                #expect(browser.visited.withLock { $0.contains { $0.hasPrefix(provider.issuer + "/authorize?") && $0.contains("max_age=60") } })
            }
        } catch {
            await provider.stop()
            throw error
        }
        await provider.stop()
    }

    @Test(
        "Allowed email domains: a verified address with two unquoted @ (mallory@evil.example@corp.example) is in no domain and is refused; one @ in the domain is admitted",
        .requires(.upstreamProvider))
    func emailDomainWithTwoAts() async throws {
        try await Self.withUpstream(
            users: ["alice:password:alice@Corp.Example:Alice Liddell", "mallory:password:mallory@evil.example@corp.example:Mallory"],
            allowedEmailDomains: ["corp.example"]
        ) { client, provider, deployment in
            let users = try await deployment.count("users")
            let mallory = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            let refused = try await mallory.signIn(at: try await mallory.open(AppRequest().url()), username: "mallory", password: "password")
            #expect(refused.status == 403 && refused.body.contains(#"id="error-code">upstream_identity_refused<"#), "\(refused)")
            #expect(refused.appURL == nil)
            #expect(try await deployment.count("users") == users)
            let alice = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            let app = AppRequest()
            let back = try await alice.signIn(at: try await alice.open(app.url()))
            #expect(try await Self.redeem(client, try #require(back.appURL, "\(back)"), app).status == .ok)
        }
    }

    @Test("An allowed email domain must be an ASCII domain name: two @, a U-label, a trailing dot are invalid_input")
    func allowedEmailDomainsValidated() async throws {
        try await Deployment.make().run { client in
            for domains in [["evil.example@corp.example"], ["bücher.example"], ["corp.example."], ["corp..example"]] {
                let reply = try await client.admin(
                    .post, "/admin/v1/upstream-idps",
                    AdminUpstreamIdPRequest(
                        id: "corp", displayName: "Corp SSO", issuer: "https://idp.example", clientId: "latch", clientSecret: "s0123456789abcdef",
                        allowedEmailDomains: domains))
                #expect(reply.status == .badRequest && reply.code == "invalid_input", "\(domains): \(reply.json)")
            }
        }
    }
}
