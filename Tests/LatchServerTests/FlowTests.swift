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

@Suite("HTTP flows")
struct FlowTests {
    @Test("Discovery names the endpoints; the JWKS publishes every key with kid and alg")
    func discovery() async throws {
        try await Deployment.make().run { client in
            let metadata = try await client.get("/.well-known/openid-configuration")
            #expect(metadata.status == .ok)
            #expect(metadata.json["issuer"] == "https://latch.test")
            #expect(metadata.json["jwks_uri"] == "https://latch.test/.well-known/jwks.json")
            #expect(metadata.json["token_endpoint"] == "https://latch.test/oauth2/token")
            let jwks = try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self)
            #expect(jwks.keys.count == 1)
            #expect(jwks.keys.allSatisfy { $0.kid != nil && $0.alg == "ES256" && $0.use == "sig" })
        }
    }

    @Test("Custom federated: register, sign in, tokens verify against the JWKS with the OIDC claims")
    func federatedFlow() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            let registered = try await client.registerFederated()
            #expect(registered.username == "alice")
            let tokens = try await client.signInFederated()
            #expect(tokens.tokenType == "Bearer" && tokens.expiresIn == 3600 && tokens.refreshExpiresIn == 30 * 24 * 3600)
            let jwks = try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self)
            let id = try verifyAgainstJWKS(tokens.idToken, jwks: jwks)
            let now = client.deployment.now
            #expect(id["iss"] == "https://latch.test")
            #expect(id["sub"] == .string(registered.userId))
            #expect(id["aud"] == "default")
            #expect(id["iat"] == .int(now) && id["exp"] == .int(now + 3600) && id["auth_time"] == .int(now))
            #expect(id["amr"] == ["fed"])
            #expect(id["username"] == "alice")
            #expect(id["custom:entitlementsSet"] == "gold")
            let access = try verifyAgainstJWKS(tokens.accessToken, jwks: jwks)
            #expect(try ParsedJWS(tokens.accessToken).header["typ"] == "at+jwt")
            #expect(access["client_id"] == "default" && access["scope"] == "openid" && access["sid"] == id["sid"])
            let parts = tokens.refreshToken.dropFirst(4).split(separator: ".")
            #expect(tokens.refreshToken.hasPrefix("lrt_") && parts.count == 3 && id["sid"] == .string(String(parts[0])) && parts[1] == "0")
            #expect(Base64URL.decode(parts[2])?.count == 32)

            let info = try await client.get("/oauth2/userinfo", bearer: tokens.accessToken)
            #expect(info.status == .ok)
            #expect(info.json["sub"] == .string(registered.userId) && info.json["custom:entitlementsSet"] == "gold")
            let me = try await client.get("/v1/me", bearer: tokens.accessToken)
            #expect(me.json["username"] == "alice")
        }
    }

    @Test("The token answer is not cached, a bad one is RFC 6749 JSON, and both end with a newline")
    func tokenHeaders() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let reply = try await client.token(assertion: try client.federatedAssertion())
            #expect(reply.headers[.cacheControl] == "no-store")
            let bad = try await client.token(assertion: "x.y.z")
            #expect(bad.status == .badRequest && bad.code == "invalid_grant" && bad.json["error_description"]?.stringValue != nil)
            #expect(bad.headers[.cacheControl] == "no-store")
            // JSON answers end with a newline (a terminal's prompt starts on its own line).
            let jwks = try await client.get("/.well-known/jwks.json")
            #expect([reply.body.last, bad.body.last, jwks.body.last] == [10, 10, 10])
        }
    }

    @Test("registrationId is an idempotency key: same proof or a fresh proof of the same identity → same user; another identity → 409")
    func idempotentRegistration() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            let answer = try client.federatedAssertion()
            let request = RegistrationRequest(challengeType: .fsso, answer: answer, registrationId: "reg-1")
            let first = try await client.postJSON("/v1/registrations", request)
            let second = try await client.postJSON("/v1/registrations", request)
            #expect(first.status == .created && second.status == .created)
            #expect(try first.decode(RegistrationResponse.self) == second.decode(RegistrationResponse.self))
            let other = try await client.postJSON(
                "/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: try client.federatedAssertion(subject: "bob"), registrationId: "reg-1"))
            #expect(other.status == .conflict && other.code == "registration_conflict")
            #expect(try await client.deployment.count("users") == 1)
            // A relaunched app retries with a newly minted token for the same identity: the same user.
            let retried = try await client.postJSON(
                "/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: try client.federatedAssertion(), registrationId: "reg-1"))
            #expect(retried.status == .created)
            #expect(try retried.decode(RegistrationResponse.self) == first.decode(RegistrationResponse.self))
            // Without the id, a second registration of the same identity is refused.
            let again = try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: try client.federatedAssertion()))
            #expect(again.status == .conflict && again.code == "already_registered")
        }
    }

    @Test("Signing in a user who never registered fails with invalid_grant; a replayed assertion too")
    func unregisteredAndReplay() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            let unknown = try await client.token(assertion: try client.federatedAssertion(subject: "nobody"))
            #expect(unknown.status == .badRequest && unknown.code == "invalid_grant")
            _ = try await client.registerFederated()
            let assertion = try client.federatedAssertion()
            #expect(try await client.token(assertion: assertion).status == .ok)
            let replay = try await client.token(assertion: assertion)
            #expect(replay.code == "invalid_grant")
            #expect(try await client.deployment.count("sessions") == 1)
        }
    }

    @Test("A federated identity is bound to its issuer: another issuer's same sub is not that user")
    func issuerBinding() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            try await client.addIssuer(name: "evil", keyID: "k9", key: TestKeys.rsa2)
            _ = try await client.registerFederated()
            let assertion = try Assertions.federated(issuer: "evil", keyID: "k9", subject: "alice", now: client.deployment.now).sign(with: TestKeys.rsa2)
            #expect(try await client.token(assertion: assertion).code == "invalid_grant")
        }
    }

    @Test("Test key registration, then device-key sign-in (P-256 and RSA device keys)", arguments: [TestKeys.p256, TestKeys.rsa])
    func deviceKeyFlow(deviceKey: PrivateKey) async throws {
        try await Deployment.make().run { client in
            let registered = try await client.registerWithTestKey(username: "dev-1", deviceKey: deviceKey)
            let reply = try await client.signInWithKey(username: "dev-1", deviceKey: deviceKey)
            #expect(reply.status == .ok, "\(String(decoding: reply.body, as: UTF8.self))")
            let tokens = try reply.decode(TokenResponse.self)
            let claims = try ParsedJWS(tokens.idToken).claims
            #expect(claims["sub"] == .string(registered.userId) && claims["amr"] == ["pop"])
        }
    }

    @Test("A device assertion's nonce is single-use and bound to its user")
    func nonceRules() async throws {
        try await Deployment.make().run { client in
            _ = try await client.registerWithTestKey(username: "dev-1", deviceKey: TestKeys.p256)
            _ = try await client.registerWithTestKey(username: "dev-2", deviceKey: TestKeys.p256b)
            let challenge = try await client.postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: "dev-1")).decode(SignInChallengeResponse.self)
            #expect(challenge.expiresIn == 300 && challenge.audience == "identity-service")
            let now = client.deployment.now
            // dev-2 cannot use dev-1's nonce.
            let stolen = try Assertions.device(username: "dev-2", keyID: "device-1", nonce: challenge.nonce, now: now).sign(with: TestKeys.p256b)
            #expect(try await client.token(assertion: stolen).code == "invalid_grant")
            let assertion = try Assertions.device(username: "dev-1", keyID: "device-1", nonce: challenge.nonce, now: now).sign(with: TestKeys.p256)
            #expect(try await client.token(assertion: assertion).status == .ok)
            #expect(try await client.token(assertion: assertion).code == "invalid_grant")
            // A nonce the server never issued.
            let invented = try Assertions.device(username: "dev-1", keyID: "device-1", nonce: "made-up", now: now).sign(with: TestKeys.p256)
            #expect(try await client.token(assertion: invented).code == "invalid_grant")
            // An expired nonce.
            let late = try await client.postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: "dev-1")).decode(SignInChallengeResponse.self)
            client.deployment.clock.advance(by: 301)
            let expired = try Assertions.device(username: "dev-1", keyID: "device-1", nonce: late.nonce, now: client.deployment.now).sign(with: TestKeys.p256)
            #expect(try await client.token(assertion: expired).code == "invalid_grant")
            // Another key than the registered one.
            let fresh = try await client.postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: "dev-1")).decode(SignInChallengeResponse.self)
            let wrongKey = try Assertions.device(username: "dev-1", keyID: "device-1", nonce: fresh.nonce, now: client.deployment.now).sign(with: TestKeys.p256b)
            #expect(try await client.token(assertion: wrongKey).code == "invalid_grant")
        }
    }

    @Test("A challenge for an unknown username looks the same as one for a registered user, and writes nothing")
    func challengeForUnknownUser() async throws {
        try await Deployment.make().run { client in
            _ = try await client.registerWithTestKey(username: "bob", deviceKey: TestKeys.p256)
            let before = try await client.deployment.count("used_jtis")
            let ghost = try #require(try await client.postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: "ghost")).json["nonce"]?.stringValue)
            let bob = try #require(try await client.postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: "bob")).json["nonce"]?.stringValue)
            // lsn_<12 hex time + 22 random>.<expiry>.<43 MAC>, the same shape for both.
            for nonce in [ghost, bob] {
                #expect(nonce.hasPrefix(SignInNonces.prefix) && nonce.count == ghost.count && nonce.split(separator: ".").count == 3, "\(nonce)")
            }
            #expect(try await client.deployment.count("used_jtis") == before)
        }
    }

    @Test("Refresh rotates; a lost response can be retried within grace; reuse later revokes the family at once")
    func refreshRotation() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let first = try await client.signInFederated()
            client.deployment.clock.advance(by: 5)
            let second = try await client.refresh(first.refreshToken).decode(TokenResponse.self)
            #expect(second.refreshToken != first.refreshToken)
            #expect(second.refreshExpiresIn == 30 * 24 * 3600 - 5)
            // The response of that refresh was "lost": the phone retries with the old token.
            let retry = try await client.refresh(first.refreshToken)
            #expect(retry.status == .ok)
            let third = try retry.decode(TokenResponse.self)
            // The unused successor from before is now dead, and presenting it is reuse.
            client.deployment.clock.advance(by: 20)
            let reuse = try await client.refresh(second.refreshToken)
            #expect(reuse.code == "invalid_grant")
            // The whole family is revoked: the newest token and the access tokens are refused.
            #expect(try await client.refresh(third.refreshToken).code == "invalid_grant")
            let info = try await client.get("/oauth2/userinfo", bearer: third.accessToken)
            #expect(info.status == .unauthorized && info.code == "invalid_token")
            #expect(info.headers[.wwwAuthenticate]?.hasPrefix("Bearer error=\"invalid_token\"") == true)
        }
    }

    @Test("The refresh family has an absolute lifetime")
    func absoluteLifetime() async throws {
        try await Deployment.make({ $0.tokens.refreshLifetime = 100 }).run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            var token = try await client.signInFederated().refreshToken
            client.deployment.clock.advance(by: 60)
            token = try await client.refresh(token).decode(TokenResponse.self).refreshToken
            client.deployment.clock.advance(by: 41)
            #expect(try await client.refresh(token).code == "invalid_grant")
        }
    }

    @Test("Revocation (RFC 7009) ends this device's session; unknown tokens answer 200")
    func revocation() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let phone = try await client.signInFederated()
            let tablet = try await client.signInFederated()
            let revoked = try await client.postForm("/oauth2/revoke", [("token", phone.refreshToken), ("token_type_hint", "refresh_token")])
            #expect(revoked.status == .ok)
            #expect(try await client.refresh(phone.refreshToken).code == "invalid_grant")
            #expect(try await client.get("/oauth2/userinfo", bearer: phone.accessToken).status == .unauthorized)
            #expect(try await client.get("/oauth2/userinfo", bearer: tablet.accessToken).status == .ok)
            #expect(try await client.postForm("/oauth2/revoke", [("token", "lrt_unknown")]).status == .ok)
            #expect(try await client.postForm("/oauth2/revoke", [("token", "x"), ("token_type_hint", "weird")]).code == "unsupported_token_type")
        }
    }

    @Test("Global sign-out ends every session of the user at once")
    func globalSignOut() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let phone = try await client.signInFederated()
            let tablet = try await client.signInFederated()
            let reply = try await client.send(.post, "/v1/me/global-sign-out", headers: [.authorization: "Bearer \(phone.accessToken)"])
            #expect(reply.status == .ok && reply.json["revoked"] == 2)
            #expect(try await client.get("/oauth2/userinfo", bearer: tablet.accessToken).status == .unauthorized)
            #expect(try await client.refresh(tablet.refreshToken).code == "invalid_grant")
        }
    }

    @Test("De-registration needs a recent sign-in (RFC 9470), then deletes everything")
    func deregistration() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let old = try await client.signInFederated()
            client.deployment.clock.advance(by: 301)
            // A refresh does not make the sign-in recent.
            let refreshed = try await client.refresh(old.refreshToken).decode(TokenResponse.self)
            let stale = try await client.send(.delete, "/v1/me", headers: [.authorization: "Bearer \(refreshed.accessToken)"])
            #expect(stale.status == .unauthorized && stale.code == "insufficient_user_authentication")
            #expect(stale.headers[.wwwAuthenticate]?.contains("error=\"insufficient_user_authentication\"") == true)
            #expect(stale.headers[.wwwAuthenticate]?.contains("max_age=300") == true)
            #expect(try await client.deployment.count("users") == 1)

            let fresh = try await client.signInFederated()
            let deleted = try await client.send(.delete, "/v1/me", headers: [.authorization: "Bearer \(fresh.accessToken)"])
            #expect(deleted.status == .noContent)
            for table in ["users", "sessions", "device_keys"] {
                #expect(try await client.deployment.count(table) == 0)
            }
            #expect(try await client.get("/oauth2/userinfo", bearer: fresh.accessToken).status == .unauthorized)
            #expect(try await client.token(assertion: try client.federatedAssertion()).code == "invalid_grant")
        }
    }

    @Test("The sensitive window is configurable")
    func sensitiveWindowConfigurable() async throws {
        try await Deployment.make({ $0.sensitiveMaxAge = 30 }).run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let tokens = try await client.signInFederated()
            client.deployment.clock.advance(by: 31)
            let reply = try await client.send(.delete, "/v1/me", headers: [.authorization: "Bearer \(tokens.accessToken)"])
            #expect(reply.code == "insufficient_user_authentication" && reply.headers[.wwwAuthenticate]?.contains("max_age=30") == true)
        }
    }

    @Test("An ID token is not an access token; expired and foreign tokens are refused")
    func accessTokenChecks() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let tokens = try await client.signInFederated()
            #expect(try await client.get("/oauth2/userinfo", bearer: tokens.idToken).code == "invalid_token")
            let foreign = try JWTBuilder(header: ["kid": "x", "typ": "at+jwt"], claims: ["sub": "a", "sid": "b", "exp": 9_999_999_999]).sign(with: TestKeys.p256)
            #expect(try await client.get("/oauth2/userinfo", bearer: foreign).code == "invalid_token")
            #expect(try await client.get("/oauth2/userinfo").code == "invalid_token")
            client.deployment.clock.advance(by: 3601)
            #expect(try await client.get("/oauth2/userinfo", bearer: tokens.accessToken).code == "invalid_token")
        }
    }

    @Test("Clients: unknown client_id is invalid_client; tokens carry the named client; refresh is bound to it")
    func clients() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let unknown = try await client.token(assertion: try client.federatedAssertion(), clientID: "nope")
            #expect(unknown.status == .unauthorized && unknown.code == "invalid_client")
            #expect(try await client.admin(.post, "/admin/v1/clients", AdminClientRequest(clientId: "ios-app")).status == .created)
            let reply = try await client.token(assertion: try client.federatedAssertion(), clientID: "ios-app")
            let tokens = try reply.decode(TokenResponse.self)
            #expect(try ParsedJWS(tokens.idToken).claims["aud"] == "ios-app")
            let crossClient = try await client.postForm(
                "/oauth2/token", [("grant_type", "refresh_token"), ("refresh_token", tokens.refreshToken), ("client_id", "default")])
            #expect(crossClient.code == "invalid_grant")
        }
    }

    @Test("Signing-key rotation: new tokens use the new key; old tokens still verify until they expire")
    func keyRotation() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let before = try await client.signInFederated()
            let rotated = try await client.admin(.post, "/admin/v1/keys/rotate").decode(AdminKeyRotated.self)
            let after = try await client.signInFederated()
            #expect(try ParsedJWS(after.idToken).keyID == rotated.keyId)
            let jwks = try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self)
            #expect(jwks.keys.count == 2)
            _ = try verifyAgainstJWKS(before.idToken, jwks: jwks)
            #expect(try await client.get("/oauth2/userinfo", bearer: before.accessToken).status == .ok)
            // Once every token the old key signed has expired, it is no longer published.
            client.deployment.clock.advance(by: 3600 + 61)
            try await client.deployment.services.keys.reload()
            #expect(try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self).keys.map(\.kid) == [rotated.keyId])
        }
    }

    @Test("RS256 can be chosen for Latch's own tokens")
    func rs256Deployment() async throws {
        try await Deployment.make({ $0.signingAlgorithm = .RS256 }).run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let tokens = try await client.signInFederated()
            #expect(try ParsedJWS(tokens.idToken).algorithmName == "RS256")
            _ = try verifyAgainstJWKS(tokens.idToken, jwks: try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self))
        }
    }

    @Test("Health probes")
    func health() async throws {
        try await Deployment.make().run { client in
            let live = try await client.get("/health/live")
            let ready = try await client.get("/health/ready")
            #expect(live.status == .ok && ready.status == .ok)
        }
    }
}

@Suite("Revocation edge cases")
struct RevocationEdgeTests {
    @Test("Revoking with an access token ends its session; a revocation while the store is down is a 503, not a 200")
    func accessTokenRevocationAndOutage() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let tokens = try await client.signInFederated()
            #expect(try await client.postForm("/oauth2/revoke", [("token", tokens.accessToken)]).status == .ok)
            #expect(try await client.refresh(tokens.refreshToken).code == "invalid_grant")
            let other = try await client.signInFederated()
            client.deployment.store.close()
            let reply = try await client.postForm("/oauth2/revoke", [("token", other.accessToken)])
            #expect(reply.status == .serviceUnavailable)
            let reply2 = try await client.postForm("/oauth2/revoke", [("token", other.refreshToken)])
            #expect(reply2.status == .serviceUnavailable)
        }
    }
}

@Suite("Refresh token integrity")
struct RefreshTokenIntegrityTests {
    @Test("A forged or altered refresh token is invalid and does not revoke the family it names")
    func forgedTokens() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            let tokens = try await client.signInFederated()
            let parts = tokens.refreshToken.dropFirst(4).split(separator: ".").map(String.init)
            let forgeries = [
                "lrt_\(parts[0]).0.\(Base64URL.encode([UInt8](repeating: 1, count: 32)))",  // right session, made-up MAC
                "lrt_\(parts[0]).1.\(parts[2])",  // next generation with the old MAC
                "lrt_\(parts[0]).00.\(parts[2])",  // non-canonical generation
                "lrt_other.0.\(parts[2])",  // another session with this MAC
                String(tokens.refreshToken.dropLast()),  // truncated
                tokens.refreshToken + "x",
            ]
            for forged in forgeries {
                #expect(try await client.refresh(forged).code == "invalid_grant", "\(forged)")
                #expect(try await client.postForm("/oauth2/revoke", [("token", forged)]).status == .ok)
            }
            // The genuine family is untouched by all of that.
            #expect(try await client.refresh(tokens.refreshToken).status == .ok)
        }
    }

    @Test("Refresh tokens survive a restart but not a change of the key-encryption key")
    func keyBinding() async throws {
        let codec = RefreshTokenCodec(key: KeySealer.derivedKey(from: [UInt8](repeating: 7, count: 32), purpose: "refresh-token mac v1"))
        let other = RefreshTokenCodec(key: KeySealer.derivedKey(from: [UInt8](repeating: 8, count: 32), purpose: "refresh-token mac v1"))
        let token = codec.token(sessionID: "abc", generation: 3)
        #expect(codec.parse(token)?.generation == 3)
        #expect(other.parse(token) == nil)
    }
}

@Suite("Key reload on an unknown kid")
struct UnknownKidTests {
    @Test("An access token naming an unknown kid reloads keys (rate-limited) and is refused — no crash on the first miss")
    func unknownKid() async throws {
        try await Deployment.make().run { client in
            let forged = try JWTBuilder(header: ["kid": "never-published", "typ": "at+jwt"], claims: ["sub": "a", "sid": "b"]).sign(with: TestKeys.p256)
            for _ in 0..<3 {
                #expect(try await client.get("/oauth2/userinfo", bearer: forged).code == "invalid_token")
            }
        }
    }

    @Test("A key rotated by another process is found on first use, before the periodic reload")
    func rotatedElsewhere() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated()
            // Another replica rotates the key directly in the shared store.
            let sealer = try KeySealer(keyEncryptionKey: [UInt8](repeating: 7, count: 32))
            _ = try await SigningKeyRing.rotate(
                store: client.deployment.store, sealer: sealer, clock: client.deployment.clock.clock, random: .system, algorithm: .ES256)
            // That replica signs with the new key; this one has not reloaded yet.
            let other = try await SigningKeyRing.load(
                store: client.deployment.store, sealer: sealer, clock: client.deployment.clock.clock, random: .system, algorithm: .ES256,
                publicationAfterRetirement: 3700)
            let minter = TokenMinter(keys: other, settings: TokenSettings(issuer: "https://latch.test"), random: .system)
            let tokens = try await client.signInFederated()
            let session = try #require(try await client.deployment.store.session(id: String(tokens.refreshToken.dropFirst(4).split(separator: ".")[0])))
            let user = try #require(try await client.deployment.store.user(id: session.userID))
            let fromOther = try await minter.response(user: user, session: session, refreshToken: "x", now: client.deployment.now)
            #expect(try await client.get("/oauth2/userinfo", bearer: fromOther.accessToken).status == .ok)
        }
    }

    /// Registers `username` with a fresh test key; the reply.
    static func registerTest(_ client: Client, _ username: String, deviceKey: PrivateKey = TestKeys.p256) async throws -> Reply {
        let created = try await client.admin(.post, "/admin/v1/test-keys", AdminTestKeyRequest()).decode(AdminTestKeyCreated.self)
        let answer = try Assertions.testRegistration(keyID: created.keyId, subject: username, now: client.deployment.now)
            .sign(with: try PrivateKey(pem: created.privateKey))
        return try await client.postJSON(
            "/v1/registrations",
            RegistrationRequest(
                challengeType: .test, answer: answer,
                publicKey: RegistrationPublicKey(keyId: "device-1", algorithm: "ES256", publicKey: deviceKey.publicKey.pemRepresentation)))
    }

    @Test("Usernames are unique per source: a test key or one issuer cannot take another issuer's names")
    func usernamesPerSource() async throws {
        try await Deployment.make().run { client in
            try await client.addIssuer()
            try await client.addIssuer(name: "globex", keyID: "g1", key: TestKeys.rsa2)
            let native = try await Self.registerTest(client, "carol")
            #expect(native.status == .created)
            let acme = try await client.registerFederated(subject: "carol")
            let globexAnswer = try client.federatedAssertion(subject: "carol", issuer: "globex", keyID: "g1", key: TestKeys.rsa2)
            let globex = try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: globexAnswer))
            #expect(globex.status == .created)
            let ids = Set([try native.decode(RegistrationResponse.self).userId, acme.userId, try globex.decode(RegistrationResponse.self).userId])
            #expect(ids.count == 3)
            // Within a source, still one "carol".
            #expect(try await Self.registerTest(client, "carol", deviceKey: TestKeys.p256b).code == "already_registered")
            // The device user signs in by name; the federated ones by their issuer's JWTs.
            #expect(try await client.signInWithKey(username: "carol", deviceKey: TestKeys.p256).status == .ok)
            #expect(try await client.signInFederated(subject: "carol").idToken.isEmpty == false)
        }
    }

    @Test("Look-alike usernames are one: case, width and NFC are normalised; invisible and control characters are refused")
    func lookAlikeUsernames() async throws {
        try await Deployment.make().run { client in
            let alice = try await Self.registerTest(client, "Alice")
            #expect(alice.status == .created)
            #expect(try alice.decode(RegistrationResponse.self).username == "alice")
            for twin in ["alice", "ALICE", "\u{FF21}\u{FF4C}\u{FF49}\u{FF43}\u{FF45}"] {
                #expect(try await Self.registerTest(client, twin, deviceKey: TestKeys.p256b).code == "already_registered", "\(twin)")
            }
            #expect(try await Self.registerTest(client, "jos\u{E9}").status == .created)
            #expect(try await Self.registerTest(client, "Jose\u{301}").code == "already_registered")
            for bad in ["ali\u{200B}ce", "\u{202E}x", "\u{FEFF}bob", "b\u{2028}ob", "b\u{A0}ob", " bob", "bob ", "   "] {
                let reply = try await Self.registerTest(client, bad)
                #expect(reply.status == .badRequest && reply.code == "invalid_proof", "\(bad.unicodeScalars.map { $0.value })")
            }
            // Signing in compares the normalised form too.
            #expect(try await client.signInWithKey(username: "ALICE", deviceKey: TestKeys.p256).status == .ok)
            // A federated subject in NFD (the NFC one's twin) is refused, not a second account.
            try await client.addIssuer()
            _ = try await client.registerFederated(subject: "jos\u{E9}")
            let nfd = try await client.postJSON(
                "/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: try client.federatedAssertion(subject: "jose\u{301}")))
            #expect(nfd.code == "invalid_proof")
        }
    }
}
