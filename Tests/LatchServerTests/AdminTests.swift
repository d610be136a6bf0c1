import Configuration
import Foundation
import Synchronization
import HTTPTypes
import LatchCore
import LatchJOSE
import LatchModel
import LatchServer
import LatchSQLite
import LatchTesting
import Testing

@Suite("Admin API")
struct AdminTests {
    @Test("Issuers: add, list, delete one key, delete all")
    func issuers() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            try await client.addIssuer(keyID: "k2", key: TestKeys.p256)
            let list = try await client.admin(.get, "/admin/v1/issuers").decode(AdminIssuerList.self)
            #expect(list.issuers.map(\.keyId) == ["k1", "k2"])
            #expect(list.issuers.map(\.algorithm) == ["RS256", "ES256"])
            #expect(try await client.admin(.delete, "/admin/v1/issuers/acme?keyId=k1").status == .noContent)
            #expect(try await client.admin(.get, "/admin/v1/issuers").decode(AdminIssuerList.self).issuers.map(\.keyId) == ["k2"])
            #expect(try await client.admin(.delete, "/admin/v1/issuers/acme").status == .noContent)
            #expect(try await client.admin(.delete, "/admin/v1/issuers/acme").status == .notFound)
        }
    }

    @Test("Test keys: the private key is shown once; only the public key is kept; a revoked key registers no one")
    func testKeys() async throws {
        try await Deployment.make().run { client in
            let created = try await client.admin(.post, "/admin/v1/test-keys", AdminTestKeyRequest(keyId: "register_key")).decode(AdminTestKeyCreated.self)
            #expect(created.keyId == "register_key" && created.algorithm == "RS256" && created.privateKey.contains("PRIVATE KEY"))
            let listed = try await client.admin(.get, "/admin/v1/test-keys")
            #expect(!String(decoding: listed.body, as: UTF8.self).contains("PRIVATE"))
            #expect(try listed.decode(AdminTestKeyList.self).testKeys.map(\.keyId) == ["register_key"])
            let stored = try await client.deployment.store.testKey(id: "register_key")
            #expect(stored?.key.derRepresentation == (try PrivateKey(pem: created.privateKey)).publicKey.derRepresentation)
            #expect(try await client.admin(.delete, "/admin/v1/test-keys/register_key").status == .noContent)
            let answer = try Assertions.testRegistration(keyID: "register_key", subject: "u1", now: client.deployment.now).sign(with: try PrivateKey(pem: created.privateKey))
            let reply = try await client.postJSON(
                "/v1/registrations",
                RegistrationRequest(challengeType: .test, answer: answer, publicKey: RegistrationPublicKey(keyId: "d", algorithm: "ES256", publicKey: TestKeys.p256.publicKey.pemRepresentation)))
            #expect(reply.code == "invalid_proof")
        }
    }

    @Test("Users: paging, get, sign-out, delete")
    func users() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            var ids: [String] = []
            for index in 0..<5 { ids.append(try await client.registerFederated(subject: "user\(index)").userId) }
            var seen: [String] = []
            var cursor: String?
            repeat {
                let path = "/admin/v1/users?limit=2" + (cursor.map { "&after=\($0)" } ?? "")
                let page = try await client.admin(.get, path).decode(AdminUserPage.self)
                seen += page.users.map(\.id)
                cursor = page.nextCursor
            } while cursor != nil
            #expect(seen == ids.sorted())
            let user = try await client.admin(.get, "/admin/v1/users/\(ids[0])").decode(AdminUser.self)
            #expect(user.username == "user0" && user.kind == "FSSO" && user.issuer == "acme")

            let tokens = try await client.signInFederated(subject: "user0")
            let signedOut = try await client.admin(.post, "/admin/v1/users/\(ids[0])/sign-out")
            #expect(signedOut.json["revoked"] == 1)
            #expect(try await client.get("/oauth2/userinfo", bearer: tokens.accessToken).status == .unauthorized)
            #expect(try await client.admin(.delete, "/admin/v1/users/\(ids[0])").status == .noContent)
            #expect(try await client.admin(.get, "/admin/v1/users/\(ids[0])").status == .notFound)
        }
    }

    @Test("Clients: add, list, delete ends their sessions; the default client stays")
    func clients() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            _ = try await client.admin(.post, "/admin/v1/clients", AdminClientRequest(clientId: "android", name: "Android"))
            let list = try await client.admin(.get, "/admin/v1/clients").decode(AdminClientList.self)
            #expect(list.clients.map(\.clientId) == ["android", "default"])
            let tokens = try await client.token(assertion: try client.federatedAssertion(), clientID: "android").decode(TokenResponse.self)
            #expect(try await client.admin(.delete, "/admin/v1/clients/android").status == .noContent)
            #expect(try await client.refresh(tokens.refreshToken).code != nil)
            #expect(try await client.admin(.delete, "/admin/v1/clients/default").code == "conflict")
        }
    }
}

@Suite("Admin tokens")
struct AdminTokenTests {
    @Test("Create (shown once), use, list without secrets, revoke (not the last one)")
    func lifecycle() async throws {
        try await Deployment.make().run { client in
            let created = try await client.admin(.post, "/admin/v1/tokens", AdminTokenRequest(name: "ci")).decode(AdminTokenCreated.self)
            #expect(created.token.hasPrefix("lat_") && created.name == "ci")
            #expect(try await client.send(.get, "/admin/v1/users", headers: [.authorization: "Bearer \(created.token)"]).status == .ok)
            let listed = try await client.admin(.get, "/admin/v1/tokens")
            #expect(!String(decoding: listed.body, as: UTF8.self).contains(created.token))
            #expect(try listed.decode(AdminTokenList.self).tokens.map(\.id).sorted() == [created.id, "env"].sorted())
            #expect(try await client.admin(.delete, "/admin/v1/tokens/\(created.id)").status == .noContent)
            #expect(try await client.send(.get, "/admin/v1/users", headers: [.authorization: "Bearer \(created.token)"]).code == "unauthorized")
            #expect(try await client.admin(.delete, "/admin/v1/tokens/env").code == "conflict")
            #expect(try await client.admin(.delete, "/admin/v1/tokens/nope").code == "not_found")
        }
    }

    @Test("Changing LATCH_ADMIN_TOKEN replaces the old environment token instead of adding one")
    func environmentRotation() async throws {
        let store = InMemoryAdminTokens()
        let clock = TestClock()
        let first = AdminAuthenticator(store: store, clock: clock.clock)
        _ = try await first.bootstrap(configured: "first-token-0123456789", random: .system)
        #expect(try await first.isAdmin("first-token-0123456789"))
        let second = AdminAuthenticator(store: store, clock: clock.clock)
        _ = try await second.bootstrap(configured: "second-token-0123456789", random: .system)
        #expect(try await second.isAdmin("second-token-0123456789"))
        #expect(try await second.isAdmin("first-token-0123456789") == false)
        #expect(try await store.adminTokens().count == 1)
    }
}

/// A minimal admin-token store for the authenticator's unit tests.
actor InMemoryAdminTokens: AdminTokenStore {
    var tokens: [String: AdminTokenRecord] = [:]
    func adminTokens() -> [AdminTokenRecord] { tokens.values.sorted { $0.id < $1.id } }
    func putAdminToken(_ token: AdminTokenRecord) { tokens[token.id] = token }
    func deleteAdminToken(id: String) -> Bool { tokens.removeValue(forKey: id) != nil }
}

@Suite("Rate limits")
struct RateLimitTests {
    @Test("Token buckets: a burst, then one request per refill interval; addresses are independent")
    func buckets() {
        let clock = Mutex<Double>(0)
        let limiter = RateLimiter(perMinute: 60, burst: 3, now: { clock.withLock { $0 } })
        #expect((0..<3).map { _ in limiter.acquire("a") } == [nil, nil, nil])
        #expect(limiter.acquire("a") == 1)
        #expect(limiter.acquire("b") == nil)
        clock.withLock { $0 += 1 }
        #expect(limiter.acquire("a") == nil)
        #expect(limiter.acquire("a") == 1)
        #expect(RateLimiter(perMinute: 0).acquire("a") == nil)
    }

    @Test("The table of addresses stays bounded")
    func bounded() {
        let limiter = RateLimiter(perMinute: 60, maximumClients: 100)
        for index in 0..<1000 { _ = limiter.acquire("10.0.\(index / 256).\(index % 256)") }
        #expect(limiter.acquire("late") == nil)
    }

    @Test("Over the limit the token endpoint answers 429 rate_limited with Retry-After; per forwarded address when trusted")
    func http() async throws {
        try await Deployment.make({ $0.rateLimitPerMinute = 12; $0.trustForwardedFor = true }).run { client in
            let request = { (address: String) in
                try await client.send(
                    .post, "/oauth2/token", headers: [.contentType: "application/x-www-form-urlencoded", .init("X-Forwarded-For")!: address],
                    body: "grant_type=refresh_token&refresh_token=lrt_x")
            }
            var statuses: [Int] = []
            for _ in 0..<3 { statuses.append(Int(try await request("203.0.113.7").status.code)) }
            #expect(statuses == [400, 400, 429])
            let limited = try await request("203.0.113.7")
            #expect(limited.code == "rate_limited" && limited.headers[.retryAfter] != nil)
            #expect(try await request("198.51.100.1").status == .badRequest)
            // Signed-in and admin endpoints are not limited this way.
            #expect(try await client.admin(.get, "/admin/v1/users").status == .ok)
        }
    }
}

@Suite("Configuration")
struct ConfigurationTests {
    @Test("Defaults")
    func defaults() async throws {
        let configuration = try LatchConfiguration(reader: try await LatchConfiguration.reader(overrides: [:], environment: [:], configFile: nil))
        #expect(configuration.host == "127.0.0.1" && configuration.port == 8080 && configuration.dataDirectory == "./latch-data")
        #expect(configuration.sensitiveMaxAge == 300 && configuration.tokens.refreshGrace == 10)
        #expect(configuration.issuerURL == "http://127.0.0.1:8080")
        #expect(configuration.assertions.audience == "identity-service")
        #expect(configuration.registration.testKeysEnabled)
    }

    @Test("Environment variables are LATCH_ + the key; flags win over them; the JSON file is weakest")
    func layering() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.path + "/latch.json"
        try Data(#"{"http": {"port": 7000}, "tokens": {"refreshGrace": 3}, "registration": {"testKeys": false}}"#.utf8).write(to: URL(fileURLWithPath: file))
        let configuration = try LatchConfiguration(
            reader: try await LatchConfiguration.reader(
                overrides: ["http.port": .int(9090)],
                environment: ["LATCH_SENSITIVE_MAX_AGE_SECONDS": "45", "LATCH_ADMIN_TOKEN": "from-env-0123456789", "LATCH_HTTP_PORT": "1234", "LATCH_TOKENS_REFRESH_GRACE": "5"],
                configFile: file))
        #expect(configuration.port == 9090)
        #expect(configuration.sensitiveMaxAge == 45)
        #expect(configuration.adminToken == "from-env-0123456789")
        #expect(configuration.tokens.refreshGrace == 5)
        #expect(configuration.registration.testKeysEnabled == false)
    }

    @Test("Bad values are refused by name", arguments: [
        ["LATCH_KEYS_ALGORITHM": "HS256"], ["LATCH_SENSITIVE_MAX_AGE_SECONDS": "-1"], ["LATCH_LOG_LEVEL": "loud"],
        ["LATCH_KEYS_ENCRYPTION_KEY": "c2hvcnQ="], ["LATCH_ISSUER": "not a url"],
    ])
    func badValues(environment: [String: String]) async throws {
        #expect(throws: LatchError.self) {
            _ = try LatchConfiguration(reader: ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: ["latch"])))
        }
    }
}
