import Foundation
import LatchClient
import LatchCore
import LatchJOSE
import LatchModel
import LatchSQLite
import LatchTesting
import Testing

@Suite("UserClient against a live server", .serialized)
struct UserClientTests {
    @Test("Test-key registration, key sign-in, verified claims, refresh, sign-out (twice)")
    func deviceKeyLifecycle() async throws {
        try await LiveLatch.run { latch in
            let client = try latch.device()
            #expect(await client.isRegistered() == false)
            let username = try await client.registerWithAuthenticationProvider(try latch.testProvider())
            #expect(await client.isRegistered())
            #expect(await client.userName() == username)
            let tokens = try await client.signInWithKey()
            #expect(await client.isSignedIn())
            #expect(await client.subject() != nil)
            // Expiries are the server's, not guesses.
            // About an hour and 30 days from now (the server's clock runs with the system's; a loaded CI run is slow).
            #expect(abs(tokens.tokenExpiry.timeIntervalSinceNow - 3600) < 120)
            #expect(abs(tokens.refreshTokenExpiry.timeIntervalSinceNow - 30 * 24 * 3600) < 120)
            #expect(try await client.userClaim("username") == .string(username))
            #expect(try await client.userClaim("sub") == .string(await client.subject()!))
            let refreshed = try await client.refreshTokens()
            #expect(refreshed.refreshToken != tokens.refreshToken)
            #expect(await client.refreshToken() == refreshed.refreshToken)
            #expect(try await client.userInfo()["username"] == .string(username))
            try await client.signOut()
            #expect(await client.isSignedIn() == false)
            try await client.signOut()
            await #expect(throws: UserClientError.notSignedIn) { try await client.accessToken() }
            // The revoked refresh token is dead on the server too.
            await #expect(throws: UserClientError.notSignedIn) { try await client.refreshTokens() }
        }
    }

    @Test("clearAuthTokens forgets the tokens locally only: the server session stays live")
    func clearAuthTokens() async throws {
        try await LiveLatch.run { latch in
            let store = InMemoryKeyStore()
            let client = try UserClient(configuration: latch.configuration(), keyStore: store)
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            let tokens = try await client.signInWithKey()
            await client.clearAuthTokens()
            #expect(await client.isSignedIn() == false)
            #expect(await client.refreshToken() == nil)
            #expect(await client.signInStatus == .notSignedIn(.tokensCleared))
            #expect(await client.isRegistered())
            // The server never heard of it: the old refresh token still works (unlike signOut) — with a proof of the
            // device key, which the session is bound to (DPoP).
            let registration = try JSONValue.parse(try #require(try store.value(for: "registration")))
            let deviceKey = try PrivateKey(pem: try #require(registration["deviceKeyPEM"]?.stringValue))
            let proof = try DPoP.proof(
                key: deviceKey, method: "POST", url: latch.url.appendingPathComponent("oauth2/token").absoluteString, jti: UUID().uuidString,
                issuedAt: latch.clock.seconds)
            let response = try await URLSessionTransport().send(HTTPRequestData(
                method: "POST", url: latch.url.appendingPathComponent("oauth2/token"),
                headers: ["Content-Type": "application/x-www-form-urlencoded", "DPoP": proof],
                body: Data("grant_type=refresh_token&refresh_token=\(tokens.refreshToken)".utf8)))
            #expect(response.status == 200)
        }
    }

    @Test("RSA-2048 device keys work as well as P-256")
    func rsaDeviceKey() async throws {
        try await LiveLatch.run { latch in
            let client = try UserClient(configuration: latch.configuration(), keyStore: InMemoryKeyStore(), deviceKeyAlgorithm: .RS256)
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            _ = try await client.signInWithKey()
            #expect(await client.isSignedIn())
        }
    }

    @Test("Custom federated: register and sign in with a LocalAuthenticationProvider; kept attributes appear as claims")
    func federated() async throws {
        try await LiveLatch.run { latch in
            let client = try latch.device()
            #expect(try await client.registerWithAuthenticationProvider(try latch.federated()) == "alice")
            _ = try await client.signInWithAuthenticationProvider(try latch.federated(tier: "platinum"))
            #expect(try await client.userClaim("custom:tier") == "platinum")
            await #expect(throws: UserClientError.alreadyRegistered) { try await client.registerWithAuthenticationProvider(try latch.federated()) }
            // A second device registering the same identity is told it exists.
            await #expect(throws: UserClientError.alreadyRegistered) {
                try await latch.device().registerWithAuthenticationProvider(try latch.federated())
            }
        }
    }

    @Test("100 concurrent token reads while the token expires make exactly one refresh request")
    func singleFlightRefresh() async throws {
        try await LiveLatch.run { latch in
            let transport = RecordingTransport()
            let clock = MovableClock()
            let client = try latch.device(transport: transport, clock: clock.now)
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            let first = try await client.signInWithKey()
            // The token now expires within the 60 s margin (on the server's clock too: DPoP proofs carry the time).
            clock.advance(3600 - 30)
            latch.clock.advance(by: 3600 - 30)
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<100 { group.addTask { try await client.accessToken() } }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(transport.count("/oauth2/token") == 2, "one sign-in and exactly one refresh")
            #expect(tokens.count == 1 && !tokens.contains(first.accessToken))
        }
    }

    @Test("Sign-in after reset() fails with notRegistered; reset leaves other namespaces alone")
    func resetIsolation() async throws {
        try await LiveLatch.run { latch in
            let root = TemporaryDirectory()
            defer { root.remove() }
            let a = try UserClient(
                configuration: latch.configuration(namespace: "suite-a"), keyStore: try FileKeyStore(root: URL(fileURLWithPath: root.path), namespace: "suite-a"))
            let b = try UserClient(
                configuration: latch.configuration(namespace: "suite-b"), keyStore: try FileKeyStore(root: URL(fileURLWithPath: root.path), namespace: "suite-b"))
            try await a.registerWithAuthenticationProvider(try latch.testProvider())
            try await b.registerWithAuthenticationProvider(try latch.testProvider())
            _ = try await a.signInWithKey()
            try await a.reset()
            #expect(await a.isRegistered() == false)
            await #expect(throws: UserClientError.notRegistered) { try await a.signInWithKey() }
            #expect(await b.isRegistered())
            _ = try await b.signInWithKey()
        }
    }

    @Test("userClaim refuses an ID token whose signature does not verify, or that names another audience")
    func userClaimVerifies() async throws {
        try await LiveLatch.run { latch in
            let store = InMemoryKeyStore()
            let client = try UserClient(configuration: latch.configuration(), keyStore: store)
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            _ = try await client.signInWithKey()
            #expect(try await client.userClaim("username") != nil)
            var tokens = try JSONDecoder().decode(AuthenticationTokens.self, from: try #require(try store.value(for: "tokens")))
            let genuine = tokens.idToken
            let parts = genuine.split(separator: ".")
            // Same header and signature, changed claims.
            var claims = try ParsedJWS(genuine).claims
            claims["username"] = "mallory"
            tokens.idToken = parts[0] + "." + Base64URL.encode(JSONValue.object(claims).serialized()) + "." + parts[2]
            try store.set(try JSONEncoder().encode(tokens), for: "tokens")
            await #expect(throws: UserClientError.notAuthorized) { try await client.userClaim("username") }
            // Properly signed, but by a key the server never published.
            tokens.idToken = try JWSSigner(key: TestKeys.p256, keyID: String(try ParsedJWS(genuine).keyID!)).sign(claims: claims)
            try store.set(try JSONEncoder().encode(tokens), for: "tokens")
            await #expect(throws: UserClientError.notAuthorized) { try await client.userClaim("username") }
            // Genuine token, other client: its audience does not match.
            tokens.idToken = genuine
            try store.set(try JSONEncoder().encode(tokens), for: "tokens")
            let otherApp = try UserClient(configuration: latch.configuration(clientId: "other-app"), keyStore: store)
            await #expect(throws: UserClientError.notAuthorized) { try await otherApp.userClaim("username") }
        }
    }

    @Test("Global sign-out on device A moves device B to notSignedIn at its next call")
    func globalSignOutReachesOtherDevices() async throws {
        try await LiveLatch.run { latch in
            let a = try latch.device()
            let b = try latch.device()
            try await a.registerWithAuthenticationProvider(try latch.federated())
            _ = try await a.signInWithAuthenticationProvider(try latch.federated())
            _ = try await b.signInWithAuthenticationProvider(try latch.federated())
            var updates = await b.signInStatusUpdates().makeAsyncIterator()
            #expect(await updates.next() == .signedIn)
            try await a.globalSignOut()
            await #expect(throws: UserClientError.notSignedIn) { try await b.userInfo() }
            #expect(await updates.next() == .notSignedIn(.sessionEnded))
            #expect(await b.isSignedIn() == false)
            await #expect(throws: UserClientError.notSignedIn) { try await b.refreshTokens() }
        }
    }

    @Test("Recent activity: the SDK reads the user's own security events, newest first, a page at a time")
    func securityEvents() async throws {
        try await LiveLatch.run { latch in
            let client = try latch.device()
            try await client.registerWithAuthenticationProvider(try latch.federated())
            _ = try await client.signInWithAuthenticationProvider(try latch.federated())
            _ = try await client.signInWithAuthenticationProvider(try latch.federated())
            let first = try await client.securityEvents(limit: 2)
            #expect(first.events.map(\.type) == ["signin.succeeded", "signin.succeeded"] && first.nextCursor != nil)
            let second = try await client.securityEvents(limit: 2, cursor: first.nextCursor)
            #expect(second.events.map(\.type) == ["user.registered"] && second.nextCursor == nil)
            #expect(first.events.allSatisfy { $0.actor == "user" && $0.client == "default" })
            // Each request said which SDK release sent it.
            #expect(first.events.allSatisfy { $0.userAgent == LatchVersion.sdkUserAgent }, "\(first.events.map(\.userAgent))")
            await #expect(throws: UserClientError.self) { try await client.securityEvents(limit: 0) }
        }
    }

    @Test("A refresh answered 'family revoked' moves the client to notSignedIn(sessionEnded)")
    func refreshOfRevokedFamily() async throws {
        try await LiveLatch.run { latch in
            let client = try latch.device()
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            _ = try await client.signInWithKey()
            let userID = try #require(await client.subject())
            _ = try await latch.store.revokeSessions(userID: userID, at: latch.clock.seconds)
            await #expect(throws: UserClientError.notSignedIn) { try await client.refreshTokens() }
            #expect(await client.signInStatus == .notSignedIn(.sessionEnded))
        }
    }

    @Test("Status updates: signingIn, signedIn, then notSignedIn(signedOut)")
    func statusStream() async throws {
        try await LiveLatch.run { latch in
            let client = try latch.device()
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            var updates = await client.signInStatusUpdates().makeAsyncIterator()
            #expect(await updates.next() == .notSignedIn(.neverSignedIn))
            _ = try await client.signInWithKey()
            #expect(await updates.next() == .signingIn)
            #expect(await updates.next() == .signedIn)
            try await client.signOut()
            #expect(await updates.next() == .notSignedIn(.signedOut))
        }
    }

    @Test("A registration whose answer was lost is retried with the same registrationId and gets the same user")
    func registrationRetry() async throws {
        try await LiveLatch.run { latch in
            let transport = RecordingTransport()
            let client = try latch.device(transport: transport)
            transport.dropNextAnswer.withLock { _ = $0.insert("/v1/registrations") }
            let provider = try latch.testProvider()
            await #expect(throws: UserClientError.network(underlying: URLError(.networkConnectionLost))) {
                try await client.registerWithAuthenticationProvider(provider)
            }
            #expect(await client.isRegistered() == false)
            // The server did register it; the retry resends the same registration and gets the same user.
            let username = try await client.registerWithAuthenticationProvider(provider)
            #expect(username == provider.username)
            #expect(transport.count("/v1/registrations") == 2)
            let users = try await latch.store.users(after: nil, limit: 10)
            #expect(users.count == 1)
            _ = try await client.signInWithKey()
        }
    }

    @Test("FIDO sign-up with a PIN authenticator: a lost answer is retried into the same user; sign-in; a wrong PIN is counted")
    func fidoSignUp() async throws {
        try await LiveLatch.run { latch in
            let transport = RecordingTransport()
            let client = try latch.device(transport: transport)
            let pin = PinAuthenticator.forTests()
            await #expect(throws: UserClientError.self) { try await client.signUpWithFido(pin, pin: "12", username: "pin-owner") }
            transport.dropNextAnswer.withLock { _ = $0.insert("/v1/registrations") }
            await #expect(throws: UserClientError.network(underlying: URLError(.networkConnectionLost))) {
                try await client.signUpWithFido(pin, pin: "480219", username: "Pin-Owner", name: "phone")
            }
            #expect(await client.isRegistered() == false)
            // The retry resends the kept request: the same user, one authenticator.
            #expect(try await client.signUpWithFido(pin, pin: "480219", username: "Pin-Owner") == "pin-owner")
            #expect(transport.count("/v1/registrations") == 2)
            #expect(try await latch.store.users(after: nil, limit: 10).count == 1)
            #expect(await client.isRegistered())
            await #expect(throws: UserClientError.alreadyRegistered) { try await client.signUpWithFido(pin, pin: "480219") }

            try await client.signInWithFido(pin, pin: "480219")
            #expect(try await client.userClaim("amr") == ["pin", "swk", "user", "mfa"])
            let listed = try await client.fidoAuthenticators()
            #expect(listed.map(\.name) == ["phone"])
            do {
                try await client.signInWithFido(pin, pin: "000000")
                Issue.record("a wrong PIN signed in")
            } catch let error as UserClientError {
                guard error.code == .pinAttemptFailed, let status = error.pinStatus else { throw error }
                #expect(status.remainingTries == 4)
            }
            #expect(try await client.pinStatus().remainingTries == 4)
        }
    }

    @Test("Nevis-shaped operations: the selector picks the allowed authenticator; each outcome reaches exactly one handler")
    func fidoOperations() async throws {
        try await LiveLatch.run { latch in
            let client = try latch.device()
            _ = try await client.registerWithAuthenticationProvider(try latch.testProvider())
            _ = try await client.signInWithKey()
            let outcomes = Locked<[String]>([])
            // A PIN outside the policy: onError with a recoverable refusal, nothing registered.
            await client.registrationOperation([PinAuthenticator.forTests()], pin: "12")
                .onSuccess { _ in outcomes.withLock { $0.append("registered") } }
                .onError { error in outcomes.withLock { $0.append(error.description) } }
                .execute().value
            #expect(outcomes.withLock { $0 }.count == 1 && outcomes.withLock { $0 }[0].contains("PIN"))
            // The first supported and allowed authenticator is the PIN one.
            await client.registrationOperation([PinAuthenticator.forTests(), SoftwareAuthenticator()], pin: "480219", name: "ops")
                .onSuccess { info in outcomes.withLock { $0.append("registered \(info.name) \(info.aaguid)") } }
                .onError { error in outcomes.withLock { $0.append("error \(error)") } }
                .execute().value
            #expect(outcomes.withLock { $0 }.last == "registered ops \(LatchAuthenticatorModel.pin.rawValue)")
            // A wrong PIN reaches onError with the server's count; the right one onSuccess.
            await client.authenticationOperation(PinAuthenticator.forTests(), pin: "000000")
                .onSuccess { _ in outcomes.withLock { $0.append("signed in") } }
                .onError { error in
                    if let status = error.pinStatus { outcomes.withLock { $0.append("tries \(status.remainingTries)") } }
                }
                .execute().value
            await client.authenticationOperation(PinAuthenticator.forTests(), pin: "480219")
                .onSuccess { _ in outcomes.withLock { $0.append("signed in") } }
                .execute().value
            await client.deregistrationOperation().onSuccess { outcomes.withLock { $0.append("deregistered") } }.execute().value
            #expect(Array(outcomes.withLock { $0 }.suffix(3)) == ["tries 4", "signed in", "deregistered"])
            #expect(try await client.fidoAuthenticators().isEmpty)
        }
    }

    @Test("De-registration needs a recent sign-in, then deletes the user and resets the client")
    func deregistration() async throws {
        try await LiveLatch.run { latch in
            // The device's clock moves with the server's (DPoP proofs carry the time).
            let clock = MovableClock()
            let client = try latch.device(clock: clock.now)
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            _ = try await client.signInWithKey()
            latch.clock.advance(by: 301)
            clock.advance(301)
            await #expect(throws: UserClientError.insufficientAuthentication(maxAge: 300)) { try await client.deregister() }
            #expect(await client.isRegistered())
            _ = try await client.signInWithKey()
            try await client.deregister()
            #expect(await client.isRegistered() == false)
            #expect(await client.signInStatus == .notSignedIn(.deregistered))
            #expect(try await latch.store.users(after: nil, limit: 10).isEmpty)
        }
    }

    @Test("Errors come from the server's codes: unknown client → invalidConfiguration; no server → network")
    func errorMapping() async throws {
        try await LiveLatch.run { latch in
            let wrongClient = try UserClient(configuration: latch.configuration(clientId: "ghost-app"), keyStore: InMemoryKeyStore())
            try await wrongClient.registerWithAuthenticationProvider(try latch.testProvider())
            await #expect(throws: UserClientError.invalidConfiguration("")) { try await wrongClient.signInWithKey() }
        }
        let nowhere = try UserClient(
            configuration: LatchClientConfiguration(serverURL: URL(string: "http://127.0.0.1:1")!), keyStore: InMemoryKeyStore())
        await #expect(throws: UserClientError.network(underlying: URLError(.cannotConnectToHost))) {
            try await nowhere.signInWithAuthenticationProvider(try LocalAuthenticationProvider(
                issuer: "x", keyID: "k", privateKeyPEM: TestKeys.p256.pemRepresentation, username: "u"))
        }
    }
}

@Suite("Key stores and configuration")
struct KeyStoreTests {
    @Test("FileKeyStore: 0700 folder, 0600 files, atomic replace, namespace isolation, safe names")
    func fileKeyStore() throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        let a = try FileKeyStore(root: URL(fileURLWithPath: root.path), namespace: "a")
        let b = try FileKeyStore(root: URL(fileURLWithPath: root.path), namespace: "b")
        try a.set(Data("one".utf8), for: "tokens")
        try a.set(Data("two".utf8), for: "tokens")
        try b.set(Data("other".utf8), for: "tokens")
        #expect(try a.value(for: "tokens") == Data("two".utf8))
        let file = try FileManager.default.attributesOfItem(atPath: a.directory.appendingPathComponent("tokens").path)
        #expect((file[.posixPermissions] as? Int) == 0o600)
        let folder = try FileManager.default.attributesOfItem(atPath: a.directory.path)
        #expect((folder[.posixPermissions] as? Int) == 0o700)
        #expect(try FileManager.default.contentsOfDirectory(atPath: a.directory.path) == ["tokens"])
        try a.removeAll()
        #expect(try a.value(for: "tokens") == nil)
        #expect(try b.value(for: "tokens") == Data("other".utf8))
        #expect(throws: (any Error).self) { try a.set(Data(), for: "../escape") }
        #expect(throws: UserClientError.self) { try FileKeyStore(root: URL(fileURLWithPath: root.path), namespace: "../x") }
    }

    @Test("Configuration files are read and checked")
    func configuration() throws {
        let root = TemporaryDirectory()
        defer { root.remove() }
        let good = URL(fileURLWithPath: root.path + "/good.json")
        try Data(#"{"serverURL":"https://id.example.com","clientId":"ios-app"}"#.utf8).write(to: good)
        let configuration = try LatchClientConfiguration.load(from: good)
        #expect(configuration.clientId == "ios-app" && configuration.namespace == "ios-app" && configuration.audience == "identity-service")
        for bad in [#"{"serverURL":"ftp://x","clientId":"a"}"#, #"{"clientId":"a"}"#, #"{"serverURL":"https://x","namespace":"../up"}"#, "nope"] {
            let file = URL(fileURLWithPath: root.path + "/bad.json")
            try Data(bad.utf8).write(to: file)
            #expect(throws: UserClientError.invalidConfiguration("")) { try LatchClientConfiguration.load(from: file) }
        }
    }
}
