import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// Issuer login over HTTP: login issuers, multi-issuer and multi-consumer login, adding tokens, the login validity
/// and sensitive window, logout and logout-all, and introspection.
@Suite("Issuer login over HTTP")
struct IssuerLoginFlowTests {
    static let bankKey = try! PrivateKey.generate(.ES256)
    static let cardKey = try! PrivateKey.generate(.ES384)
    static let otherKey = try! PrivateKey.generate(.ES256)
    static let bankAudience = "https://latch.test/issuers/bank"
    static let cardAudience = "https://latch.test/issuers/card"

    /// Registers the login issuers `bank` (ES256, scopes `payments`) and `card` (ES384).
    static func addIssuers(_ client: Client) async throws {
        let bank = AdminLoginIssuerRequest(
            issuerId: "bank", audience: bankAudience,
            keys: [LoginIssuerKey(kid: "b1", algorithm: "ES256", publicKey: bankKey.publicKey.pemRepresentation)], allowedScopes: ["payments"])
        let card = AdminLoginIssuerRequest(
            issuerId: "card", audience: cardAudience,
            keys: [LoginIssuerKey(kid: "c1", algorithm: "ES384", publicKey: cardKey.publicKey.pemRepresentation)])
        for request in [bank, card] {
            let reply = try await client.admin(.post, "/admin/v1/login-issuers", request)
            #expect(reply.status == .created, "\(String(decoding: reply.body, as: UTF8.self))")
        }
    }

    static func bankToken(_ client: Client, _ consumers: [String] = ["c-1"], jti: String = UUID().uuidString, extra: [String: JSONValue] = [:])
        throws -> String
    {
        try Assertions.issuerToken(
            issuer: "bank", keyID: "b1", consumers: consumers, audience: bankAudience, now: client.deployment.now, jti: jti, extra: extra
        ).sign(with: bankKey)
    }

    static func cardToken(_ client: Client, _ consumers: [String] = ["k-9"]) throws -> String {
        try Assertions.issuerToken(issuer: "card", keyID: "c1", consumers: consumers, audience: cardAudience, now: client.deployment.now)
            .sign(with: cardKey)
    }

    /// A login request with `tokens`; with `bearer`, an add to that session.
    static func login(_ client: Client, _ tokens: [String], bearer: String? = nil, clientID: String? = nil) async throws -> Reply {
        var parameters = [("grant_type", GrantType.issuerLogin)] + tokens.map { ("issuer_token", $0) }
        if let clientID { parameters.append(("client_id", clientID)) }
        let body = parameters.map { "\($0.0.formEscaped)=\($0.1.formEscaped)" }.joined(separator: "&")
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        return try await client.send(.post, "/oauth2/token", headers: headers, body: body)
    }

    static func claims(_ jwt: String) throws -> [String: JSONValue] {
        try ParsedJWS(jwt).claims
    }

    static func consumers(_ claims: [String: JSONValue]) -> [ConsumerPair] {
        claims["consumers"].flatMap(ConsumerPair.pairs) ?? []
    }

    @Test("Several tokens of several issuers log in one session holding every (issuer, consumer) pair; the principal is stable")
    func multiIssuerLogin() async throws {
        try await Deployment.make().run { client in
            try await Self.addIssuers(client)
            let reply = try await Self.login(client, [try Self.bankToken(client, ["c-1", "c-2"]), try Self.cardToken(client)])
            #expect(reply.status == .ok, "\(String(decoding: reply.body, as: UTF8.self))")
            let tokens = try reply.decode(TokenResponse.self)
            let idClaims = try Self.claims(tokens.idToken)
            let accessClaims = try Self.claims(tokens.accessToken)
            let expected = [
                ConsumerPair(issuer: "bank", consumer: "c-1"), ConsumerPair(issuer: "bank", consumer: "c-2"),
                ConsumerPair(issuer: "card", consumer: "k-9"),
            ]
            #expect(Self.consumers(idClaims) == expected)
            #expect(Self.consumers(accessClaims) == expected)
            #expect(idClaims["auth_time"]?.intValue == client.deployment.now)
            #expect(idClaims["amr"] == .array([.string("issuer")]))
            #expect(idClaims["username"]?.stringValue == "c-1")
            let principal = try #require(idClaims["sub"]?.stringValue)

            // The status endpoint lists the pairs from the store.
            let status = try await client.get("/v1/me/login-status", bearer: tokens.accessToken).decode(LoginStatus.self)
            #expect(status.consumers.map { ConsumerPair(issuer: $0.issuer, consumer: $0.consumer) }.sorted() == expected)
            #expect(status.loginAge == 0 && status.sensitiveAllowed && status.sensitiveMaxAge == 300)
            #expect(status.expiresAt == client.deployment.now + 3600)

            // A later login with the same first pair is the same principal; another first pair is another one.
            let again = try await Self.login(client, [try Self.bankToken(client, ["c-1"])]).decode(TokenResponse.self)
            #expect(try Self.claims(again.idToken)["sub"]?.stringValue == principal)
            let other = try await Self.login(client, [try Self.cardToken(client, ["k-9"])]).decode(TokenResponse.self)
            #expect(try Self.claims(other.idToken)["sub"]?.stringValue != principal)
            #expect(try await client.deployment.count("users") == 2)

            // Refreshed tokens list the pairs too.
            let refreshed = try await client.refresh(tokens.refreshToken).decode(TokenResponse.self)
            #expect(Self.consumers(try Self.claims(refreshed.accessToken)) == expected)

            // Discovery names the grant and introspection.
            let discovery = try await client.get("/.well-known/openid-configuration").json
            #expect(discovery["grant_types_supported"]?.arrayValue?.contains(.string(GrantType.issuerLogin)) == true)
            #expect(discovery["introspection_endpoint"]?.stringValue == "https://latch.test/oauth2/introspect")
        }
    }

    @Test("A bad token anywhere fails the whole login, named by its index, and consumes nothing")
    func badTokens() async throws {
        try await Deployment.make().run { client in
            try await Self.addIssuers(client)
            let now = client.deployment.now
            func bank(_ mutate: (inout JWTBuilder) -> Void, key: PrivateKey = Self.bankKey) throws -> String {
                var builder = Assertions.issuerToken(issuer: "bank", keyID: "b1", consumers: ["c-5"], audience: Self.bankAudience, now: now)
                mutate(&builder)
                return try builder.sign(with: key)
            }
            let used = try Self.bankToken(client, ["c-7"])
            #expect(try await Self.login(client, [used]).status == .ok)
            let sessionsBefore = try await client.deployment.count("sessions")
            let cases: [(String, String)] = [
                ("expired", try bank { $0.claims["iat"] = .int(now - 400); $0.claims["exp"] = .int(now - 100) }),
                ("future", try bank { $0.claims["iat"] = .int(now + 600); $0.claims["exp"] = .int(now + 700) }),
                ("long-lived", try bank { $0.claims["exp"] = .int(now + 301) }),
                ("replayed", used),
                ("wrong audience", try bank { $0.claims["aud"] = .string(Self.cardAudience) }),
                ("unknown issuer", try bank { $0.claims["iss"] = .string("nobody") }),
                ("issuer of another key", try bank { $0.claims["iss"] = .string("card") }),
                ("unknown kid", try bank { $0.header["kid"] = .string("b2") }),
                ("foreign key", try bank({ _ in }, key: Self.otherKey)),
                ("alg mismatch", try bank { $0.header["alg"] = .string("RS256") }),
                ("alg none", Assertions.issuerToken(issuer: "bank", keyID: "b1", consumers: ["c-5"], audience: Self.bankAudience, now: now).with(alg: "none").unsigned()),
                ("empty sub", try bank { $0.claims["sub"] = .string("") }),
                ("double space in sub", try bank { $0.claims["sub"] = .string("c-1  c-2") }),
                ("huge sub", try bank { $0.claims["sub"] = .string((0..<17).map { "c-\($0)" }.joined(separator: " ")) }),
                ("long consumer", try bank { $0.claims["sub"] = .string(String(repeating: "x", count: 129)) }),
                ("control character", try bank { $0.claims["sub"] = .string("c-1\u{7}") }),
                ("repeated consumer", try bank { $0.claims["sub"] = .string("c-1 c-1") }),
                ("scope not allowed", try bank { $0.claims["scope"] = .string("payments admin") }),
                ("no jti", try bank { $0.claims["jti"] = nil }),
                ("milliseconds", try bank { $0.claims["exp"] = .int((now + 60) * 1000) }),
            ]
            for (name, bad) in cases {
                let good = try Self.bankToken(client, ["c-1"])
                let reply = try await Self.login(client, [good, bad])
                #expect(reply.status == .badRequest, "\(name)")
                #expect(reply.code == "invalid_grant", "\(name)")
                #expect(reply.json["tokenIndex"]?.intValue == 1, "\(name): \(String(decoding: reply.body, as: UTF8.self))")
                // Nothing consumed: the good token still logs in alone.
                #expect(try await Self.login(client, [good]).status == .ok, "\(name): the good token was consumed")
            }
            #expect(try await client.deployment.count("sessions") == sessionsBefore + Int64(cases.count))

            // An allowed scope is fine; duplicates and too many tokens are refused.
            #expect(try await Self.login(client, [try bank { $0.claims["scope"] = .string("payments") }]).status == .ok)
            let token = try Self.bankToken(client)
            let twice = try await Self.login(client, [token, token])
            #expect(twice.code == "invalid_grant" && twice.json["tokenIndex"]?.intValue == 1)
            let sameJTI = try await Self.login(client, [try Self.bankToken(client, ["c-1"], jti: "j"), try Self.bankToken(client, ["c-2"], jti: "j")])
            #expect(sameJTI.code == "invalid_grant" && sameJTI.json["tokenIndex"]?.intValue == 1)
            let many = try (0..<17).map { _ in try Self.bankToken(client) }
            #expect(try await Self.login(client, many).code == "invalid_request")
            #expect(try await Self.login(client, []).code == "invalid_request")
            let empty = try await client.postForm("/oauth2/token", [("grant_type", GrantType.issuerLogin), ("issuer_token", "")])
            #expect(empty.code == "invalid_request")
            // Other parameters still may not repeat.
            let repeated = try await client.postForm(
                "/oauth2/token", [("grant_type", GrantType.issuerLogin), ("issuer_token", token), ("scope", "openid"), ("scope", "openid")])
            #expect(repeated.code == "invalid_request")
        }
    }

    @Test("Adding tokens keeps the session, adds pairs and restarts the sensitive clock; the validity ends refresh")
    func addAndValidity() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            try await Self.addIssuers(client)
            let first = try await Self.login(client, [try Self.bankToken(client)]).decode(TokenResponse.self)
            let sid = try Self.claims(first.idToken)["sid"]
            deployment.clock.advance(by: 301)
            let tooOld = try await client.get("/v1/me/login-status?sensitive=true", bearer: first.accessToken)
            #expect(tooOld.status == .unauthorized && tooOld.code == "insufficient_user_authentication")
            #expect(tooOld.headers[.wwwAuthenticate]?.contains("max_age=300") == true)
            // Latch's own sensitive endpoints apply the same window to issuer logins.
            let delete = try await client.send(.delete, "/v1/me", headers: [.authorization: "Bearer \(first.accessToken)"])
            #expect(delete.code == "insufficient_user_authentication")

            let added = try await Self.login(client, [try Self.cardToken(client)], bearer: first.accessToken)
            #expect(added.status == .ok, "\(String(decoding: added.body, as: UTF8.self))")
            let tokens = try added.decode(TokenResponse.self)
            let claims = try Self.claims(tokens.idToken)
            #expect(claims["sid"] == sid)
            #expect(claims["auth_time"]?.intValue == deployment.now)
            #expect(Self.consumers(claims) == [ConsumerPair(issuer: "bank", consumer: "c-1"), ConsumerPair(issuer: "card", consumer: "k-9")])
            #expect(try await client.get("/v1/me/login-status?sensitive=true", bearer: tokens.accessToken).status == .ok)
            // Adding a pair the session holds is harmless; adding to a non-issuer session is refused.
            #expect(try await Self.login(client, [try Self.bankToken(client)], bearer: tokens.accessToken).status == .ok)
            try await client.addIssuer()
            let federated = try await client.registerFederated()
            _ = federated
            let signedIn = try await client.signInFederated()
            #expect(try await Self.login(client, [try Self.bankToken(client)], bearer: signedIn.accessToken).code == "invalid_grant")
            // A wrong bearer is an invalid token, not a fresh login.
            #expect(try await Self.login(client, [try Self.bankToken(client)], bearer: "nope").code == "invalid_token")

            // The login lasts an hour from the latest login: refresh works until then, not after.
            deployment.clock.advance(by: 3599)
            let refreshed = try await client.refresh(tokens.refreshToken)
            #expect(refreshed.status == .ok)
            deployment.clock.advance(by: 2)
            #expect(try await client.refresh(try refreshed.decode(TokenResponse.self).refreshToken).code == "invalid_grant")
        }
    }

    @Test("With login.refreshBeyondValidity, an issuer login refreshes past its validity")
    func refreshBeyondValidity() async throws {
        let deployment = try await Deployment.make { $0.issuerLogin.refreshBeyondValidity = true; $0.issuerLogin.validity = 60 }
        try await deployment.run { client in
            try await Self.addIssuers(client)
            let tokens = try await Self.login(client, [try Self.bankToken(client)]).decode(TokenResponse.self)
            deployment.clock.advance(by: 120)
            #expect(try await client.refresh(tokens.refreshToken).status == .ok)
        }
    }

    @Test("logout ends this session; logout-all every session holding a pair of this login; introspection follows at once")
    func logoutAndIntrospection() async throws {
        try await Deployment.make().run { client in
            try await Self.addIssuers(client)
            let server = try await client.admin(.post, "/admin/v1/resource-servers", AdminResourceServerRequest(name: "payments-api"))
                .decode(AdminResourceServerCreated.self)
            func introspect(_ token: String, maxAge: Int? = nil, secret: String? = nil) async throws -> Reply {
                let credential = Data("\(server.clientId):\(secret ?? server.clientSecret)".utf8).base64EncodedString()
                var body = "token=\(token.formEscaped)"
                if let maxAge { body += "&max_age=\(maxAge)" }
                return try await client.send(
                    .post, "/oauth2/introspect",
                    headers: [.authorization: "Basic \(credential)", .contentType: "application/x-www-form-urlencoded"], body: body)
            }
            let a = try await Self.login(client, [try Self.bankToken(client, ["c-1", "c-2"]), try Self.cardToken(client)])
                .decode(TokenResponse.self)
            let b = try await Self.login(client, [try Self.cardToken(client, ["k-9"])]).decode(TokenResponse.self)
            let c = try await Self.login(client, [try Self.bankToken(client, ["c-3"])]).decode(TokenResponse.self)
            let d = try await Self.login(client, [try Self.bankToken(client, ["c-3"])]).decode(TokenResponse.self)

            // Introspection: credentials, an active token with its pairs, an inactive one, RFC 9470 max_age.
            let wrong = try await introspect(a.accessToken, secret: "lrss_wrong")
            #expect(wrong.status == .unauthorized && wrong.code == "invalid_client")
            #expect(wrong.headers[.wwwAuthenticate]?.hasPrefix("Basic") == true)
            let noAuth = try await client.postForm("/oauth2/introspect", [("token", a.accessToken)])
            #expect(noAuth.status == .unauthorized)
            let active = try await introspect(a.accessToken).json
            #expect(active["active"] == .bool(true))
            #expect(active["consumers"].flatMap(ConsumerPair.pairs)?.count == 3)
            #expect(active["auth_time"]?.intValue == client.deployment.now)
            #expect(active["error"] == nil)
            client.deployment.clock.advance(by: 10)
            let stepUp = try await introspect(a.accessToken, maxAge: 5).json
            #expect(stepUp["active"] == .bool(true) && stepUp["error"]?.stringValue == "insufficient_user_authentication")
            #expect(stepUp["max_age"]?.intValue == 5)
            #expect(try await introspect(a.refreshToken).json["active"] == .bool(true))
            #expect(try await introspect("garbage").json == .object(["active": .bool(false)]))

            // logout-all from A ends A and B (B shares card/k-9), not C or D.
            let revoked = try await client.postJSON("/v1/me/logout-all", [String: String](), bearer: a.accessToken).json
            #expect(revoked["revoked"]?.intValue == 2)
            #expect(try await client.get("/v1/me", bearer: a.accessToken).status == .unauthorized)
            #expect(try await client.get("/v1/me", bearer: b.accessToken).status == .unauthorized)
            #expect(try await introspect(a.accessToken).json["active"] == .bool(false))
            #expect(try await introspect(b.refreshToken).json["active"] == .bool(false))
            #expect(try await client.refresh(b.refreshToken).code == "invalid_grant")
            #expect(try await client.get("/v1/me", bearer: c.accessToken).status == .ok)

            // logout ends C alone.
            #expect(try await client.postJSON("/v1/me/logout", [String: String](), bearer: c.accessToken).json["revoked"]?.intValue == 1)
            #expect(try await introspect(c.accessToken).json["active"] == .bool(false))
            #expect(try await client.get("/v1/me", bearer: d.accessToken).status == .ok)

            // The admin ends every session of a consumer across devices.
            let admin = try await client.admin(.post, "/admin/v1/login-issuers/bank/consumers/c-3/logout-all").json
            #expect(admin["revoked"]?.intValue == 1)
            #expect(try await introspect(d.accessToken).json["active"] == .bool(false))

            // A deleted resource server's credential stops working.
            #expect(try await client.admin(.delete, "/admin/v1/resource-servers/\(server.clientId)").status == .noContent)
            #expect(try await introspect(d.accessToken).status == .unauthorized)
        }
    }

    @Test("Login issuers: the admin API checks what it is given")
    func adminValidation() async throws {
        try await Deployment.make().run { client in
            let key = LoginIssuerKey(kid: "k", algorithm: "ES256", publicKey: Self.bankKey.publicKey.pemRepresentation)
            func add(_ request: AdminLoginIssuerRequest) async throws -> Reply { try await client.admin(.post, "/admin/v1/login-issuers", request) }
            #expect(try await add(.init(issuerId: "x", audience: "a")).code == "invalid_input")
            #expect(try await add(.init(issuerId: "x", audience: "a", keys: [key], jwksURL: "https://x.test/jwks")).code == "invalid_input")
            #expect(try await add(.init(issuerId: "x", audience: "a", jwksURL: "http://x.test/jwks")).code == "invalid_input")
            #expect(try await add(.init(issuerId: "x", audience: "a", jwksURL: "ftp://x.test/jwks")).code == "invalid_input")
            #expect(
                try await add(.init(issuerId: "x", audience: "a", keys: [LoginIssuerKey(kid: "k", algorithm: "ES384", publicKey: key.publicKey)]))
                    .code == "invalid_public_key")
            #expect(try await add(.init(issuerId: "x", audience: "a", keys: [LoginIssuerKey(kid: "k", algorithm: "HS256", publicKey: "x")])).code == "invalid_public_key")
            #expect(try await add(.init(issuerId: "x", audience: "a", keys: [key], maxTokenLifetime: 3601)).code == "invalid_input")
            #expect(try await add(.init(issuerId: "x", audience: "a", keys: [key, key])).code == "invalid_input")
            #expect(try await add(.init(issuerId: "x\u{1}", audience: "a", keys: [key])).code == "invalid_input")
            #expect(try await client.deployment.count("login_issuers") == 0)
            let created = try await add(.init(issuerId: "x", audience: "a", keys: [key], allowedScopes: ["read"]))
            #expect(created.status == .created)
            let view = try created.decode(AdminLoginIssuer.self)
            #expect(view.maxTokenLifetime == 300 && view.allowedScopes == ["read"] && view.keys.map(\.kid) == ["k"] && !view.customFederation)
            #expect(try await add(.init(issuerId: "x", audience: "a", keys: [key])).status == .conflict)
            #expect(try await add(.init(issuerId: "y", audience: "a", jwksURL: "http://127.0.0.1:9/jwks")).status == .created)
            let list = try await client.admin(.get, "/admin/v1/login-issuers").decode(AdminLoginIssuerList.self)
            #expect(list.loginIssuers.map(\.issuerId) == ["x", "y"])
            #expect(try await client.admin(.delete, "/admin/v1/login-issuers/x").status == .noContent)
            #expect(try await client.admin(.delete, "/admin/v1/login-issuers/x").status == .notFound)
        }
    }

    @Test("A login issuer marked for custom federation signs registration and sign-in JWTs with its own keys; an unmarked one does not")
    func customFederation() async throws {
        try await Deployment.make().run { client in
            let key = LoginIssuerKey(kid: "b1", algorithm: "ES256", publicKey: Self.bankKey.publicKey.pemRepresentation)
            for (id, marked) in [("bank", true), ("plain", false)] {
                let request = AdminLoginIssuerRequest(issuerId: id, audience: "https://latch.test/\(id)", keys: [key], customFederation: marked)
                #expect(try await client.admin(.post, "/admin/v1/login-issuers", request).status == .created)
            }
            func assertion(_ issuer: String) throws -> String {
                try Assertions.federated(issuer: issuer, keyID: "b1", subject: "ann", audience: "https://latch.test/\(issuer)", now: client.deployment.now)
                    .sign(with: Self.bankKey)
            }
            let registered = try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: try assertion("bank")))
            #expect(registered.status == .created, "\(String(decoding: registered.body, as: UTF8.self))")
            #expect(try await client.token(assertion: try assertion("bank")).status == .ok)
            let refused = try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: try assertion("plain")))
            #expect(refused.code == "invalid_proof")
            #expect(try await client.token(assertion: try assertion("plain")).code == "invalid_grant")
        }
    }

    @Test("A JWKS issuer's keys are fetched over HTTP, cached, and fetched again for an unknown kid (rate-limited)")
    func jwksIssuer() async throws {
        let publisher = JWKSPublisher()
        let app = Application(router: publisher.router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { jwksClient in
            let url = "http://127.0.0.1:\(try #require(jwksClient.port))/jwks"
            let deployment = try await Deployment.make()
            try await deployment.run { client in
                let first = try PrivateKey.generate(.ES256)
                let second = try PrivateKey.generate(.RS256)
                publisher.publish([first.publicKey.jwk(kid: "one")])
                let reply = try await client.admin(
                    .post, "/admin/v1/login-issuers", AdminLoginIssuerRequest(issuerId: "idp", audience: "https://latch.test/idp", jwksURL: url))
                #expect(reply.status == .created)
                func token(_ key: PrivateKey, kid: String) throws -> String {
                    try Assertions.issuerToken(issuer: "idp", keyID: kid, consumers: ["u-1"], audience: "https://latch.test/idp", now: deployment.now)
                        .sign(with: key)
                }
                #expect(try await Self.login(client, [try token(first, kid: "one")]).status == .ok)
                #expect(try await Self.login(client, [try token(first, kid: "one")]).status == .ok)
                #expect(publisher.fetches == 1)
                // The issuer rotates: an unknown kid fetches again (not before 10 s since the last fetch).
                publisher.publish([first.publicKey.jwk(kid: "one"), second.publicKey.jwk(kid: "two")])
                let early = try await Self.login(client, [try token(second, kid: "two")])
                #expect(early.code == "invalid_grant" && early.json["tokenIndex"]?.intValue == 0)
                #expect(publisher.fetches == 1)
                deployment.clock.advance(by: 11)
                #expect(try await Self.login(client, [try token(second, kid: "two")]).status == .ok)
                #expect(publisher.fetches == 2)
                // Made-up kids cost at most one fetch per interval.
                for index in 0..<5 { _ = try await Self.login(client, [try token(second, kid: "made-up-\(index)")]) }
                #expect(publisher.fetches == 2)
                // A publisher that fails keeps the cached keys in use.
                publisher.fail = true
                deployment.clock.advance(by: 301)
                #expect(try await Self.login(client, [try token(first, kid: "one")]).status == .ok)
                #expect(publisher.fetches == 3)
            }
        }
    }
}

/// A live JWKS endpoint for tests: serves what the test publishes, counts fetches, and can fail.
final class JWKSPublisher: Sendable {
    private let state = Locked<(keys: [JSONWebKey], fetches: Int, fail: Bool)>(([], 0, false))

    func publish(_ keys: [JSONWebKey]) { state.withLock { $0.keys = keys } }
    var fetches: Int { state.withLock { $0.fetches } }
    var fail: Bool {
        get { state.withLock { $0.fail } }
        set { state.withLock { $0.fail = newValue } }
    }

    var router: Router<BasicRequestContext> {
        let router = Router()
        router.get("jwks") { _, _ -> Response in
            let (keys, fail) = self.state.withLock { state in
                state.fetches += 1
                return (state.keys, state.fail)
            }
            if fail { return Response(status: .internalServerError) }
            let body = try JSONEncoder().encode(JSONWebKeySet(keys: keys))
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        return router
    }
}

extension JWTBuilder {
    /// The same token with another `alg` header.
    func with(alg: String) -> JWTBuilder {
        var copy = self
        copy.header["alg"] = .string(alg)
        return copy
    }
}
