import Configuration
import Foundation
import HTTPTypes
import LatchApp
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
            let list = try await client.admin(.get, "/admin/v1/issuers").decode(AdminSignOnIssuerList.self)
            #expect(list.issuers.map(\.keyId) == ["k1", "k2"])
            #expect(list.issuers.map(\.algorithm) == ["RS256", "ES256"])
            #expect(try await client.admin(.delete, "/admin/v1/issuers/acme?keyId=k1").status == .noContent)
            #expect(try await client.admin(.get, "/admin/v1/issuers").decode(AdminSignOnIssuerList.self).issuers.map(\.keyId) == ["k2"])
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
            let stored = try await client.deployment.store.testRegistrationKey(id: "register_key")
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

    @Test("Revoking the token making the request needs force=true; without it 409 says why; with it, the token stops working")
    func selfRevocation() async throws {
        try await Deployment.make().run { client in
            let created = try await client.admin(.post, "/admin/v1/tokens", AdminTokenRequest(name: "ci")).decode(AdminTokenCreated.self)
            let headers: HTTPFields = [.authorization: "Bearer \(created.token)"]
            let refused = try await client.send(.delete, "/admin/v1/tokens/\(created.id)", headers: headers)
            #expect(refused.status == .conflict && refused.code == "conflict")
            #expect(refused.json["error_description"]?.stringValue?.contains("force=true") == true)
            #expect(try await client.send(.get, "/admin/v1/users", headers: headers).status == .ok)
            #expect(try await client.send(.delete, "/admin/v1/tokens/\(created.id)?force=true", headers: headers).status == .noContent)
            #expect(try await client.send(.get, "/admin/v1/users", headers: headers).code == "unauthorized")
        }
    }
}

@Suite("Rate limits")
struct RateLimitTests {
    @Test("Token buckets: a burst, then one request per refill interval; addresses are independent")
    func buckets() {
        let clock = Locked<Double>(0)
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
