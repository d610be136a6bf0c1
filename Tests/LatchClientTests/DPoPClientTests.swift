import Foundation
import LatchApp
import LatchClient
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite("UserClient DPoP (RFC 9449) against a live server", .serialized)
struct DPoPClientTests {
    /// `cnf.jkt` of an access token.
    static func jkt(_ accessToken: String) throws -> String? { try ParsedJWS(accessToken).claims["cnf"]?["jkt"]?.stringValue }

    /// The device sign-in key a client registered (from its key store).
    static func deviceKey(_ store: any KeyStore) throws -> PrivateKey {
        let registration = try JSONValue.parse(try #require(try store.value(for: "registration")))
        return try PrivateKey(pem: try #require(registration["deviceKeyPEM"]?.stringValue))
    }

    static func admin(_ latch: LiveLatch, _ method: String, _ path: String, body: some Encodable) async throws -> HTTPResponseData {
        let request = HTTPRequestData(
            method: method, url: latch.url.appendingPathComponent(path),
            headers: ["Authorization": "Bearer \(LiveLatch.adminToken)", "Content-Type": "application/json"], body: try JSONEncoder().encode(body))
        return try await URLSessionTransport().send(request)
    }

    @Test("Sign-in binds the tokens to the device key; Latch's endpoints take them as DPoP; refresh stays bound after a restart")
    func boundToDeviceKey() async throws {
        try await LiveLatch.run { latch in
            let root = TemporaryDirectory()
            defer { root.remove() }
            let store = try FileKeyStore(root: URL(fileURLWithPath: root.path), namespace: "default")
            let client = try UserClient(configuration: latch.configuration(), keyStore: store)
            let username = try await client.registerWithAuthenticationProvider(try latch.testProvider())
            let device = try Self.deviceKey(store)
            #expect(await client.dpopKeyThumbprint() == device.publicKey.thumbprint)
            let tokens = try await client.signInWithKey()
            #expect(tokens.tokenType == "DPoP" && tokens.isDPoPBound)
            #expect(try Self.jkt(tokens.accessToken) == device.publicKey.thumbprint)
            #expect(tokens.dpopKeyThumbprint == device.publicKey.thumbprint)
            #expect(await client.tokenBinding() == TokenBinding(tokenType: "DPoP", thumbprint: device.publicKey.thumbprint, isDeviceKey: true))
            // The device key proves; the client made no key of its own.
            #expect(try store.value(for: "dpop-key") == nil)

            // Latch's own endpoints: userinfo, and /v1/me through authorizedData.
            #expect(try await client.userInfo()["username"] == .string(username))
            let (body, response) = try await client.authorizedData(for: URLRequest(url: latch.url.appendingPathComponent("v1/me")))
            #expect(response.statusCode == 200)
            #expect(try JSONValue.parse(body)["username"] == .string(username))
            // The same token as Bearer is refused: a copy without the key is useless.
            let stolen = try await URLSessionTransport().send(HTTPRequestData(
                method: "GET", url: latch.url.appendingPathComponent("v1/me"), headers: ["Authorization": "Bearer \(tokens.accessToken)"]))
            #expect(stolen.status == 401)
            // So is the refresh token without a proof of the key (and the refusal leaves it usable).
            let refreshWithoutProof = try await URLSessionTransport().send(HTTPRequestData(
                method: "POST", url: latch.url.appendingPathComponent("oauth2/token"),
                headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: Data("grant_type=refresh_token&refresh_token=\(tokens.refreshToken)".utf8)))
            #expect(refreshWithoutProof.status == 400)
            #expect(String(decoding: refreshWithoutProof.body, as: UTF8.self).contains("invalid_dpop_proof"))

            // An app restart: a new client on the same key store refreshes with the same key, and stays bound.
            let restarted = try UserClient(configuration: latch.configuration(), keyStore: try FileKeyStore(root: URL(fileURLWithPath: root.path), namespace: "default"))
            let refreshed = try await restarted.refreshTokens()
            #expect(refreshed.refreshToken != tokens.refreshToken)
            #expect(refreshed.tokenType == "DPoP")
            #expect(try Self.jkt(refreshed.accessToken) == device.publicKey.thumbprint)
            #expect(try await restarted.userInfo()["username"] == .string(username))
            // Off for new sign-ins does not unbind the session held: it still proves its key.
            let switchedOff = try UserClient(configuration: LatchClientConfiguration(serverURL: latch.url, dpop: false), keyStore: store)
            #expect(try Self.jkt(try await switchedOff.refreshTokens().accessToken) == device.publicKey.thumbprint)
            #expect(try await switchedOff.userInfo()["username"] == .string(username))
            try await switchedOff.globalSignOut()
            #expect(await switchedOff.isSignedIn() == false)
        }
    }

    @Test("RSA device keys prove with RS256")
    func rsaDeviceKey() async throws {
        try await LiveLatch.run { latch in
            let store = InMemoryKeyStore()
            let client = try UserClient(configuration: latch.configuration(), keyStore: store, deviceKeyAlgorithm: .RS256)
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            let tokens = try await client.signInWithKey()
            #expect(try Self.jkt(tokens.accessToken) == (try Self.deviceKey(store)).publicKey.thumbprint)
            _ = try await client.refreshTokens()
            _ = try await client.userInfo()
        }
    }

    @Test("Without a device key (custom federated) the client binds to a key of its own, kept in the key store")
    func ownKey() async throws {
        try await LiveLatch.run { latch in
            let store = InMemoryKeyStore()
            let client = try UserClient(configuration: latch.configuration(), keyStore: store)
            #expect(await client.dpopKeyThumbprint() == nil)
            try await client.registerWithAuthenticationProvider(try latch.federated())
            let tokens = try await client.signInWithAuthenticationProvider(try latch.federated())
            let own = try PrivateKey(pem: String(decoding: try #require(try store.value(for: "dpop-key")), as: UTF8.self))
            #expect(try Self.jkt(tokens.accessToken) == own.publicKey.thumbprint)
            #expect(await client.dpopKeyThumbprint() == own.publicKey.thumbprint)
            #expect(await client.tokenBinding()?.isDeviceKey == false)
            // A second sign-in uses the same key; a restarted client refreshes with it.
            #expect(try Self.jkt(try await client.signInWithAuthenticationProvider(try latch.federated()).accessToken) == own.publicKey.thumbprint)
            let restarted = try UserClient(configuration: latch.configuration(), keyStore: store)
            #expect(try Self.jkt(try await restarted.refreshTokens().accessToken) == own.publicKey.thumbprint)
            #expect(try await restarted.userClaim("custom:tier") == "gold")
        }
    }

    @Test("dpop: false gets bearer tokens, sent as Bearer")
    func switchedOff() async throws {
        try await LiveLatch.run { latch in
            let client = try UserClient(configuration: LatchClientConfiguration(serverURL: latch.url, dpop: false), keyStore: InMemoryKeyStore())
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            let tokens = try await client.signInWithKey()
            #expect(tokens.tokenType == "Bearer" && !tokens.isDPoPBound)
            #expect(try Self.jkt(tokens.accessToken) == nil)
            #expect(await client.tokenBinding() == TokenBinding(tokenType: "Bearer", thumbprint: nil, isDeviceKey: false))
            #expect(try await client.authorizationHeaders(method: "GET", url: latch.url) == ["Authorization": "Bearer \(tokens.accessToken)"])
            _ = try await client.userInfo()
            _ = try await client.refreshTokens()
            // The configuration file's switch.
            let root = TemporaryDirectory()
            defer { root.remove() }
            let file = URL(fileURLWithPath: root.path + "/c.json")
            try Data(#"{"serverURL":"https://id.example.com","dpop":false}"#.utf8).write(to: file)
            #expect(try LatchClientConfiguration.load(from: file).dpop == false)
            try Data(#"{"serverURL":"https://id.example.com"}"#.utf8).write(to: file)
            #expect(try LatchClientConfiguration.load(from: file).dpop)
        }
    }

    @Test("dpop.requireNonce: the first proof is retried once with the server's nonce; later ones carry the latest nonce")
    func nonces() async throws {
        try await LiveLatch.run(configure: { $0.dpopRequireNonce = true }) { latch in
            let transport = RecordingTransport()
            let client = try latch.device(transport: transport)
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            let tokens = try await client.signInWithKey()
            #expect(tokens.isDPoPBound)
            #expect(transport.count("/oauth2/token") == 2, "use_dpop_nonce, then the retry")
            // Token answers carry a fresh nonce: no more round trips.
            _ = try await client.userInfo()
            #expect(transport.count("/oauth2/userinfo") == 1)
            _ = try await client.refreshTokens()
            #expect(transport.count("/oauth2/token") == 3)
            // A nonce the server no longer takes: one use_dpop_nonce answer, one retry.
            await client.rememberDPoPNonce("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", for: latch.url)
            _ = try await client.userInfo()
            #expect(transport.count("/oauth2/userinfo") == 3)
            await client.rememberDPoPNonce("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", for: latch.url)
            let (_, response) = try await client.authorizedData(for: URLRequest(url: latch.url.appendingPathComponent("v1/me")))
            #expect(response.statusCode == 200)
            // Only one retry: a server that keeps refusing gets its answer through.
            await client.rememberDPoPNonce("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", for: latch.url)
            _ = try await client.refreshTokens()
        }
    }

    @Test("Attested DPoP: a test-key device signs in bound to its device key (amr swk); a federated sign-in is refused")
    func attested() async throws {
        try await LiveLatch.run { latch in
            let patched = try await Self.admin(latch, "PATCH", "admin/v1/clients/default", body: AdminClientPatch(dpop: "required", dpopAttested: true))
            try #require(patched.status == 200, "\(String(decoding: patched.body, as: UTF8.self))")
            let store = InMemoryKeyStore()
            let client = try UserClient(configuration: latch.configuration(), keyStore: store)
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            let tokens = try await client.signInWithKey()
            #expect(try Self.jkt(tokens.accessToken) == (try Self.deviceKey(store)).publicKey.thumbprint)
            #expect(await client.tokenBinding()?.isDeviceKey == true)
            let amr = try #require(try await client.userClaim("amr")?.arrayValue)
            #expect(amr.contains("swk"))
            _ = try await client.refreshTokens()
            _ = try await client.userInfo()

            let federated = try latch.device()
            try await federated.registerWithAuthenticationProvider(try latch.federated())
            await #expect(throws: UserClientError.server(code: "invalid_dpop_proof", message: nil)) {
                try await federated.signInWithAuthenticationProvider(try latch.federated())
            }
            // Without DPoP the required policy refuses as well.
            let bearer = try UserClient(configuration: LatchClientConfiguration(serverURL: latch.url, dpop: false), keyStore: InMemoryKeyStore())
            await #expect(throws: UserClientError.server(code: "invalid_dpop_proof", message: nil)) {
                try await bearer.signInWithAuthenticationProvider(try latch.federated())
            }
        }
    }

    @Test("authorizedRequest: DPoP scheme and a proof with ath that DPoP.verify accepts; the token is refreshed first when it expires")
    func authorizedRequestForBackends() async throws {
        try await LiveLatch.run { latch in
            let clock = MovableClock()
            let client = try latch.device(clock: clock.now)
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            let first = try await client.signInWithKey()
            let api = try #require(URL(string: "https://api.example.com/orders?id=7"))
            var request = URLRequest(url: api)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            await client.rememberDPoPNonce("backend-nonce-1", for: api)

            let authorized = try await client.authorizedRequest(request)
            #expect(authorized.value(forHTTPHeaderField: "Authorization") == "DPoP \(first.accessToken)")
            #expect(authorized.value(forHTTPHeaderField: "Content-Type") == "application/json")
            let proof = try #require(authorized.value(forHTTPHeaderField: "DPoP"))
            var expected = DPoP.Expectations(
                method: "POST", url: "https://api.example.com/orders", accessToken: first.accessToken, now: Int64(clock.now().timeIntervalSince1970))
            expected.nonce = DPoP.NonceRule(required: true, isValid: { $0 == "backend-nonce-1" })
            let verified = try DPoP.verify(proof, expected)
            #expect(verified.thumbprint == (try Self.jkt(first.accessToken)))
            #expect(try ParsedJWS(proof).claims["ath"]?.stringValue == DPoP.accessTokenHash(first.accessToken))
            // Another server's nonce stays its own; every proof has its own jti.
            let other = try await client.authorizationHeaders(method: "GET", url: try #require(URL(string: "https://other.example.com/x")))
            let otherProof = try ParsedJWS(try #require(other["DPoP"]))
            #expect(otherProof.claims["nonce"] == nil)
            #expect(otherProof.claims["jti"] != (try ParsedJWS(proof).claims["jti"]))
            // A wrong method or URL is refused by the backend's check.
            #expect(throws: DPoP.Failure.self) {
                try DPoP.verify(proof, DPoP.Expectations(method: "GET", url: "https://api.example.com/orders", accessToken: first.accessToken, now: expected.now))
            }

            // Within a minute of expiry: refreshed first (the server's clock moves with the device's).
            latch.clock.advance(by: 3600 - 30)
            clock.advance(3600 - 30)
            let later = try await client.authorizedRequest(request)
            let token = try #require(later.value(forHTTPHeaderField: "Authorization")?.dropFirst("DPoP ".count))
            #expect(String(token) != first.accessToken)
            expected.accessToken = String(token)
            expected.now = Int64(clock.now().timeIntervalSince1970)
            #expect(try DPoP.verify(try #require(later.value(forHTTPHeaderField: "DPoP")), expected).thumbprint == verified.thumbprint)
        }
    }

    @Test("A device clock ten minutes behind: the refused proof's Date teaches the server's time, and the retry succeeds")
    func clockSkew() async throws {
        try await LiveLatch.run { latch in
            let transport = RecordingTransport()
            let clock = MovableClock()
            clock.advance(-600)
            let client = try latch.device(transport: transport, clock: clock.now)
            // (A federated sign-in: the backend's JWT carries the backend's time, not the device's.)
            try await client.registerWithAuthenticationProvider(try latch.federated())
            #expect(try await client.signInWithAuthenticationProvider(try latch.federated()).isDPoPBound)
            #expect(transport.count("/oauth2/token") == 2, "refused (iat too old), then the retry on the server's clock")
            _ = try await client.userInfo()
            _ = try await client.refreshTokens()
            #expect(transport.count("/oauth2/userinfo") == 1 && transport.count("/oauth2/token") == 3)
        }
    }
}
