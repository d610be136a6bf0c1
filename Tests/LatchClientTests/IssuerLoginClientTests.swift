import Foundation
import LatchClient
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// Login issuers set up through the admin API of a ``LiveLatch``, and issuer tokens they sign (ES256).
struct IssuerFixture: Sendable {
    let latch: LiveLatch
    let key: PrivateKey

    static let keyID = "k1"

    init(_ latch: LiveLatch, issuers: [String] = ["bank-a", "bank-b"]) async throws {
        self.latch = latch
        self.key = try PrivateKey.generate(.ES256)
        for issuer in issuers {
            let request = AdminLoginIssuerRequest(
                issuerId: issuer, audience: Self.audience(issuer),
                keys: [LoginIssuerKey(kid: Self.keyID, algorithm: "ES256", publicKey: key.publicKey.pemRepresentation)])
            let response = try await admin("POST", "admin/v1/login-issuers", body: request)
            try #require(response.status == 201, "adding login issuer \(issuer): \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    static func audience(_ issuer: String) -> String { "https://\(issuer).example/login" }

    /// An issuer token of `issuer` for `consumers` (space-separated in `sub`), issued at the server's now.
    func token(_ issuer: String, _ consumers: String, audience: String? = nil) throws -> String {
        let now = latch.clock.seconds
        return try JWTBuilder(
            header: ["kid": .string(Self.keyID)],
            claims: [
                "iss": .string(issuer), "sub": .string(consumers), "aud": .string(audience ?? Self.audience(issuer)),
                "jti": .string(UUID().uuidString), "iat": .int(now), "exp": .int(now + 120),
            ]
        ).sign(with: key)
    }

    func admin(_ method: String, _ path: String, body: (some Encodable)? = Optional<String>.none) async throws -> HTTPResponseData {
        var request = HTTPRequestData(
            method: method, url: latch.url.appendingPathComponent(path), headers: ["Authorization": "Bearer \(LiveLatch.adminToken)"])
        if let body {
            request.headers["Content-Type"] = "application/json"
            request.body = try JSONEncoder().encode(body)
        }
        return try await URLSessionTransport().send(request)
    }
}

extension UserClient {
    /// The verified `sid` of the session.
    fileprivate func sessionID() async throws -> String { try #require(try await userClaim("sid")?.stringValue) }
}

@Suite("UserClient issuer login against a live server", .serialized)
struct IssuerLoginClientTests {
    static func pair(_ issuer: String, _ consumer: String) -> LoginConsumer { LoginConsumer(issuer: issuer, consumer: consumer) }

    @Test("Login with tokens of two issuers: the consumers from the ID token and from login-status; a small login age")
    func loginWithTwoIssuers() async throws {
        try await LiveLatch.run { latch in
            let issuers = try await IssuerFixture(latch)
            // The client reads the server's clock, which runs with the system's (DPoP proofs need it): the age is at
            // most the time this test took since the login, whatever the machine's load (a CI run once took 90 s).
            let serverClock = latch.clock
            let client = try latch.device(clock: { serverClock.now })
            let loggedIn = Date()
            try await client.login(issuerTokens: [try issuers.token("bank-a", "c-1 c-2"), try issuers.token("bank-b", "c-1")])
            #expect(await client.signInStatus == .signedIn)
            #expect(await client.isSignedIn())
            let expected = [Self.pair("bank-a", "c-1"), Self.pair("bank-a", "c-2"), Self.pair("bank-b", "c-1")]
            #expect(try await client.consumers == expected)
            let status = try await client.loginStatus()
            let bound = Int64(Date().timeIntervalSince(loggedIn).rounded(.up)) + 1
            #expect(Set(status.consumers) == Set(expected))
            #expect(status.loginAge >= 0 && status.loginAge <= bound && status.sensitiveAllowed && status.sensitiveMaxAge == 300, "age \(status.loginAge), bound \(bound)")
            #expect(status.expiresAt > status.authTime)
            let age = try await client.loginAge
            #expect(age >= 0 && age <= Date().timeIntervalSince(loggedIn) + 1, "age \(age)")
            #expect(try await client.requireRecentLogin().consumers.count == 3)
            // The access token carries the pairs too (for resource servers that read it without introspection).
            let access = try ParsedJWS(try await client.accessToken())
            #expect(access.claims["consumers"]?.arrayValue?.count == 3)
        }
    }

    @Test("addIssuerTokens refreshes an expiring access token first, adds a consumer and keeps the session id")
    func addTokens() async throws {
        try await LiveLatch.run { latch in
            let issuers = try await IssuerFixture(latch)
            let transport = RecordingTransport()
            let clock = MovableClock()
            let client = try latch.device(transport: transport, clock: clock.now)
            try await client.login(issuerTokens: [try issuers.token("bank-a", "c-1")])
            let sid = try await client.sessionID()
            // The access token now expires within the 60 s margin: it is refreshed before it is sent. (The server's clock
            // moves too: DPoP proofs carry the time.)
            clock.advance(3600 - 30)
            latch.clock.advance(by: 3600 - 30)
            try await client.addIssuerTokens([try issuers.token("bank-b", "c-5")])
            #expect(transport.count("/oauth2/token") == 3, "login, refresh, add")
            #expect(try await client.sessionID() == sid)
            #expect(try await client.consumers == [Self.pair("bank-a", "c-1"), Self.pair("bank-b", "c-5")])
            #expect(try await client.loginStatus().consumers.count == 2)
            // A pair held already is not added twice.
            try await client.addIssuerTokens([try issuers.token("bank-a", "c-1")])
            #expect(try await client.consumers.count == 2)
            #expect(try await client.sessionID() == sid)
        }
    }

    @Test("IssuerSession handles of two issuers share the client's one session (no second login)")
    func sharedHandles() async throws {
        try await LiveLatch.run { latch in
            let issuers = try await IssuerFixture(latch)
            let transport = RecordingTransport()
            let client = try latch.device(transport: transport)
            await #expect(throws: UserClientError.notSignedIn) { try await client.issuerSession(issuer: "bank-a") }
            try await client.login(issuerTokens: [try issuers.token("bank-a", "c-1"), try issuers.token("bank-b", "c-2")])
            let sid = try await client.sessionID()
            let a = try await client.issuerSession(issuer: "bank-a")
            let b = try await client.issuerSession(issuer: "bank-b")
            #expect(a.issuer == "bank-a" && a.consumers == ["c-1"])
            #expect(b.issuer == "bank-b" && b.consumers == ["c-2"])
            let statusA = try await a.loginStatus()
            let statusB = try await b.loginStatus()
            #expect(statusA.authTime == statusB.authTime && statusA.consumers == statusB.consumers)
            let tokenA = try await a.accessToken()
            let tokenB = try await b.accessToken()
            #expect(tokenA == tokenB)
            // Adding through one handle changes the shared session; the other sees it too.
            let b2 = try await b.addIssuerTokens([try issuers.token("bank-b", "c-3")])
            #expect(b2.consumers == ["c-2", "c-3"])
            #expect(try await a.currentConsumers() == ["c-1"])
            #expect(try await client.sessionID() == sid)
            #expect(transport.count("/oauth2/token") == 2, "one login, one add; making handles logs nothing in")
            // Logging out through one handle ends the session of all.
            #expect(try await a.logout() == 1)
            await #expect(throws: UserClientError.notSignedIn) { try await b.loginStatus() }
            await #expect(throws: UserClientError.notSignedIn) { try await b2.requireRecentLogin() }
        }
    }

    @Test("requireRecentLogin: insufficientAuthentication(maxAge:) once the server's clock passes the window; a fresh token renews it")
    func sensitiveWindow() async throws {
        try await LiveLatch.run { latch in
            let issuers = try await IssuerFixture(latch)
            // The device's clock moves with the server's (DPoP proofs carry the time).
            let clock = MovableClock()
            let client = try latch.device(clock: clock.now)
            try await client.login(issuerTokens: [try issuers.token("bank-a", "c-1")])
            try await client.requireRecentLogin()
            latch.clock.advance(by: 301)
            clock.advance(301)
            await #expect(throws: UserClientError.insufficientAuthentication(maxAge: 300)) { try await client.requireRecentLogin() }
            let handle = try await client.issuerSession(issuer: "bank-a")
            await #expect(throws: UserClientError.insufficientAuthentication(maxAge: 300)) { try await handle.requireRecentLogin() }
            // Not a sign-out: the session stays, only sensitive operations wait for a new login.
            #expect(await client.signInStatus == .signedIn)
            let status = try await client.loginStatus()
            #expect(status.sensitiveAllowed == false && status.loginAge >= 301)
            // Adding a fresh issuer token is a new login: the window restarts.
            let added = Date()
            try await client.addIssuerTokens([try issuers.token("bank-a", "c-1")])
            // At most the real time since (the server's clock runs with the system's): far from the 301 s before.
            #expect(try await client.requireRecentLogin().loginAge <= Int64(Date().timeIntervalSince(added).rounded(.up)) + 1)
        }
    }

    @Test("logout ends the session on the server: later signed-in calls fail as signed out; a second logout succeeds")
    func logout() async throws {
        try await LiveLatch.run { latch in
            let issuers = try await IssuerFixture(latch)
            let client = try latch.device()
            let tokens = try await client.login(issuerTokens: [try issuers.token("bank-a", "c-1")])
            #expect(try await client.logout() == 1)
            #expect(await client.isSignedIn() == false)
            #expect(await client.signInStatus == .notSignedIn(.signedOut))
            await #expect(throws: UserClientError.notSignedIn) { try await client.loginStatus() }
            await #expect(throws: UserClientError.notSignedIn) { try await client.addIssuerTokens([try issuers.token("bank-a", "c-1")]) }
            #expect(try await client.logout() == 0)
            // The server ended it: its refresh token and access token are dead.
            let refresh = try await URLSessionTransport().send(
                HTTPRequestData(
                    method: "POST", url: latch.url.appendingPathComponent("oauth2/token"),
                    headers: ["Content-Type": "application/x-www-form-urlencoded"],
                    body: Data("grant_type=refresh_token&refresh_token=\(tokens.refreshToken)".utf8)))
            #expect(refresh.status == 400)
            let status = try await URLSessionTransport().send(
                HTTPRequestData(
                    method: "GET", url: latch.url.appendingPathComponent("v1/me/login-status"),
                    headers: ["Authorization": "Bearer \(tokens.accessToken)"]))
            #expect(status.status == 401)
        }
    }

    @Test("logoutAll on device A ends the sessions of devices B and D sharing a consumer, not device C's")
    func logoutAll() async throws {
        try await LiveLatch.run { latch in
            let issuers = try await IssuerFixture(latch)
            let a = try latch.device()
            let b = try latch.device()
            let c = try latch.device()
            try await a.login(issuerTokens: [try issuers.token("bank-a", "c-1"), try issuers.token("bank-b", "c-2")])
            try await b.login(issuerTokens: [try issuers.token("bank-b", "c-2")])
            try await c.login(issuerTokens: [try issuers.token("bank-b", "c-7")])
            let d = try latch.device()
            try await d.login(issuerTokens: [try issuers.token("bank-a", "c-1")])
            #expect(try await a.logoutAll() == 3)
            #expect(await a.isSignedIn() == false)
            await #expect(throws: UserClientError.notSignedIn) { try await b.loginStatus() }
            #expect(await b.signInStatus == .notSignedIn(.sessionEnded))
            #expect(try await c.loginStatus().consumers == [Self.pair("bank-b", "c-7")])
            // Adding to an ended session: the token endpoint refuses the access token; the client is signed out.
            await #expect(throws: UserClientError.notSignedIn) { try await d.addIssuerTokens([try issuers.token("bank-a", "c-4")]) }
            #expect(await d.signInStatus == .notSignedIn(.sessionEnded))
            #expect(await d.isSignedIn() == false)
            // Without a session there is nothing to log out everywhere.
            await #expect(throws: UserClientError.notSignedIn) { try await a.logoutAll() }
        }
    }

    @Test("A refused token is named by its index, a replayed one too; nothing of a refused request is consumed")
    func tokenIndex() async throws {
        try await LiveLatch.run { latch in
            let issuers = try await IssuerFixture(latch)
            let client = try latch.device()
            let good = try issuers.token("bank-a", "c-1")
            let wrongAudience = try issuers.token("bank-b", "c-2", audience: "https://elsewhere.example")
            do throws(UserClientError) {
                try await client.login(issuerTokens: [good, wrongAudience])
                Issue.record("a token for another audience logged in")
            } catch {
                #expect(error == .issuerTokenRejected(tokenIndex: 1, message: nil))
                #expect(error.tokenIndex == 1)
                #expect(error.description.contains("issuer token 1"))
            }
            #expect(await client.signInStatus == .notSignedIn(.signInFailed))
            let unknownIssuer = try IssuerFixture.token(latch: latch, key: issuers.key, issuer: "bank-z")
            await #expect(throws: UserClientError.issuerTokenRejected(tokenIndex: 0, message: nil)) {
                try await client.login(issuerTokens: [unknownIssuer, good])
            }
            // The refused requests consumed nothing: the good token still logs in, once.
            try await client.login(issuerTokens: [good])
            let sid = try await client.sessionID()
            // A replay is named too (here behind a fresh token: index 1).
            await #expect(throws: UserClientError.issuerTokenRejected(tokenIndex: 1, message: nil)) {
                try await latch.device().login(issuerTokens: [try issuers.token("bank-b", "c-9"), good])
            }
            // Adding: the index is into the tokens added; the session is left as it was.
            let fresh = try issuers.token("bank-b", "c-3")
            await #expect(throws: UserClientError.issuerTokenRejected(tokenIndex: 1, message: nil)) {
                try await client.addIssuerTokens([fresh, wrongAudience])
            }
            #expect(try await client.consumers == [Self.pair("bank-a", "c-1")])
            #expect(try await client.sessionID() == sid)
            await #expect(throws: UserClientError.invalidInput("")) { try await client.login(issuerTokens: []) }
        }
    }
}

extension IssuerFixture {
    /// A well-formed token of an issuer that was never registered.
    static func token(latch: LiveLatch, key: PrivateKey, issuer: String) throws -> String {
        let now = latch.clock.seconds
        return try JWTBuilder(
            header: ["kid": .string(keyID)],
            claims: [
                "iss": .string(issuer), "sub": "c-1", "aud": .string(audience(issuer)), "jti": .string(UUID().uuidString), "iat": .int(now),
                "exp": .int(now + 120),
            ]
        ).sign(with: key)
    }
}
