import Foundation
import LatchClient
import LatchModel
import LatchTesting
import NIOHTTP1
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Browser sign-in with the SDK and the `latch device federated-sign-in` command: a live Latch over HTTP, the real
/// upstream OpenID provider (Authlib) as a process, and a browser that follows redirects and fills in the upstream's form.
@Suite("UserClient federated (browser) sign-in against a live server and a real upstream provider", .serialized, .requires(.upstreamProvider))
struct FederatedSignInClientTests {
    /// The error `body` throws; nil when it succeeds.
    static func error(_ body: () async throws -> Void) async -> UserClientError? {
        do {
            try await body()
            return nil
        } catch let error as UserClientError {
            return error
        } catch {
            Issue.record("not a UserClientError: \(error)")
            return nil
        }
    }

    static func client(_ latch: LiveLatch, dpop: Bool = true, keyStore: any KeyStore = InMemoryKeyStore(), redirect: String? = nil) throws -> UserClient {
        var configuration = latch.configuration()
        configuration.dpop = dpop
        configuration.federatedSignInRedirectURI = redirect
        return try UserClient(configuration: configuration, keyStore: keyStore)
    }

    /// `url` with query parameter `name` set to `value` (nil: removed).
    static func replacing(_ name: String, with value: String?, in url: URL) throws -> URL {
        var components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        var items = (components.queryItems ?? []).filter { $0.name != name }
        if let value { items.append(URLQueryItem(name: name, value: value)) }
        components.queryItems = items
        return try #require(components.url)
    }

    static func query(_ url: URL) -> [String: String] {
        var result: [String: String] = [:]
        for item in URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? [] where result[item.name] == nil {
            result[item.name] = item.value ?? ""
        }
        return result
    }

    @Test(
        "SDK: authorization URL → upstream login → redirect → tokens (nonce checked, DPoP when on) → refresh; a replayed redirect changes nothing; browser sign-out keeps the tokens",
        arguments: [true, false])
    func signInRefreshReplaySignOut(dpop: Bool) async throws {
        try await FederatedLatch.run { federated in
            let latch = federated.latch
            let client = try Self.client(latch, dpop: dpop)
            let url = try await client.federatedSignInURL(redirectURI: FederatedLatch.appRedirect, idpHint: "corp")
            #expect(url.absoluteString.hasPrefix(latch.url.absoluteString + "/oauth2/authorize?"))
            let request = Self.query(url)
            #expect(request["response_type"] == "code" && request["client_id"] == "default" && request["redirect_uri"] == FederatedLatch.appRedirect)
            #expect(request["code_challenge_method"] == "S256" && request["code_challenge"]?.count == 43)
            #expect(request["scope"] == "openid profile offline_access" && request["idp_hint"] == "corp")
            let state = try #require(request["state"])
            let nonce = try #require(request["nonce"])
            #expect(state.count >= 22 && nonce.count >= 22 && state != nonce)
            #expect(await client.hasPendingFederatedSignIn())

            let browser = federated.browser()
            let redirect = try await browser.signInThrough(url)
            #expect(Self.query(redirect)["state"] == state && Self.query(redirect)["iss"] == latch.url.absoluteString)
            let tokens = try await client.processFederatedSignInTokens(url: redirect)
            #expect(await client.signInStatus == .signedIn)
            #expect(await !client.hasPendingFederatedSignIn())
            #expect(tokens.isDPoPBound == dpop)
            #expect(await client.tokenBinding()?.tokenType == (dpop ? "DPoP" : "Bearer"))
            let claims = try await client.userClaims()
            #expect(claims["nonce"]?.stringValue == nonce)
            #expect(claims["amr"] == .array([.string("fed")]))
            #expect(claims["aud"]?.stringValue == "default")
            #expect(claims["username"]?.stringValue == "alice")
            #expect(claims["email"]?.stringValue == "alice@example.com")
            #expect(await client.userName() == "alice")
            #expect(await client.subject() == claims["sub"]?.stringValue)
            #expect(try await client.userInfo()["sub"] == claims["sub"])

            // The session refreshes like any other (the refresh token rotates).
            let refreshed = try await client.refreshTokens()
            #expect(refreshed.refreshToken != tokens.refreshToken)
            #expect(refreshed.isDPoPBound == dpop)

            // The same redirect again (a replay, or a second delivery of the link) is refused here, before it reaches the
            // server — where a second redemption of the code would revoke the session.
            #expect(await Self.error { try await client.processFederatedSignInTokens(url: redirect) } == .federatedSignInStateMismatch)
            #expect(await client.refreshToken() == refreshed.refreshToken)
            #expect(await client.signInStatus == .signedIn)
            #expect(try await client.refreshTokens().refreshToken != refreshed.refreshToken)

            // Browser sign-out: the web session ends at Latch and at the upstream; the app's tokens stay valid.
            let signOut = try await client.federatedSignOutURL(postLogoutRedirectURI: FederatedLatch.appSignedOut, state: "bye-1")
            let signOutQuery = Self.query(signOut)
            #expect(signOut.absoluteString.hasPrefix(latch.url.absoluteString + "/oauth2/logout?"))
            #expect(signOutQuery["id_token_hint"] == (try await client.idToken()))
            let landed = try await browser.open(signOut.absoluteString)
            #expect(landed.appURL == FederatedLatch.appSignedOut + "?state=bye-1", "\(landed)")
            #expect(try await federated.upstreamState()["logouts"] == .int(1))
            #expect(browser.cookies(latch.url.absoluteString)["latch_session"] == nil)
            try await client.refreshTokens()
            // The next browser sign-in asks the upstream again.
            let again = try await browser.open(try await client.federatedSignInURL(redirectURI: FederatedLatch.appRedirect).absoluteString)
            #expect(again.body.contains("pending"), "\(again)")
        }
    }

    @Test("SDK: the ID token's nonce must be the request's; single sign-on reuses the browser's web session")
    func nonceAndSingleSignOn() async throws {
        try await FederatedLatch.run { federated in
            let browser = federated.browser()
            // A web session first, by one device.
            let first = try Self.client(federated.latch)
            try await first.processFederatedSignInTokens(url: try await browser.signInThrough(try await first.federatedSignInURL(redirectURI: FederatedLatch.appRedirect)))

            // Another device whose stored request's nonce differs from the one the server put in the ID token.
            let keyStore = InMemoryKeyStore()
            let second = try Self.client(federated.latch, keyStore: keyStore)
            let url = try await second.federatedSignInURL(redirectURI: FederatedLatch.appRedirect)
            let stored = try #require(try keyStore.value(for: "pending-federated-sign-in"))
            var pending = try #require(try JSONValue.parse(stored).objectValue)
            pending["nonce"] = .string("another-nonce-0123456789abcdef")
            try keyStore.set(Data(JSONValue.object(pending).serialized()), for: "pending-federated-sign-in")
            // Single sign-on: no login form this time.
            let stop = try await browser.open(url.absoluteString)
            let redirect = try #require(stop.appURL.flatMap(URL.init(string:)), "\(stop)")
            let transport = RecordingTransport()
            let recorded = try UserClient(configuration: federated.latch.configuration(), keyStore: keyStore, transport: transport)
            #expect(await Self.error { try await recorded.processFederatedSignInTokens(url: redirect) } == .notAuthorized)
            // The session the server opened for the code is revoked.
            #expect(transport.count("/oauth2/token") == 1 && transport.count("/oauth2/revoke") == 1)
            #expect(await recorded.refreshToken() == nil)
            #expect(await recorded.signInStatus == .notSignedIn(.signInFailed))
            #expect(try await federated.upstreamState()["logins"] == .int(1))

            // With its own nonce, the same web session signs that device in.
            let fresh = try await browser.open(try await second.federatedSignInURL(redirectURI: FederatedLatch.appRedirect).absoluteString)
            try await second.processFederatedSignInTokens(url: try #require(fresh.appURL.flatMap(URL.init(string:)), "\(fresh)"))
            #expect(await second.isSignedIn())
            #expect(try await second.userClaim("sub") == (try await first.userClaim("sub")))
        }
    }

    @Test("SDK: a forged state, a wrong or missing iss, another redirect URI and error answers (access_denied, login_required) are refused; tokens held stay")
    func refusals() async throws {
        try await FederatedLatch.run { federated in
            let latch = federated.latch
            let browser = federated.browser()
            let client = try Self.client(latch)
            try await client.processFederatedSignInTokens(
                url: try await browser.signInThrough(try await client.federatedSignInURL(redirectURI: FederatedLatch.appRedirect)))
            let held = try #require(await client.refreshToken())

            // prompt=login: the upstream asks again, so the redirect is only known after the form.
            let url = try await client.federatedSignInURL(redirectURI: FederatedLatch.appRedirect, prompt: "login")
            let redirect = try await browser.signInThrough(url)
            // A forged state: refused, and the pending request stays for the real answer.
            let forged = try Self.replacing("state", with: "forged-state", in: redirect)
            #expect(await Self.error { try await client.processFederatedSignInTokens(url: forged) } == .federatedSignInStateMismatch)
            #expect(await Self.error { try await client.processFederatedSignInTokens(url: try Self.replacing("state", with: nil, in: redirect)) }
                == .federatedSignInStateMismatch)
            #expect(await client.hasPendingFederatedSignIn())
            // Another redirect URI than the request's.
            let elsewhere = try #require(URL(string: "com.example.other:/callback?" + (redirect.query ?? "")))
            #expect(await Self.error { try await client.processFederatedSignInTokens(url: elsewhere) } == .invalidInput(""))
            #expect(await client.hasPendingFederatedSignIn())
            // The right state from the wrong issuer (RFC 9207): refused, and the request is spent.
            let mixedUp = try Self.replacing("iss", with: "https://evil.example", in: redirect)
            #expect(await Self.error { try await client.processFederatedSignInTokens(url: mixedUp) } == .federatedSignInIssuerMismatch)
            #expect(await !client.hasPendingFederatedSignIn())
            #expect(await Self.error { try await client.processFederatedSignInTokens(url: redirect) } == .federatedSignInStateMismatch)

            // No iss at all.
            let second = try await browser.signInThrough(try await client.federatedSignInURL(redirectURI: FederatedLatch.appRedirect))
            #expect(await Self.error { try await client.processFederatedSignInTokens(url: try Self.replacing("iss", with: nil, in: second)) }
                == .federatedSignInIssuerMismatch)

            // The upstream refuses: Latch answers access_denied.
            try await federated.misbehave("error_response")
            let denied = try await browser.signInThrough(
                try await client.federatedSignInURL(redirectURI: FederatedLatch.appRedirect, prompt: "login"))
            #expect(Self.query(denied)["error"] == "access_denied", "\(denied)")
            let deniedError = await Self.error { try await client.processFederatedSignInTokens(url: denied) }
            #expect(deniedError == .federatedSignInFailed(code: "access_denied", description: nil))
            #expect(deniedError?.oauthError == "access_denied")
            #expect(deniedError?.message?.isEmpty == false)
            try await federated.misbehave("none")

            // prompt=none in a browser without a web session: login_required.
            let bare = FederatedBrowser(latch: latch.url.absoluteString, upstream: federated.upstream.issuer)
            let silent = try await bare.open(try await client.federatedSignInURL(redirectURI: FederatedLatch.appRedirect, prompt: "none").absoluteString)
            let silentURL = try #require(silent.appURL.flatMap(URL.init(string:)), "\(silent)")
            #expect(await Self.error { try await client.processFederatedSignInTokens(url: silentURL) }
                == .federatedSignInFailed(code: "login_required", description: nil))

            // Nothing was processed without a pending request.
            #expect(await Self.error { try await client.processFederatedSignInTokens(url: silentURL) } == .federatedSignInStateMismatch)
            // The tokens held before all this are untouched and live.
            #expect(await client.refreshToken() == held)
            try await client.refreshTokens()
        }
    }

    @Test("SDK: a browser sign-in survives a restart of the app (the pending request is in the key store); federatedSignInURL() takes the redirect URI from the configuration")
    func survivesRestart() async throws {
        try await FederatedLatch.run { federated in
            let keyStore = InMemoryKeyStore()
            do {
                _ = try await Self.client(federated.latch).federatedSignInURL()
                Issue.record("a sign-in URL without any redirect URI")
            } catch {
                if (error as? UserClientError)?.code != .invalidConfiguration { Issue.record("\(error)") }
            }
            let url = try await Self.client(federated.latch, keyStore: keyStore, redirect: FederatedLatch.appRedirect).federatedSignInURL()
            #expect(Self.query(url)["redirect_uri"] == FederatedLatch.appRedirect)
            let redirect = try await federated.browser().signInThrough(url)
            let restarted = try Self.client(federated.latch, keyStore: keyStore)
            #expect(await restarted.hasPendingFederatedSignIn())
            try await restarted.processFederatedSignInTokens(url: redirect)
            #expect(await restarted.isSignedIn())
        }
    }

    // MARK: The command line

    /// The built `latch` executable (`swift build` puts it beside the test bundle).
    static func latchExecutable() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var candidates: [URL] = []
        if let bundle = Bundle.main.executableURL?.deletingLastPathComponent() { candidates.append(bundle.appendingPathComponent("latch")) }
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("latch"))
        candidates.append(root.appendingPathComponent(".build/debug/latch"))
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw FederatedBrowser.Failure(description: "the latch executable was not found; run `swift build` first")
        }
        return found.path
    }

    /// Waits (≤ 60 s) for the authorization URL the command prints after "Open this URL in a browser:".
    static func printedURL(_ output: String, _ process: ChildProcess) async throws -> URL {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n").map(String.init)
            if let index = lines.firstIndex(of: "Open this URL in a browser:"), index + 1 < lines.count, let url = URL(string: lines[index + 1]) {
                return url
            }
            guard process.isRunning else { throw FederatedBrowser.Failure(description: "latch exited: \(text)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw FederatedBrowser.Failure(description: "no URL printed within 60 s")
    }

    @Test("CLI: `latch device federated-sign-in` prints the URL, the browser comes back to its loopback port, exit 0, signed in; a stray callback is refused")
    func commandLine() async throws {
        try await FederatedLatch.run { federated in
            let directory = TemporaryDirectory(prefix: "latch-federated-cli")
            defer { directory.remove() }
            let output = directory.path + "/sign-in.log"
            let environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
            let common = ["--server", federated.latch.url.absoluteString, "--state-dir", directory.path + "/device"]
            let process = try ChildProcess(
                executable: try Self.latchExecutable(), arguments: ["device", "federated-sign-in", "--idp", "corp", "--no-open", "--timeout", "120"] + common,
                environment: environment, outputPath: output)
            let url = try await Self.printedURL(output, process)
            let redirectURI = try #require(Self.query(url)["redirect_uri"])
            #expect(redirectURI.hasPrefix("http://127.0.0.1:") && redirectURI.hasSuffix("/callback"))
            #expect(url.absoluteString.hasPrefix(federated.latch.url.absoluteString + "/oauth2/authorize?"))

            let browser = federated.browser()
            // Only the callback carrying this sign-in's state is taken.
            let stray = try await browser.fetch(.GET, redirectURI + "?code=x&state=not-this-one&iss=x")
            #expect(stray.status == 400)
            #expect(try await browser.fetch(.GET, redirectURI.replacingOccurrences(of: "/callback", with: "/other")).status == 404)
            #expect(process.isRunning)

            let redirect = try await browser.signInThrough(url)
            #expect(redirect.absoluteString.hasPrefix(redirectURI + "?"))
            let page = try await browser.fetch(.GET, redirect.absoluteString)
            #expect(page.status == 200 && page.body.contains("Signed in as alice"), "\(page)")
            let status = await process.waitForExit(timeout: 60)
            let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            #expect(status == 0, "\(log)")
            #expect(log.contains("signed in as alice"), "\(log)")
            // The listener is closed (URLSession: AsyncHTTPClient retries a refused connection until its timeout).
            await #expect(throws: (any Error).self) { _ = try await URLSessionTransport().send(HTTPRequestData(method: "GET", url: redirect)) }

            // The device is signed in: status, refresh and whoami use the tokens.
            let (statusCode, statusOutput) = try await ChildProcess.run(try Self.latchExecutable(), ["device", "status"] + common, environment: environment)
            #expect(statusCode == 0 && statusOutput.contains("signedIn=true") && statusOutput.contains("user=alice"), "\(statusOutput)")
            #expect(statusOutput.contains("token=DPoP"), "\(statusOutput)")
            let (refreshCode, refreshOutput) = try await ChildProcess.run(try Self.latchExecutable(), ["device", "refresh"] + common, environment: environment)
            #expect(refreshCode == 0, "\(refreshOutput)")

            // Sign-out URL of the browser session.
            let (signOutCode, signOutOutput) = try await ChildProcess.run(
                try Self.latchExecutable(),
                ["device", "federated-sign-out", "--post-logout-redirect-uri", FederatedLatch.appSignedOut, "--state", "s1"] + common,
                environment: environment)
            #expect(signOutCode == 0 && signOutOutput.contains("/oauth2/logout?id_token_hint="), "\(signOutOutput)")
        }
    }

    @Test("CLI: an error answer exits 6 with the error; no answer within --timeout exits 11")
    func commandLineRefusals() async throws {
        try await FederatedLatch.run { federated in
            let directory = TemporaryDirectory(prefix: "latch-federated-cli")
            defer { directory.remove() }
            let environment = ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
            let common = ["--server", federated.latch.url.absoluteString, "--state-dir", directory.path + "/device"]

            try await federated.misbehave("error_response")
            let output = directory.path + "/denied.log"
            let process = try ChildProcess(
                executable: try Self.latchExecutable(), arguments: ["device", "federated-sign-in", "--no-open", "--timeout", "120"] + common,
                environment: environment, outputPath: output)
            let browser = federated.browser()
            let redirect = try await browser.signInThrough(try await Self.printedURL(output, process))
            let page = try await browser.fetch(.GET, redirect.absoluteString)
            #expect(page.status == 400 && page.body.contains("access_denied"), "\(page)")
            let status = await process.waitForExit(timeout: 60)
            let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            #expect(status == 6, "\(log)")
            #expect(log.contains("error: browser sign-in failed: access_denied"), "\(log)")

            // Exit 11 with that line is its own timer ending it (a hang is killed at 60 s and throws); no wall-clock
            // bound: under the whole suite on 2 cores a child's start alone has taken 30 s.
            let (timeoutCode, timeoutOutput) = try await ChildProcess.run(
                try Self.latchExecutable(), ["device", "federated-sign-in", "--no-open", "--timeout", "2"] + common, environment: environment, timeout: 60)
            #expect(timeoutCode == 11, "\(timeoutOutput)")
            #expect(timeoutOutput.contains("no answer from the browser within 2 s"), "\(timeoutOutput)")
        }
    }
}
