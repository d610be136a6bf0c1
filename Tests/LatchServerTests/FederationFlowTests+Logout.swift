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

/// RP-initiated logout, with and without an ID token hint.
extension FederationFlowTests {
    @Test(
        "RP-initiated logout: without an ID token hint the user confirms (CSRF-checked form); unregistered logout URIs and foreign hints are refused",
        .requires(.upstreamProvider))
    func logoutConfirmation() async throws {
        try await Self.withUpstream { client, provider, deployment in
            let browser = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            let app = AppRequest()
            let signedIn = try await browser.signIn(at: try await browser.open(app.url()))
            try #require(signedIn.appURL != nil && browser.cookies("https://latch.test")["__Host-latch_session"] != nil, "\(signedIn)")
            let logout = "https://latch.test/oauth2/logout?" + FormEncoding.query(
                [("client_id", "default"), ("post_logout_redirect_uri", Self.appSignedOut), ("state", "s1")])
            let confirm = try await browser.open(logout)
            #expect(confirm.body.contains(#"id="sign-out""#), "\(confirm)")
            let csrf = try #require(TestBrowser.capture(#"name="csrf" value="([^"]*)""#, in: confirm.body))
            // Without the CSRF token: refused, still signed in.
            let forged = try await browser.open(
                "https://latch.test/oauth2/logout", method: .post,
                form: [("client_id", "default"), ("post_logout_redirect_uri", Self.appSignedOut), ("confirm", "yes"), ("csrf", "x")])
            #expect(forged.body.contains(#"id="error-code">invalid_request<"#))
            #expect(browser.cookies("https://latch.test")["__Host-latch_session"] != nil)
            // With it: signed out through the upstream, back at the app.
            let done = try await browser.open(
                "https://latch.test/oauth2/logout", method: .post,
                form: [("client_id", "default"), ("post_logout_redirect_uri", Self.appSignedOut), ("state", "s1"), ("confirm", "yes"), ("csrf", csrf)])
            // The form's answer leaves Latch by a new navigation (a redirect would stay under the form page's
            // `form-action 'self'`): a meta refresh and a link, followed here.
            #expect(done.body.contains(#"<meta http-equiv="refresh" content="0;url="#), "\(done)")
            let next = try #require(TestBrowser.capture(#"id="continue" href="([^"]*)""#, in: done.body)).replacingOccurrences(of: "&amp;", with: "&")
            let back = try await browser.open(next)
            #expect(back.appURL == Self.appSignedOut + "?state=s1", "\(back)")
            #expect(try await Self.upstreamState(provider)["logouts"] == .int(1))
            // Unregistered logout URI, foreign hint, two different apps.
            let unregistered = try await browser.open(
                "https://latch.test/oauth2/logout?" + FormEncoding.query([("client_id", "default"), ("post_logout_redirect_uri", "https://evil.example/")]))
            #expect(unregistered.body.contains(#"id="error-code">unregistered_redirect_uri<"#))
            let foreign = try JWSSigner(key: try PrivateKey.generate(.ES256), keyID: "k").sign(claims: ["iss": "https://latch.test", "aud": "default"])
            let hinted = try await browser.open("https://latch.test/oauth2/logout?" + FormEncoding.query([("id_token_hint", foreign)]))
            #expect(hinted.body.contains(#"id="error-code">invalid_request<"#))
            // Nothing to sign out of: the signed-out page.
            let plain = try await browser.open("https://latch.test/oauth2/logout")
            #expect(plain.body.contains("You are signed out"))
        }
    }

    @Test(
        "RP-initiated logout: an ID token hint of another user (a cross-site link) or of an earlier sign-in asks the user, signing nobody out; the browser's own hint signs out at once",
        .requires(.upstreamProvider))
    func logoutHintOfAnotherSession() async throws {
        try await Self.withUpstream { client, provider, deployment in
            func logout(_ hint: String) -> String {
                "https://latch.test/oauth2/logout?" + FormEncoding.query(
                    [("id_token_hint", hint), ("post_logout_redirect_uri", Self.appSignedOut), ("state", "s1")])
            }
            func signIn(_ browser: TestBrowser, username: String = "alice", password: String = "password") async throws -> TokenResponse {
                let app = AppRequest()
                let back = try await browser.signIn(at: try await browser.open(app.url()), username: username, password: password)
                return try await Self.redeem(client, try #require(back.appURL, "\(back)"), app).decode(TokenResponse.self)
            }
            // Bob's own ID token is what the attacker puts in a link.
            let bob = try await signIn(TestBrowser(latch: client, upstreamOrigin: provider.issuer), username: "bob", password: "hunter22")
            let alice = TestBrowser(latch: client, upstreamOrigin: provider.issuer)
            let aliceTokens = try await signIn(alice)
            let forged = try await alice.open(logout(bob.idToken))
            #expect(forged.body.contains(#"id="sign-out""#) && forged.appURL == nil, "\(forged)")
            #expect(alice.cookies("https://latch.test")["__Host-latch_session"] != nil)
            #expect(try await Self.upstreamState(provider)["logouts"] == .int(0))
            // Still signed in: the next app sign-in is answered from the web session.
            #expect(try await alice.open(AppRequest().url()).appURL != nil)
            // Her own hint: signed out at once, through the upstream, back at the app.
            let own = try await alice.open(logout(aliceTokens.idToken))
            #expect(own.appURL == Self.appSignedOut + "?state=s1", "\(own)")
            #expect(alice.cookies("https://latch.test")["__Host-latch_session"] == nil)
            // Signed in again later: the first sign-in's token (its sid is another web session's) asks.
            deployment.clock.advance(by: 5)
            let second = try await signIn(alice)
            let stale = try await alice.open(logout(aliceTokens.idToken))
            #expect(stale.body.contains(#"id="sign-out""#) && stale.appURL == nil, "\(stale)")
            #expect(alice.cookies("https://latch.test")["__Host-latch_session"] != nil)
            #expect(try await alice.open(logout(second.idToken)).appURL == Self.appSignedOut + "?state=s1")
        }
    }
}
