import Crypto
import Foundation
import HTTPTypes
import LatchApp
import LatchAttestation
import LatchCBOR
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

@Suite("FIDO authenticators over HTTP")
struct FidoFlowTests {
    @Test("A signed-in user registers a passkey, signs in with it by username and as a discoverable credential; counters only grow")
    func passkey() async throws {
        try await Deployment.make().run { client in
            let deviceKey = try PrivateKey.generate(.ES256)
            let user = try await client.registerWithTestKey(username: "fido-user", deviceKey: deviceKey)
            let signedIn = try await client.signInWithKey(username: user.username, deviceKey: deviceKey).decode(TokenResponse.self)
            let bearer = signedIn.accessToken
            let authenticator = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test")

            // Registration.
            let options = try await client.postJSON("/v1/fido/registration/options", [String: String](), bearer: bearer)
            #expect(options.status == .ok, "\(String(decoding: options.body, as: UTF8.self))")
            #expect(options.json["publicKey"]?["rp"]?["id"] == .string("latch.test"))
            let ceremony = try #require(options.json["ceremonyId"]?.stringValue)
            let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
            let body: JSONValue = .object(["ceremonyId": .string(ceremony), "credential": authenticator.register(challenge: challenge), "name": "phone"])
            func post(_ path: String, _ json: JSONValue, bearer: String? = bearer) async throws -> Reply {
                var headers: HTTPFields = [.contentType: "application/json"]
                if let bearer { headers[.authorization] = "Bearer \(bearer)" }
                return try await client.send(.post, path, headers: headers, body: String(decoding: json.serialized(), as: UTF8.self))
            }
            let registered = try await post("/v1/fido/registration", body)
            #expect(registered.status == .created, "\(String(decoding: registered.body, as: UTF8.self))")
            #expect(registered.json["name"] == .string("phone") && registered.json["format"] == .string("none"))
            #expect(try await post("/v1/fido/registration", body).code == "invalid_input", "a ceremony completes once")
            #expect(try await post("/v1/fido/registration", body, bearer: nil).status == .unauthorized)
            let list = try await client.get("/v1/me/authenticators", bearer: bearer).decode(FidoAuthenticatorList.self)
            #expect(list.authenticators.count == 1)

            // Sign-in by username.
            func signIn(username: String?, userHandle: String?, counter: UInt32? = nil) async throws -> Reply {
                let options = try await post(
                    "/v1/fido/authentication/options", username.map { .object(["username": .string($0)]) } ?? .object([:]), bearer: nil)
                let ceremony = try #require(options.json["ceremonyId"]?.stringValue)
                let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
                let credential = try authenticator.assert(challenge: challenge, userHandle: userHandle, counter: counter)
                return try await client.postForm(
                    "/oauth2/token", [("grant_type", GrantType.webauthn), ("ceremony_id", ceremony), ("credential", credential)])
            }
            let first = try await signIn(username: user.username, userHandle: nil)
            #expect(first.status == .ok, "\(String(decoding: first.body, as: UTF8.self))")
            let claims = try verifyAgainstJWKS(
                try first.decode(TokenResponse.self).idToken, jwks: try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self))
            #expect(claims["sub"]?.stringValue == user.userId && claims["amr"] == ["hwk", "user", "mfa"])
            // A discoverable credential: the user handle names the user.
            let userHandle = Base64URL.encode(Data(user.userId.utf8))
            #expect(try await signIn(username: nil, userHandle: userHandle).status == .ok)
            #expect(try await signIn(username: nil, userHandle: nil).code == "invalid_grant")
            // A retried request (the same ceremony and assertion after a 200): refused as used, not flagged as a clone.
            let retry = try await post("/v1/fido/authentication/options", .object(["username": .string(user.username)]), bearer: nil)
            let retried = try authenticator.assert(challenge: try #require(retry.json["publicKey"]?["challenge"]?.stringValue), userHandle: nil)
            let form = [("grant_type", GrantType.webauthn), ("ceremony_id", retry.json["ceremonyId"]?.stringValue ?? ""), ("credential", retried)]
            #expect(try await client.postForm("/oauth2/token", form).status == .ok)
            let events = try await client.deployment.count("audit_log")
            let replayed = try await client.postForm("/oauth2/token", form)
            #expect(replayed.code == "invalid_grant")
            #expect(replayed.json["error_description"]?.stringValue?.contains("completed before") == true)
            // Only the refused sign-in is recorded (no clone suspicion).
            #expect(try await client.deployment.count("audit_log") == events + 1)
            // A counter that does not grow: refused and recorded, as a suspected clone and a refused sign-in.
            let cloned = try await signIn(username: user.username, userHandle: nil, counter: 1)
            #expect(cloned.code == "invalid_grant" && cloned.json["error_description"]?.stringValue?.contains("counter") == true)
            #expect(try await client.deployment.count("audit_log") == events + 3)
            // Deleting it (a recent sign-in).
            let id = list.authenticators[0].id
            let deleted = try await client.send(.delete, "/v1/me/authenticators/\(id)", headers: [.authorization: "Bearer \(bearer)"])
            #expect(deleted.status == .noContent)
            #expect(try await signIn(username: user.username, userHandle: nil).code == "invalid_grant")
        }
    }
}

@Suite("PIN authenticators: the server counts wrong PINs")
struct PinAuthenticatorTests {
    /// A signed-in user with one registered PIN-model authenticator; `post` sends JSON with the user's bearer.
    struct Setup {
        let client: Client
        let user: RegistrationResponse
        let bearer: String
        let authenticator: TestWebAuthnAuthenticator
        let id: String

        /// `bound`: registered with a PIN binding key, as the SDK does; false: an authenticator from before binding.
        static func make(_ client: Client, name: String = "pin-user", bound: Bool = true) async throws -> Setup {
            let deviceKey = try PrivateKey.generate(.ES256)
            let user = try await client.registerWithTestKey(username: name, deviceKey: deviceKey)
            let bearer = try await client.signInWithKey(username: user.username, deviceKey: deviceKey).decode(TokenResponse.self).accessToken
            let authenticator = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test", aaguid: LatchAuthenticatorModel.pin.aaguid)
            if bound { authenticator.bindingKey = P256.Signing.PrivateKey() }
            let options = try await Self.post(client, "/v1/fido/registration/options", .object([:]), bearer: bearer)
            let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
            let registered = try await Self.post(
                client, "/v1/fido/registration",
                .object(["ceremonyId": options.json["ceremonyId"] ?? .null, "credential": authenticator.register(challenge: challenge)]), bearer: bearer)
            #expect(registered.status == .created, "\(String(decoding: registered.body, as: UTF8.self))")
            return Setup(client: client, user: user, bearer: bearer, authenticator: authenticator, id: try #require(registered.json["id"]?.stringValue))
        }

        static func post(_ client: Client, _ path: String, _ json: JSONValue, bearer: String? = nil) async throws -> Reply {
            var headers: HTTPFields = [.contentType: "application/json"]
            if let bearer { headers[.authorization] = "Bearer \(bearer)" }
            return try await client.send(.post, path, headers: headers, body: String(decoding: json.serialized(), as: UTF8.self))
        }

        /// A sign-in with the right PIN (`wrong: false`) or a wrong one (another key signs).
        func signIn(wrong: Bool) async throws -> Reply {
            let options = try await Self.post(client, "/v1/fido/authentication/options", .object([:]))
            let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
            authenticator.signWith = wrong ? P256.Signing.PrivateKey() : nil
            let credential = try authenticator.assert(challenge: challenge, userHandle: Base64URL.encode(Data(user.userId.utf8)), counter: 0)
            return try await client.postForm(
                "/oauth2/token",
                [("grant_type", GrantType.webauthn), ("ceremony_id", options.json["ceremonyId"]?.stringValue ?? ""), ("credential", credential)])
        }

        func status() async throws -> JSONValue {
            try await Self.post(client, "/v1/fido/authenticators/status", .object(["credentialId": .string(authenticator.credentialIDString)])).json
        }
    }

    @Test("Wrong PINs count down with growing cool-downs, then lock; a locked one refuses the right PIN; an admin unlocks it; amr says pin")
    func lockout() async throws {
        try await Deployment.make { $0.fidoPin.coolDowns = [0, 10, 30] }.run { client in
            let setup = try await Setup.make(client)
            #expect(try await setup.status() == ["state": "unlocked", "remainingTries": 5, "coolDown": 0, "bound": true])
            let good = try await setup.signIn(wrong: false)
            #expect(good.status == .ok, "\(String(decoding: good.body, as: UTF8.self))")
            let claims = try verifyAgainstJWKS(
                try good.decode(TokenResponse.self).idToken, jwks: try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self))
            #expect(claims["amr"] == ["pin", "swk", "user", "mfa"])

            // 1st wrong PIN: no wait; 2nd: 10 s; inside the cool-down even the right PIN is refused, uncounted.
            let first = try await setup.signIn(wrong: true)
            #expect(first.code == "invalid_grant")
            #expect(first.json["pinStatus"] == ["state": "lastAttemptFailed", "remainingTries": 4, "coolDown": 0, "bound": true])
            let second = try await setup.signIn(wrong: true)
            #expect(second.json["pinStatus"] == ["state": "lastAttemptFailed", "remainingTries": 3, "coolDown": 10, "bound": true])
            let waiting = try await setup.signIn(wrong: false)
            #expect(waiting.code == "invalid_grant")
            #expect(waiting.json["pinStatus"]?["remainingTries"] == 3)
            client.deployment.clock.advance(by: 4)
            #expect(try await setup.status() == ["state": "lastAttemptFailed", "remainingTries": 3, "coolDown": 6, "bound": true])
            client.deployment.clock.advance(by: 6)
            // The right PIN after the cool-down: signed in, the count cleared.
            #expect(try await setup.signIn(wrong: false).status == .ok)
            #expect(try await setup.status()["state"] == "unlocked")

            // Five wrong PINs (cool-downs waited out): locked; the right PIN is refused; nothing more is counted.
            for attempt in 1...5 {
                let reply = try await setup.signIn(wrong: true)
                #expect(reply.json["pinStatus"]?["remainingTries"] == .int(Int64(5 - attempt)))
                client.deployment.clock.advance(by: 30)
            }
            #expect(try await setup.status() == ["state": "lockedOut", "remainingTries": 0, "coolDown": 0, "bound": true])
            let locked = try await setup.signIn(wrong: false)
            #expect(locked.code == "invalid_grant")
            #expect(locked.json["pinStatus"]?["state"] == "lockedOut")
            let listed = try await client.admin(.get, "/admin/v1/users/\(setup.user.userId)/authenticators").decode(FidoAuthenticatorList.self)
            #expect(listed.authenticators.first?.pinStatus?.state == FidoPinStatus.lockedOut)

            // An admin unlocks it; the user signs in again.
            #expect(try await client.admin(.post, "/admin/v1/users/\(setup.user.userId)/authenticators/nope/unlock").status == .notFound)
            let recorded = try await client.deployment.count("audit_log")
            let unlocked = try await client.admin(.post, "/admin/v1/users/\(setup.user.userId)/authenticators/\(setup.id)/unlock")
            #expect(unlocked.json["pinStatus"]?["state"] == "unlocked")
            // One audit record, naming the admin.
            #expect(try await client.deployment.count("audit_log") == recorded + 1)
            let unlock = try await client.admin(.get, "/admin/v1/audit?limit=1").decode(AuditPage.self).records.first
            #expect(unlock?.type == "authenticator.unlocked" && unlock?.actor == "admin:adm_root/env" && unlock?.subject == setup.user.userId)
            #expect(try await setup.signIn(wrong: false).status == .ok)
            // Unknown credential ids and non-PIN authenticators have no PIN status.
            let unknown = try await Setup.post(client, "/v1/fido/authenticators/status", .object(["credentialId": "AAAAAAAAAAAAAAAAAAAAAA"]))
            #expect(unknown.status == .notFound)
            #expect(try await Setup.post(client, "/v1/fido/authenticators/status", .object(["credentialId": "%%"])).code == "invalid_input")
            // An admin deletes the authenticator, then (none left) all of them: one audit record each, naming the admin.
            let before = try await client.deployment.count("audit_log")
            #expect(try await client.admin(.delete, "/admin/v1/users/\(setup.user.userId)/authenticators/\(setup.id)").status == .noContent)
            #expect(try await client.admin(.delete, "/admin/v1/users/\(setup.user.userId)/authenticators").status == .noContent)
            #expect(try await client.deployment.count("audit_log") == before + 2)
            let deletions = try await client.admin(.get, "/admin/v1/audit?limit=2&type=authenticator.deleted").decode(AuditPage.self).records
            #expect(deletions.map(\.detail) == ["all (0)", setup.id] && deletions.allSatisfy { $0.actor == "admin:adm_root/env" })
        }
    }

    @Test("Twelve wrong PINs at once (maxAttempts 3): exactly three are verified and counted, the other nine are refused unverified")
    func concurrentWrongPins() async throws {
        try await Deployment.make {
            $0.fidoPin.coolDowns = [0]
            $0.fidoPin.maxAttempts = 3
        }.run { client in
            let setup = try await Setup.make(client, name: "pin-racer")
            var attempts: [(ceremony: String, credential: String)] = []
            for _ in 0..<12 {
                let options = try await Setup.post(client, "/v1/fido/authentication/options", .object([:]))
                let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
                setup.authenticator.signWith = P256.Signing.PrivateKey()
                let credential = try setup.authenticator.assert(challenge: challenge, userHandle: Base64URL.encode(Data(setup.user.userId.utf8)), counter: 0)
                attempts.append((try #require(options.json["ceremonyId"]?.stringValue), credential))
            }
            let replies = try await withThrowingTaskGroup(of: Reply.self) { group in
                for attempt in attempts {
                    group.addTask {
                        try await client.postForm(
                            "/oauth2/token", [("grant_type", GrantType.webauthn), ("ceremony_id", attempt.ceremony), ("credential", attempt.credential)])
                    }
                }
                var all: [Reply] = []
                for try await reply in group { all.append(reply) }
                return all
            }
            #expect(replies.allSatisfy { $0.code == "invalid_grant" && $0.json["pinStatus"] != nil })
            // Verified: answered "wrong PIN"; the rest never reached the signature (locked, or the last tries taken).
            let verified = replies.filter { $0.json["error_description"]?.stringValue?.hasPrefix("wrong PIN") == true }
            #expect(verified.count == 3, "\(replies.map { $0.json["error_description"]?.stringValue ?? "" })")
            #expect(try await setup.status() == ["state": "lockedOut", "remainingTries": 0, "coolDown": 0, "bound": true])
            // One event per counted wrong PIN: two failures, then the lock.
            let failed = try await client.admin(.get, "/admin/v1/audit?type=authenticator.pin_failed").decode(AuditPage.self).records
            let locked = try await client.admin(.get, "/admin/v1/audit?type=authenticator.locked").decode(AuditPage.self).records
            #expect(failed.count == 2 && locked.count == 1)
            // The right PIN is refused too: locked.
            #expect(try await setup.signIn(wrong: false).json["pinStatus"]?["state"] == "lockedOut")
        }
    }

    @Test("A PIN change proves the old PIN (a wrong one counts) and swaps the key in one step; the old PIN stops working")
    func pinChange() async throws {
        try await Deployment.make { $0.fidoPin.coolDowns = [0] }.run { client in
            let setup = try await Setup.make(client, name: "pin-changer")
            func change(oldWrong: Bool, newKey: P256.Signing.PrivateKey, authenticatorID: String? = nil) async throws -> Reply {
                let options = try await Setup.post(
                    client, "/v1/fido/pin-change/options", .object(["authenticatorId": .string(authenticatorID ?? setup.id)]), bearer: setup.bearer)
                guard options.status == .ok else { return options }
                let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
                setup.authenticator.signWith = oldWrong ? P256.Signing.PrivateKey() : nil
                let assertion = try setup.authenticator.assertion(challenge: challenge, userHandle: nil, counter: 0)
                return try await Setup.post(
                    client, "/v1/fido/pin-change",
                    .object([
                        "ceremonyId": options.json["ceremonyId"] ?? .null, "authenticatorId": .string(setup.id), "assertion": assertion,
                        "credential": setup.authenticator.register(challenge: challenge, key: newKey),
                    ]), bearer: setup.bearer)
            }
            let newKey = P256.Signing.PrivateKey()
            let wrong = try await change(oldWrong: true, newKey: newKey)
            #expect(wrong.code == "pin_attempt_failed")
            #expect(wrong.json["pinStatus"]?["remainingTries"] == 4)
            #expect(try await change(oldWrong: false, newKey: newKey, authenticatorID: "nope").status == .notFound)
            let changed = try await change(oldWrong: false, newKey: newKey)
            #expect(changed.status == .ok, "\(String(decoding: changed.body, as: UTF8.self))")
            #expect(changed.json["pinStatus"]?["state"] == "unlocked")
            // The old key (PIN) now fails and counts; the new one signs in.
            #expect(try await setup.signIn(wrong: false).json["pinStatus"]?["remainingTries"] == 4)
            setup.authenticator.signWith = newKey
            let options = try await Setup.post(client, "/v1/fido/authentication/options", .object([:]))
            let credential = try setup.authenticator.assert(
                challenge: try #require(options.json["publicKey"]?["challenge"]?.stringValue), userHandle: Base64URL.encode(Data(setup.user.userId.utf8)),
                counter: 0)
            let signedIn = try await client.postForm(
                "/oauth2/token",
                [("grant_type", GrantType.webauthn), ("ceremony_id", options.json["ceremonyId"]?.stringValue ?? ""), ("credential", credential)])
            #expect(signedIn.status == .ok, "\(String(decoding: signedIn.body, as: UTF8.self))")
        }
    }

    @Test("Policy: published; a denied model cannot register (nothing written); the most authenticators per user; delete all")
    func policy() async throws {
        let deployment = try await Deployment.make {
            $0.fidoDeniedAAGUIDs = [LatchAuthenticatorModel.software.rawValue]
            $0.fidoMaxAuthenticatorsPerUser = 2
        }
        try await deployment.run { client in
            let policy = try await client.get("/v1/fido/policy").decode(FidoPolicy.self)
            #expect(policy.deniedAaguids == [LatchAuthenticatorModel.software.rawValue])
            #expect(policy.pin.minLength == 6 && policy.pin.maxAttempts == 5 && policy.maxAuthenticatorsPerUser == 2)
            let setup = try await Setup.make(client, name: "policy-user")
            // A denied model: refused, nothing written.
            let denied = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test", aaguid: LatchAuthenticatorModel.software.aaguid)
            let options = try await Setup.post(client, "/v1/fido/registration/options", .object([:]), bearer: setup.bearer)
            let before = try await deployment.count("authenticators")
            let refused = try await Setup.post(
                client, "/v1/fido/registration",
                .object([
                    "ceremonyId": options.json["ceremonyId"] ?? .null,
                    "credential": denied.register(challenge: try #require(options.json["publicKey"]?["challenge"]?.stringValue)),
                ]), bearer: setup.bearer)
            #expect(refused.code == "authenticator_not_allowed")
            #expect(try await deployment.count("authenticators") == before)
            // A second one fits, a third does not.
            let second = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test")
            let again = try await Setup.post(client, "/v1/fido/registration/options", .object([:]), bearer: setup.bearer)
            let added = try await Setup.post(
                client, "/v1/fido/registration",
                .object([
                    "ceremonyId": again.json["ceremonyId"] ?? .null,
                    "credential": second.register(challenge: try #require(again.json["publicKey"]?["challenge"]?.stringValue)),
                ]), bearer: setup.bearer)
            #expect(added.status == .created)
            #expect(try await Setup.post(client, "/v1/fido/registration/options", .object([:]), bearer: setup.bearer).code == "conflict")
            // Delete all (a recent sign-in): none left; sign-in with the PIN one fails.
            let deleted = try await client.send(.delete, "/v1/me/authenticators", headers: [.authorization: "Bearer \(setup.bearer)"])
            #expect(deleted.status == .noContent)
            #expect(try await client.get("/v1/me/authenticators", bearer: setup.bearer).decode(FidoAuthenticatorList.self).authenticators.isEmpty)
            #expect(try await setup.signIn(wrong: false).code == "invalid_grant")
        }
    }
}

@Suite("FIDO native app origins")
struct FidoNativeOriginTests {
    @Test("An Android app's signing certificate makes its android:apk-key-hash origin acceptable; a registered iOS app adds https://rpId")
    func nativeOrigins() async throws {
        try await Deployment.make { $0.fidoRPID = "id.latch.test" }.run { client in
            let deviceKey = try PrivateKey.generate(.ES256)
            let user = try await client.registerWithTestKey(username: "native", deviceKey: deviceKey)
            let bearer = try await client.signInWithKey(username: user.username, deviceKey: deviceKey).decode(TokenResponse.self).accessToken
            let digest = Array(SHA256.hash(data: Array("native app signing certificate".utf8)))
            func register(origin: String) async throws -> Reply {
                let authenticator = TestWebAuthnAuthenticator(rpID: "id.latch.test", origin: origin)
                let options = try await PinAuthenticatorTests.Setup.post(client, "/v1/fido/registration/options", .object([:]), bearer: bearer)
                let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
                return try await PinAuthenticatorTests.Setup.post(
                    client, "/v1/fido/registration",
                    .object(["ceremonyId": options.json["ceremonyId"] ?? .null, "credential": authenticator.register(challenge: challenge)]), bearer: bearer)
            }
            let android = "android:apk-key-hash:" + Base64URL.encode(Data(digest))
            #expect(try await register(origin: android).code == "webauthn_client_data_invalid")
            #expect(try await register(origin: "https://id.latch.test").code == "webauthn_client_data_invalid")
            let patched = try await client.admin(
                .patch, "/admin/v1/clients/default",
                AdminClientPatch(ios: AdminIOSEvidence(appIds: ["ABCDE12345.com.example.native"]), android: AdminAndroidEvidence(packageNames: ["com.example.native"])))
            #expect(patched.status == .ok)
            #expect(try await client.admin(.post, "/admin/v1/clients/default/signing-certificates", AdminSigningCertificateRequest(sha256: Hex.encode(digest))).status == .created)
            #expect(try await register(origin: android).status == .created)
            #expect(try await register(origin: "https://id.latch.test").status == .created)
            #expect(try await register(origin: "android:apk-key-hash:" + Base64URL.encode(Data(repeating: 7, count: 32))).code == "webauthn_client_data_invalid")

            // The association files name the same apps: passkeys (webcredentials, get_login_creds) and /open links.
            let apple = try await client.get("/.well-known/apple-app-site-association")
            #expect(apple.headers[.contentType] == "application/json" && apple.headers[.cacheControl] == "public, max-age=300")
            #expect(apple.json["webcredentials"]?["apps"] == ["ABCDE12345.com.example.native"])
            let details = apple.json["applinks"]?["details"]?.arrayValue?.first
            #expect(details?["appIDs"] == ["ABCDE12345.com.example.native"])
            #expect(details?["components"]?.arrayValue?.first?["/"] == "/open")
            let links = try #require(try await client.get("/.well-known/assetlinks.json").json.arrayValue?.first)
            let fingerprint = digest.map { String(format: "%02X", $0) }.joined(separator: ":")
            #expect(links["target"]?["package_name"] == "com.example.native")
            #expect(links["target"]?["sha256_cert_fingerprints"] == .array([.string(fingerprint)]))
            #expect(links["relation"]?.arrayValue?.contains("delegate_permission/common.get_login_creds") == true)
        }
    }

    @Test("Without registered apps the association files are empty, not errors")
    func emptyAssociations() async throws {
        try await Deployment.make().run { client in
            let apple = try await client.get("/.well-known/apple-app-site-association")
            #expect(apple.status == .ok && apple.json["webcredentials"]?["apps"] == .array([]))
            #expect(try await client.get("/.well-known/assetlinks.json").json == .array([]))
        }
    }
}

@Suite("Passwordless sign-up: a new user whose first credential is a FIDO authenticator")
struct FidoSignUpTests {
    /// `POST /v1/registrations` completing a sign-up ceremony.
    static func complete(
        _ client: Client, options: JSONValue, authenticator: TestWebAuthnAuthenticator, registrationID: String? = nil, name: String? = nil
    ) async throws -> Reply {
        var answer: [String: JSONValue] = [
            "ceremonyId": options["ceremonyId"] ?? .null,
            "credential": authenticator.register(challenge: try #require(options["publicKey"]?["challenge"]?.stringValue)),
        ]
        if let name { answer["name"] = .string(name) }
        return try await client.postJSON(
            "/v1/registrations",
            RegistrationRequest(
                challengeType: .webauthn, answer: String(decoding: JSONValue.object(answer).serialized(), as: UTF8.self), registrationId: registrationID))
    }

    @Test("Sign-up options bind a new user id and username; the registration creates the user with the authenticator, idempotently")
    func signUp() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            let options = try await PinAuthenticatorTests.Setup.post(client, "/v1/fido/sign-up/options", .object(["username": "Passkey-Alice"]))
            #expect(options.status == .ok, "\(String(decoding: options.body, as: UTF8.self))")
            let publicKey = try #require(options.json["publicKey"])
            #expect(publicKey["user"]?["name"] == "passkey-alice")
            #expect(publicKey["authenticatorSelection"]?["residentKey"] == "required")
            let userHandle = try #require(publicKey["user"]?["id"]?.stringValue)
            let userID = String(decoding: try #require(Base64URL.decode(userHandle)), as: UTF8.self)
            #expect(try await deployment.count("users") == 0, "options write nothing")

            let authenticator = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test")
            let created = try await Self.complete(client, options: options.json, authenticator: authenticator, registrationID: "signup-1", name: "phone")
            #expect(created.status == .created, "\(String(decoding: created.body, as: UTF8.self))")
            let user = try created.decode(RegistrationResponse.self)
            #expect(user.userId == userID && user.username == "passkey-alice")
            // A retried request (lost answer) answers the same user; the ceremony under another id is spent.
            let retried = try await Self.complete(client, options: options.json, authenticator: authenticator, registrationID: "signup-1", name: "phone")
            #expect(try retried.decode(RegistrationResponse.self).userId == userID)
            let replayed = try await Self.complete(client, options: options.json, authenticator: authenticator, registrationID: "signup-2")
            #expect(replayed.status.code >= 400 && replayed.status.code < 500)
            #expect(try await deployment.count("users") == 1)
            #expect(try await deployment.count("authenticators") == 1)

            // The user signs in with the passkey (discoverable: no username), and lists it.
            let signInOptions = try await PinAuthenticatorTests.Setup.post(client, "/v1/fido/authentication/options", .object([:]))
            let credential = try authenticator.assert(
                challenge: try #require(signInOptions.json["publicKey"]?["challenge"]?.stringValue), userHandle: userHandle)
            let signedIn = try await client.postForm(
                "/oauth2/token",
                [("grant_type", GrantType.webauthn), ("ceremony_id", signInOptions.json["ceremonyId"]?.stringValue ?? ""), ("credential", credential)])
            #expect(signedIn.status == .ok, "\(String(decoding: signedIn.body, as: UTF8.self))")
            let tokens = try signedIn.decode(TokenResponse.self)
            let claims = try verifyAgainstJWKS(tokens.idToken, jwks: try await client.get("/.well-known/jwks.json").decode(JSONWebKeySet.self))
            #expect(claims["sub"]?.stringValue == userID)
            let list = try await client.get("/v1/me/authenticators", bearer: tokens.accessToken).decode(FidoAuthenticatorList.self)
            #expect(list.authenticators.map(\.name) == ["phone"])
            let admin = try await client.admin(.get, "/admin/v1/users/\(userID)")
            #expect(admin.json["kind"] == "WEBAUTHN", "\(String(decoding: admin.body, as: UTF8.self))")

            // The username is now taken: refused at options time.
            let taken = try await PinAuthenticatorTests.Setup.post(client, "/v1/fido/sign-up/options", .object(["username": "passkey-alice"]))
            #expect(taken.code == "already_registered")
            // Without a username, the username is the new user's id.
            let anonymous = try await PinAuthenticatorTests.Setup.post(client, "/v1/fido/sign-up/options", .object([:]))
            let anonymousHandle = try #require(anonymous.json["publicKey"]?["user"]?["id"]?.stringValue)
            #expect(anonymous.json["publicKey"]?["user"]?["name"]?.stringValue == String(decoding: try #require(Base64URL.decode(anonymousHandle)), as: UTF8.self))
        }
    }

    @Test("Sign-up refuses: a tampered ceremony, another kind of ceremony, a denied model, a public key alongside; nothing is written")
    func refusals() async throws {
        let deployment = try await Deployment.make { $0.fidoDeniedAAGUIDs = [LatchAuthenticatorModel.software.rawValue] }
        try await deployment.run { client in
            let options = try await PinAuthenticatorTests.Setup.post(client, "/v1/fido/sign-up/options", .object(["username": "bob"]))
            let good = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test")
            // The username in the ceremony id swapped: the MAC no longer matches.
            let ceremony = try #require(options.json["ceremonyId"]?.stringValue)
            let tampered = ceremony.replacingOccurrences(of: "~" + Base64URL.encode(Data("bob".utf8)), with: "~" + Base64URL.encode(Data("admin".utf8)))
            #expect(tampered != ceremony)
            let forged: JSONValue = .object(["ceremonyId": .string(tampered), "publicKey": options.json["publicKey"] ?? .null])
            #expect(try await Self.complete(client, options: forged, authenticator: good).code == "invalid_proof")
            // A sign-in ceremony is not a sign-up one.
            let signIn = try await PinAuthenticatorTests.Setup.post(client, "/v1/fido/authentication/options", .object([:]))
            #expect(try await Self.complete(client, options: signIn.json, authenticator: good).code == "invalid_proof")
            // A denied model.
            let denied = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test", aaguid: LatchAuthenticatorModel.software.aaguid)
            #expect(try await Self.complete(client, options: options.json, authenticator: denied).code == "authenticator_not_allowed")
            // The wrong origin.
            let elsewhere = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://evil.test")
            #expect(try await Self.complete(client, options: options.json, authenticator: elsewhere).code == "webauthn_client_data_invalid")
            // A device key alongside: WEBAUTHN carries its key in the credential.
            let withKey = try await client.postJSON(
                "/v1/registrations",
                RegistrationRequest(
                    challengeType: .webauthn, answer: "{}",
                    publicKey: RegistrationPublicKey(keyId: "k", algorithm: "ES256", publicKey: P256.Signing.PrivateKey().publicKey.pemRepresentation)))
            #expect(withKey.code == "invalid_input")
            // Not JSON.
            let garbage = try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .webauthn, answer: "{not json"))
            #expect(garbage.code == "invalid_proof")
            #expect(try await deployment.count("users") == 0)
            #expect(try await deployment.count("authenticators") == 0)
            // After all that, the ceremony still works once.
            #expect(try await Self.complete(client, options: options.json, authenticator: good).status.code < 300)
            #expect(try await deployment.count("users") == 1)
        }
    }

    @Test("fido.signUp false: both the options and the registration answer challenge_type_disabled")
    func disabled() async throws {
        try await Deployment.make { $0.fidoSignUp = false }.run { client in
            #expect(try await PinAuthenticatorTests.Setup.post(client, "/v1/fido/sign-up/options", .object([:])).code == "challenge_type_disabled")
            let answer = try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .webauthn, answer: "{}"))
            #expect(answer.code == "challenge_type_disabled")
        }
    }
}

@Suite("FIDO attestation trust from configured files")
struct FidoAttestationTrustTests {
    /// A signed-in user's registration options and a post of `credential` for them.
    static func register(_ client: Client, bearer: String, _ credential: (String) -> JSONValue) async throws -> Reply {
        let options = try await PinAuthenticatorTests.Setup.post(client, "/v1/fido/registration/options", .object([:]), bearer: bearer)
        let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
        #expect(options.json["publicKey"]?["attestation"] == "direct", "a deployment that requires attestation asks for it")
        return try await PinAuthenticatorTests.Setup.post(
            client, "/v1/fido/registration", .object(["ceremonyId": options.json["ceremonyId"] ?? .null, "credential": credential(challenge)]),
            bearer: bearer)
    }

    static func signedIn(_ client: Client, _ name: String) async throws -> String {
        let deviceKey = try PrivateKey.generate(.ES256)
        let user = try await client.registerWithTestKey(username: name, deviceKey: deviceKey)
        return try await client.signInWithKey(username: user.username, deviceKey: deviceKey).decode(TokenResponse.self).accessToken
    }

    @Test("fido.trustAnchors: a model's <aaguid>.pem root makes its android-key attestation trusted; required attestation refuses none")
    func trustAnchorsFolder() async throws {
        let now = TestClock().now
        let authority = try TestAttestationAuthority.create(now: now.addingTimeInterval(-3_600))
        let folder = TemporaryDirectory()
        defer { folder.remove() }
        try authority.rootPEM.write(toFile: folder.path + "/aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa.pem", atomically: true, encoding: .utf8)
        let deployment = try await Deployment.make {
            $0.fidoTrustAnchorsFolder = folder.path
            $0.fidoRequireAttestation = true
        }
        try await deployment.run { client in
            let bearer = try await Self.signedIn(client, "attested")
            let authenticator = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test")
            let refused = try await Self.register(client, bearer: bearer) { authenticator.register(challenge: $0) }
            #expect(refused.code == "webauthn_attestation_invalid")
            #expect(try await deployment.count("authenticators") == 0)
            let registered = try await Self.register(client, bearer: bearer) {
                authenticator.registerAndroidKey(challenge: $0, authority: authority, now: now)
            }
            #expect(registered.status == .created, "\(String(decoding: registered.body, as: UTF8.self))")
            #expect(registered.json["format"] == "android-key")
            // Another model (another AAGUID) under the same root: its root is not listed for it.
            let other = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test", aaguid: [UInt8](repeating: 0xBB, count: 16))
            let unlisted = try await Self.register(client, bearer: bearer) { other.registerAndroidKey(challenge: $0, authority: authority, now: now) }
            #expect(unlisted.code == "webauthn_attestation_invalid")
        }
    }

    @Test("fido.metadataBlob: verified at start; a model it reports REVOKED cannot register; a BLOB under another root stops the start")
    func metadataBlob() async throws {
        let now = TestClock().now
        let signer = try TestMetadataBlob.Signer(now: now)
        let folder = TemporaryDirectory()
        defer { folder.remove() }
        let payload: JSONValue = .object([
            "no": 7, "nextUpdate": "2099-01-01",
            "entries": .array([
                .object(["aaguid": "bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb", "statusReports": .array([.object(["status": "REVOKED", "effectiveDate": "2025-01-01"])])])
            ]),
        ])
        try signer.sign(payload).write(toFile: folder.path + "/blob.jwt", atomically: true, encoding: .utf8)
        try signer.rootPEM.write(toFile: folder.path + "/mds-root.pem", atomically: true, encoding: .utf8)
        let deployment = try await Deployment.make {
            $0.fidoMetadataBlobFile = folder.path + "/blob.jwt"
            $0.fidoMetadataRootsFile = folder.path + "/mds-root.pem"
        }
        try await deployment.run { client in
            let bearer = try await Self.signedIn(client, "revoked-model")
            let revoked = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test", aaguid: [UInt8](repeating: 0xBB, count: 16))
            let options = try await PinAuthenticatorTests.Setup.post(client, "/v1/fido/registration/options", .object([:]), bearer: bearer)
            let refused = try await PinAuthenticatorTests.Setup.post(
                client, "/v1/fido/registration",
                .object([
                    "ceremonyId": options.json["ceremonyId"] ?? .null,
                    "credential": revoked.register(challenge: try #require(options.json["publicKey"]?["challenge"]?.stringValue)),
                ]), bearer: bearer)
            #expect(refused.code == "attestation_revoked")
        }
        // The built-in root (GlobalSign R3, the FIDO Alliance's) did not sign this BLOB: the deployment does not start.
        await #expect(throws: ConfigurationError.self) {
            _ = try await Deployment.make { $0.fidoMetadataBlobFile = folder.path + "/blob.jwt" }
        }
    }
}
