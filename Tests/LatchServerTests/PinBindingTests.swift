import Crypto
import Foundation
import HTTPTypes
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
import LatchSQLite
import LatchTesting
import Testing

/// Issue 33 item 2: a wrong PIN must be something only the device can produce (docs/fido.md, "PIN binding").
@Suite("PIN binding: strangers cannot lock a PIN authenticator")
struct PinBindingTests {
    typealias Setup = PinAuthenticatorTests.Setup

    /// A stranger's sign-in attempt: a ceremony asked for by username (which lists the credential id), an assertion
    /// over that credential signed by a random key with UV set, and `binding` for its `pinBinding`.
    enum Binding: CaseIterable {
        /// No `pinBinding` at all.
        case missing
        /// Signed by a random key.
        case forged
        /// Not 64 bytes.
        case malformed
        /// The owner's real binding signature, lifted from another ceremony's assertion.
        case replayed
    }

    static func strangerSignIn(_ setup: Setup, _ binding: Binding) async throws -> Reply {
        let client = setup.client
        let options = try await Setup.post(client, "/v1/fido/authentication/options", .object(["username": .string(setup.user.username)]))
        let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
        // The username's ceremony lists the PIN credential to anyone.
        #expect(options.json["publicKey"]?["allowCredentials"]?.arrayValue?.first?["id"]?.stringValue == setup.authenticator.credentialIDString)
        let stranger = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test", aaguid: LatchAuthenticatorModel.pin.aaguid)
        let owner = setup.authenticator
        owner.signWith = stranger.key
        defer {
            owner.signWith = nil
            owner.bindWith = nil
            owner.omitBinding = false
        }
        var assertion: JSONValue
        switch binding {
        case .missing:
            owner.omitBinding = true
            assertion = try owner.assertion(challenge: challenge, userHandle: nil, counter: 0)
        case .forged:
            owner.bindWith = P256.Signing.PrivateKey()
            assertion = try owner.assertion(challenge: challenge, userHandle: nil, counter: 0)
        case .malformed:
            assertion = try owner.assertion(challenge: challenge, userHandle: nil, counter: 0)
            guard case .object(var fields) = assertion else { throw CancellationError() }
            fields["pinBinding"] = .object(["signature": .string(Base64URL.encode(Data(repeating: 1, count: 63)))])
            assertion = .object(fields)
        case .replayed:
            // A genuine binding signature from the owner's device, for another ceremony (seen on the wire, say).
            let other = try await Setup.post(client, "/v1/fido/authentication/options", .object([:]))
            owner.signWith = nil
            let genuine = try owner.assertion(challenge: try #require(other.json["publicKey"]?["challenge"]?.stringValue), userHandle: nil, counter: 0)
            owner.signWith = stranger.key
            assertion = try owner.assertion(challenge: challenge, userHandle: nil, counter: 0)
            guard case .object(var fields) = assertion else { throw CancellationError() }
            fields["pinBinding"] = genuine["pinBinding"]
            assertion = .object(fields)
        }
        return try await client.postForm(
            "/oauth2/token",
            [
                ("grant_type", GrantType.webauthn), ("ceremony_id", options.json["ceremonyId"]?.stringValue ?? ""),
                ("credential", String(decoding: assertion.serialized(), as: UTF8.self)),
            ])
    }

    @Test("A stranger who knows the username sends maxAttempts+2 assertions by random keys (UV set) with missing, forged, malformed or replayed bindings: none counted; the owner signs in first time; the owner's own wrong PINs still lock")
    func strangerCannotLock() async throws {
        try await Deployment.make { $0.fidoPin.coolDowns = [0] }.run { client in
            let setup = try await Setup.make(client, name: "pin-victim")
            for attempt in 0..<(5 + 2) {
                let binding = Binding.allCases[attempt % Binding.allCases.count]
                let reply = try await Self.strangerSignIn(setup, binding)
                #expect(reply.code == "invalid_grant", "\(binding): \(String(decoding: reply.body, as: UTF8.self))")
                #expect(reply.json["reason"] == "pin_binding_invalid", "\(binding)")
                #expect(reply.json["pinStatus"] == nil, "\(binding)")
            }
            // Nothing counted, nothing reserved, no PIN event.
            #expect(try await setup.status() == ["state": "unlocked", "remainingTries": 5, "coolDown": 0, "bound": true])
            let stored = try #require(try await client.deployment.store.authenticator(credentialID: Data(setup.authenticator.credentialID))?.1)
            #expect(stored.failedAttempts == 0 && stored.lastFailedAt == nil)
            let events = try await client.admin(.get, "/admin/v1/audit?type=authenticator.pin_failed").decode(AuditPage.self).records
            let locks = try await client.admin(.get, "/admin/v1/audit?type=authenticator.locked").decode(AuditPage.self).records
            #expect(events.isEmpty && locks.isEmpty)
            // The owner signs in with the right PIN, first time.
            let owner = try await setup.signIn(wrong: false)
            #expect(owner.status == .ok, "\(String(decoding: owner.body, as: UTF8.self))")
            // The right PIN without the binding is refused too (the PIN alone is not enough), uncounted.
            setup.authenticator.omitBinding = true
            let unbound = try await setup.signIn(wrong: false)
            setup.authenticator.omitBinding = false
            #expect(unbound.code == "invalid_grant" && unbound.json["reason"] == "pin_binding_invalid")
            // The owner's device with wrong PINs: counted, locked after maxAttempts.
            for attempt in 1...5 {
                let reply = try await setup.signIn(wrong: true)
                #expect(reply.json["pinStatus"]?["remainingTries"] == .int(Int64(5 - attempt)))
            }
            #expect(try await setup.status()["state"] == "lockedOut")
            #expect(try await setup.signIn(wrong: false).json["pinStatus"]?["state"] == "lockedOut")
            // A stranger's attempt on the locked authenticator is still refused for its binding, first.
            #expect(try await Self.strangerSignIn(setup, .forged).json["reason"] == "pin_binding_invalid")
        }
    }

    @Test("PIN change: an old-PIN assertion without its binding, or with a forged one, is refused (pin_binding_invalid) and not counted; with it, a wrong PIN counts")
    func pinChangeNeedsBinding() async throws {
        try await Deployment.make { $0.fidoPin.coolDowns = [0] }.run { client in
            let setup = try await Setup.make(client, name: "pin-changer-bound")
            func change(wrong: Bool, binding: Binding?) async throws -> Reply {
                let options = try await Setup.post(
                    client, "/v1/fido/pin-change/options", .object(["authenticatorId": .string(setup.id)]), bearer: setup.bearer)
                let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
                setup.authenticator.signWith = wrong ? P256.Signing.PrivateKey() : nil
                setup.authenticator.omitBinding = binding == .missing
                setup.authenticator.bindWith = binding == .forged ? P256.Signing.PrivateKey() : nil
                defer {
                    setup.authenticator.signWith = nil
                    setup.authenticator.omitBinding = false
                    setup.authenticator.bindWith = nil
                }
                let assertion = try setup.authenticator.assertion(challenge: challenge, userHandle: nil, counter: 0)
                return try await Setup.post(
                    client, "/v1/fido/pin-change",
                    .object([
                        "ceremonyId": options.json["ceremonyId"] ?? .null, "authenticatorId": .string(setup.id), "assertion": assertion,
                        "credential": setup.authenticator.register(challenge: challenge, key: P256.Signing.PrivateKey()),
                    ]), bearer: setup.bearer)
            }
            for binding in [Binding.missing, .forged] {
                let refused = try await change(wrong: true, binding: binding)
                #expect(refused.code == "pin_binding_invalid", "\(String(decoding: refused.body, as: UTF8.self))")
                #expect(refused.json["pinStatus"] == nil)
            }
            #expect(try await setup.status()["remainingTries"] == 5)
            let wrong = try await change(wrong: true, binding: nil)
            #expect(wrong.code == "pin_attempt_failed")
            #expect(wrong.json["pinStatus"]?["remainingTries"] == 4)
        }
    }

    @Test("Registration: a pinBinding that does not verify, or is malformed, is refused and nothing is written; on another model it is refused")
    func registrationChecksBinding() async throws {
        try await Deployment.make().run { client in
            let deviceKey = try PrivateKey.generate(.ES256)
            let user = try await client.registerWithTestKey(username: "pin-registrar", deviceKey: deviceKey)
            let bearer = try await client.signInWithKey(username: user.username, deviceKey: deviceKey).decode(TokenResponse.self).accessToken
            func register(_ authenticator: TestWebAuthnAuthenticator, _ tamper: (inout [String: JSONValue]) -> Void) async throws -> Reply {
                let options = try await Setup.post(client, "/v1/fido/registration/options", .object([:]), bearer: bearer)
                let challenge = try #require(options.json["publicKey"]?["challenge"]?.stringValue)
                guard case .object(var credential) = authenticator.register(challenge: challenge) else { throw CancellationError() }
                tamper(&credential)
                return try await Setup.post(
                    client, "/v1/fido/registration", .object(["ceremonyId": options.json["ceremonyId"] ?? .null, "credential": .object(credential)]),
                    bearer: bearer)
            }
            let pin = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test", aaguid: LatchAuthenticatorModel.pin.aaguid)
            pin.bindingKey = P256.Signing.PrivateKey()
            let otherKey = Base64URL.encode(P256.Signing.PrivateKey().publicKey.x963Representation)
            let tampers: [(inout [String: JSONValue]) -> Void] = [
                { credential in
                    // Another key, with the signature made by the real one: no proof of possession.
                    let signature = credential["pinBinding"]?["signature"] ?? .null
                    credential["pinBinding"] = .object(["publicKey": .string(otherKey), "signature": signature])
                },
                { $0["pinBinding"] = .object(["publicKey": .string(String(repeating: "A", count: 200)), "signature": "AA"]) },
                { $0["pinBinding"] = "not an object" },
            ]
            for tamper in tampers {
                let refused = try await register(pin, tamper)
                #expect(refused.code == "pin_binding_invalid", "\(String(decoding: refused.body, as: UTF8.self))")
            }
            let software = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test", aaguid: LatchAuthenticatorModel.software.aaguid)
            software.bindingKey = P256.Signing.PrivateKey()
            #expect(try await register(software) { _ in }.code == "invalid_input")
            #expect(try await client.deployment.count("authenticators") == 0)
            let registered = try await register(pin) { _ in }
            #expect(registered.status == .created, "\(String(decoding: registered.body, as: UTF8.self))")
            #expect(registered.json["pinStatus"]?["bound"] == true)
        }
    }

    @Test("An unbound PIN authenticator (registered before binding): maxAttempts+2 failures by anyone never lock it, they only cool it down; the owner signs in after the cool-down")
    func unboundOnlyCoolsDown() async throws {
        try await Deployment.make {
            $0.fidoPin.coolDowns = [0]
            $0.fidoPin.unboundCoolDowns = [0, 10, 60]
        }.run { client in
            let setup = try await Setup.make(client, name: "pin-legacy", bound: false)
            #expect(try await setup.status() == ["state": "unlocked", "remainingTries": 5, "coolDown": 0, "bound": false])
            for attempt in 1...(5 + 2) {
                let reply = try await Self.strangerSignIn(setup, .missing)
                #expect(reply.code == "invalid_grant")
                #expect(reply.json["pinStatus"]?["state"] == "lastAttemptFailed", "\(attempt): \(String(decoding: reply.body, as: UTF8.self))")
                #expect(reply.json["pinStatus"]?["remainingTries"] == 5)
                // Inside the cool-down even the right PIN waits (uncounted).
                if attempt >= 2 {
                    let waiting = try await setup.signIn(wrong: false)
                    #expect(waiting.code == "invalid_grant" && waiting.json["pinStatus"]?["coolDown"] != 0)
                }
                client.deployment.clock.advance(by: attempt >= 2 ? 60 : 0)
            }
            let status = try await setup.status()
            #expect(status["state"] == "unlocked" || status["state"] == "lastAttemptFailed")
            #expect(status["state"] != "lockedOut" && status["coolDown"] == 0)
            let owner = try await setup.signIn(wrong: false)
            #expect(owner.status == .ok, "\(String(decoding: owner.body, as: UTF8.self))")
            #expect(try await setup.status() == ["state": "unlocked", "remainingTries": 5, "coolDown": 0, "bound": false])
            let events = try await client.admin(.get, "/admin/v1/audit?type=authenticator.locked").decode(AuditPage.self).records
            #expect(events.isEmpty)
        }
    }
}
