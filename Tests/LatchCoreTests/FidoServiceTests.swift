import Crypto
import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

extension Engines {
    /// The FIDO relying party `latch.test` over this store (ceremonies of 300 s unless `configure` says otherwise).
    func fido(_ configure: (inout FidoSettings) -> Void = { _ in }) -> FidoService {
        var settings = FidoSettings.defaults(issuer: tokens.issuer)
        configure(&settings)
        return FidoService(
            store: store, settings: settings,
            ceremonies: FidoCeremonies(key: KeySealer.derivedKey(from: [UInt8](repeating: 5, count: 32), purpose: "fido test"), lifetime: settings.ceremonyLifetime),
            clock: clock.clock, random: random)
    }

    /// The token endpoint with the WebAuthn grant of `fido` only.
    func webAuthnEndpoint(_ fido: FidoService) -> TokenEndpoint {
        TokenEndpoint(
            grants: [WebAuthnGrant(fido: fido, scopes: ScopePolicy(allowed: tokens.allowedScopes), sessions: sessionOpener, clock: clock.clock)],
            clients: clients)
    }

    /// A WebAuthn user `id` (username the same), stored.
    @discardableResult
    func addUser(_ id: String) async throws -> User {
        let user = User(id: id, username: id, kind: .webauthn, issuer: nil, subject: nil, claims: [:], createdAt: now)
        struct Taken: Error {}
        try await store.write { $0.insertUser(user, ifTaken: Taken()) }
        return user
    }

    /// A software authenticator for this relying party, of the PIN model when `pin` (bound to its device unless `bound` is false).
    func authenticator(pin: Bool = false, bound: Bool = true) -> TestWebAuthnAuthenticator {
        let device = TestWebAuthnAuthenticator(
            rpID: "latch.test", origin: "https://latch.test", aaguid: pin ? LatchAuthenticatorModel.pin.aaguid : [UInt8](repeating: 0xAA, count: 16))
        if pin, bound { device.bindingKey = P256.Signing.PrivateKey() }
        return device
    }
}

/// Lower-case hex, as AAGUIDs are written in the policy.
func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// The challenge (base64url) of a ceremony's options.
func challenge(of options: JSONValue) throws -> String { try #require(options["publicKey"]?["challenge"]?.stringValue) }

/// FIDO authenticators on the in-memory store: registration ceremonies (single use, expiry, the user they were begun
/// for), the AAGUID policy and the per-user limit, PIN binding at registration, and PIN authenticators' lockout at the
/// WebAuthn grant — counted wrong PINs, cool-downs, the lock, an admin's unlock — with real P-256 WebAuthn bytes.
@Suite("FidoService on the in-memory store")
struct FidoServiceTests {
    /// Registers `device` for `user` through a fresh registration ceremony; returns the stored authenticator's info.
    @discardableResult
    static func register(_ device: TestWebAuthnAuthenticator, for user: User, with fido: FidoService, name: String? = nil) async throws -> FidoAuthenticatorInfo {
        let options = try await fido.registrationOptions(for: user)
        let ceremonyID = try #require(options["ceremonyId"]?.stringValue)
        return try await fido.register(for: user, ceremonyID: ceremonyID, credential: device.register(challenge: try challenge(of: options)), name: name)
    }

    /// Signs `user` in with `device` at the WebAuthn grant (a wrong PIN when `wrong`).
    static func signIn(_ engines: Engines, _ fido: FidoService, _ device: TestWebAuthnAuthenticator, user: User, wrong: Bool = false) async throws -> TokenResponse {
        let options = try await fido.authenticationOptions(username: user.username)
        device.signWith = wrong ? P256.Signing.PrivateKey() : nil
        let credential = try device.assert(challenge: try challenge(of: options), userHandle: nil)
        return try await engines.webAuthnEndpoint(fido).exchange([
            "grant_type": GrantType.webauthn, "ceremony_id": try #require(options["ceremonyId"]?.stringValue), "credential": credential,
        ])
    }

    /// The refusal `body` throws, expected to carry `code`.
    static func refusal(_ code: ErrorCode, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async -> LatchError? {
        do {
            try await body()
            Issue.record("expected \(code.rawValue), got success", sourceLocation: sourceLocation)
        } catch let error as LatchError {
            #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
            return error
        } catch {
            Issue.record("expected \(code.rawValue), got \(error)", sourceLocation: sourceLocation)
        }
        return nil
    }

    // MARK: Registration

    @Test("A registration stores the credential's key and model; the ceremony is single use; a credential id is registered once")
    func registration() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido()
        let user = try await engines.addUser("u1")
        let device = engines.authenticator()
        let options = try await fido.registrationOptions(for: user)
        let ceremonyID = try #require(options["ceremonyId"]?.stringValue)
        #expect(options["publicKey"]?["rp"]?["id"] == "latch.test" && options["publicKey"]?["excludeCredentials"] == .array([]))
        let credential = device.register(challenge: try challenge(of: options))
        let info = try await fido.register(for: user, ceremonyID: ceremonyID, credential: credential, name: "laptop")
        #expect(info.name == "laptop" && info.aaguid == hex(device.aaguid) && info.credentialId == device.credentialIDString && info.format == "none")
        #expect(info.pinStatus == nil, "not a PIN authenticator")
        let stored = try await engines.store.authenticators(userID: "u1")
        #expect(stored.map(\.id) == [info.id] && stored.first?.credentialID == Data(device.credentialID))
        // The same ceremony again: consumed.
        await expectCode(.invalidInput) { _ = try await fido.register(for: user, ceremonyID: ceremonyID, credential: credential, name: nil) }
        // The same credential id through a new ceremony: registered already. The next options exclude it.
        let again = try await fido.registrationOptions(for: user)
        #expect(again["publicKey"]?["excludeCredentials"]?.arrayValue?.count == 1)
        await expectCode(.conflict) {
            _ = try await fido.register(
                for: user, ceremonyID: try #require(again["ceremonyId"]?.stringValue), credential: device.register(challenge: try challenge(of: again)), name: nil)
        }
        #expect(try await engines.store.authenticators(userID: "u1").count == 1)
    }

    @Test("A ceremony is refused past its lifetime, for another user, for another kind, or answered with another challenge; nothing is stored")
    func ceremonyRefusals() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido()
        let alice = try await engines.addUser("alice")
        let bob = try await engines.addUser("bob")
        let device = engines.authenticator()
        let options = try await fido.registrationOptions(for: alice)
        let ceremonyID = try #require(options["ceremonyId"]?.stringValue)
        let credential = device.register(challenge: try challenge(of: options))
        await expectCode(.invalidInput) { _ = try await fido.register(for: bob, ceremonyID: ceremonyID, credential: credential, name: nil) }
        // An authentication ceremony's id is not a registration's.
        let signIn = try await fido.authenticationOptions(username: "alice")
        await expectCode(.invalidInput) {
            _ = try await fido.register(for: alice, ceremonyID: try #require(signIn["ceremonyId"]?.stringValue), credential: credential, name: nil)
        }
        // A tampered ceremony id (its expiry pushed out) fails the MAC.
        let parts = ceremonyID.split(separator: ".").map(String.init)
        let tampered = [parts[0], String(Int64(parts[1])! + 1000), parts[2], parts[3], parts[4]].joined(separator: ".")
        await expectCode(.invalidInput) { _ = try await fido.register(for: alice, ceremonyID: tampered, credential: credential, name: nil) }
        // Another ceremony's challenge.
        let other = try await fido.registrationOptions(for: alice)
        await expectCode(.webauthnClientDataInvalid) {
            _ = try await fido.register(for: alice, ceremonyID: try #require(other["ceremonyId"]?.stringValue), credential: credential, name: nil)
        }
        await expectCode(.invalidInput) { _ = try await fido.register(for: alice, ceremonyID: ceremonyID, credential: credential, name: "") }
        // Past the 300 s lifetime.
        engines.clock.advance(by: 300)
        await expectCode(.invalidInput) { _ = try await fido.register(for: alice, ceremonyID: ceremonyID, credential: credential, name: nil) }
        #expect(try await engines.store.authenticators(userID: "alice").isEmpty)
    }

    @Test("The AAGUID policy: a denied model, or one outside an allow list, is refused at registration (nothing stored); a model denied later stops signing in")
    func modelPolicy() async throws {
        let engines = try await Engines.make()
        let user = try await engines.addUser("u1")
        let device = engines.authenticator()
        let hex = hex(device.aaguid)
        await expectCode(.authenticatorNotAllowed) { _ = try await Self.register(device, for: user, with: engines.fido { $0.deniedAAGUIDs = [hex] }) }
        await expectCode(.authenticatorNotAllowed) {
            _ = try await Self.register(device, for: user, with: engines.fido { $0.allowedAAGUIDs = [LatchAuthenticatorModel.face.rawValue] })
        }
        #expect(try await engines.store.authenticators(userID: "u1").isEmpty)
        try await Self.register(device, for: user, with: engines.fido { $0.allowedAAGUIDs = [hex] })
        #expect(try await Self.signIn(engines, engines.fido(), device, user: user).accessToken.isEmpty == false)
        // Denied since: the token endpoint answers invalid_grant, naming the policy's code in its detail.
        let refused = await Self.refusal(.invalidGrant) { _ = try await Self.signIn(engines, engines.fido { $0.deniedAAGUIDs = [hex] }, device, user: user) }
        #expect(refused?.detail == ErrorCode.authenticatorNotAllowed.rawValue)
    }

    @Test("The most authenticators per user: the next registration's options are a conflict")
    func perUserLimit() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido { $0.maximumAuthenticatorsPerUser = 2 }
        let user = try await engines.addUser("u1")
        for _ in 1...2 { try await Self.register(engines.authenticator(), for: user, with: fido) }
        await expectCode(.conflict) { _ = try await fido.registrationOptions(for: user) }
        try await fido.delete(try #require(try await engines.store.authenticators(userID: "u1").first?.id), for: user)
        _ = try await fido.registrationOptions(for: user)
        await expectCode(.notFound) { try await fido.delete("no-such-id", for: user) }
        await expectCode(.notFound) { try await fido.rename("no-such-id", for: user, to: "x") }
    }

    @Test("PIN binding at registration: a forged binding signature is pin_binding_invalid; a binding on another model is invalid_input; nothing stored")
    func pinBindingAtRegistration() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido()
        let user = try await engines.addUser("u1")
        // A binding whose signature is by another key than its public key.
        let forged = engines.authenticator(pin: true)
        let options = try await fido.registrationOptions(for: user)
        var credential = forged.register(challenge: try challenge(of: options))
        let otherKey = P256.Signing.PrivateKey()
        let signature = try otherKey.signature(for: Data("not the registration message".utf8)).rawRepresentation
        credential = .object(
            (credential.objectValue ?? [:]).merging(
                ["pinBinding": .object([
                    "publicKey": .string(Base64URL.encode(try #require(forged.bindingKey).publicKey.x963Representation)),
                    "signature": .string(Base64URL.encode(signature)),
                ])]) { $1 })
        await expectCode(.pinBindingInvalid) {
            _ = try await fido.register(for: user, ceremonyID: try #require(options["ceremonyId"]?.stringValue), credential: credential, name: nil)
        }
        let plain = engines.authenticator()
        plain.bindingKey = P256.Signing.PrivateKey()
        await expectCode(.invalidInput) { _ = try await Self.register(plain, for: user, with: fido) }
        #expect(try await engines.store.authenticators(userID: "u1").isEmpty)
        // A real binding: stored, and the PIN status says bound.
        let info = try await Self.register(engines.authenticator(pin: true), for: user, with: fido)
        #expect(info.pinStatus?.bound == true && info.pinStatus?.state == FidoPinStatus.unlocked)
        #expect(try await engines.store.authenticators(userID: "u1").first?.pinBindingKey != nil)
    }

    // MARK: PIN lockout

    @Test("Wrong PINs count down with the policy's cool-downs; inside one even the right PIN is refused uncounted; the right PIN clears the count")
    func pinCoolDowns() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido { $0.pin.coolDowns = [0, 10, 30] }
        let user = try await engines.addUser("u1")
        let device = engines.authenticator(pin: true)
        try await Self.register(device, for: user, with: fido)
        let first = await Self.refusal(.invalidGrant) { _ = try await Self.signIn(engines, fido, device, user: user, wrong: true) }
        #expect(first?.members["pinStatus"] == ["state": "lastAttemptFailed", "remainingTries": 4, "coolDown": 0, "bound": true])
        let second = await Self.refusal(.invalidGrant) { _ = try await Self.signIn(engines, fido, device, user: user, wrong: true) }
        #expect(second?.members["pinStatus"]?["coolDown"] == 10)
        // Inside the cool-down: refused before anything is verified or counted.
        let waiting = await Self.refusal(.invalidGrant) { _ = try await Self.signIn(engines, fido, device, user: user) }
        #expect(waiting?.members["pinStatus"]?["remainingTries"] == 3)
        #expect(try await engines.store.authenticators(userID: "u1").first?.failedAttempts == 2)
        engines.clock.advance(by: 4)
        #expect(try await fido.pinStatus(credentialID: device.credentialIDString).coolDown == 6)
        engines.clock.advance(by: 6)
        _ = try await Self.signIn(engines, fido, device, user: user)
        let cleared = try #require(try await engines.store.authenticators(userID: "u1").first)
        #expect(cleared.failedAttempts == 0 && cleared.signCount == device.counter)
        #expect(try await fido.pinStatus(credentialID: device.credentialIDString).state == FidoPinStatus.unlocked)
    }

    @Test("maxAttempts wrong PINs lock a bound PIN authenticator: the right PIN is refused, nothing more counted; an admin's unlock restores it")
    func pinLockout() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido {
            $0.pin.maxAttempts = 3
            $0.pin.coolDowns = [0]
        }
        let user = try await engines.addUser("u1")
        let device = engines.authenticator(pin: true)
        let info = try await Self.register(device, for: user, with: fido)
        for attempt in 1...3 {
            let refused = await Self.refusal(.invalidGrant) { _ = try await Self.signIn(engines, fido, device, user: user, wrong: true) }
            #expect(refused?.members["pinStatus"]?["remainingTries"] == .int(Int64(3 - attempt)))
        }
        let locked = await Self.refusal(.invalidGrant) { _ = try await Self.signIn(engines, fido, device, user: user) }
        #expect(locked?.members["pinStatus"]?["state"] == "lockedOut")
        #expect(try await engines.store.authenticators(userID: "u1").first?.failedAttempts == 3)
        let events = try await engines.store.auditRecords(matching: AuditQuery(kinds: ["authenticator.locked"], subject: "u1"))
        #expect(events.count == 1)
        // Unlock: the wrong id is not found; the right one clears the count.
        await expectCode(.notFound) { _ = try await fido.unlock(userID: "u1", authenticatorID: "nope") }
        #expect(try await fido.unlock(userID: "u1", authenticatorID: info.id).pinStatus?.state == FidoPinStatus.unlocked)
        _ = try await Self.signIn(engines, fido, device, user: user)
    }

    @Test("An unbound PIN authenticator never locks: maxAttempts+2 failures only cool it down, then the owner signs in")
    func unboundNeverLocks() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido {
            $0.pin.maxAttempts = 2
            $0.pin.unboundCoolDowns = [0, 5]
        }
        let user = try await engines.addUser("u1")
        let device = engines.authenticator(pin: true, bound: false)
        try await Self.register(device, for: user, with: fido)
        for _ in 1...4 {
            let refused = await Self.refusal(.invalidGrant) { _ = try await Self.signIn(engines, fido, device, user: user, wrong: true) }
            #expect(refused?.members["pinStatus"]?["state"] == "lastAttemptFailed" && refused?.members["pinStatus"]?["bound"] == false)
            engines.clock.advance(by: 5)
        }
        #expect(try await engines.store.authenticators(userID: "u1").first?.failedAttempts == 4)
        _ = try await Self.signIn(engines, fido, device, user: user)
    }

    @Test("A bound PIN authenticator's assertion without its binding is pin_binding_invalid and not counted as a wrong PIN")
    func missingBindingNotCounted() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido()
        let user = try await engines.addUser("u1")
        let device = engines.authenticator(pin: true)
        try await Self.register(device, for: user, with: fido)
        device.omitBinding = true
        let refused = await Self.refusal(.invalidGrant) { _ = try await Self.signIn(engines, fido, device, user: user, wrong: true) }
        #expect(refused?.detail == ErrorCode.pinBindingInvalid.rawValue)
        #expect(try await engines.store.authenticators(userID: "u1").first?.failedAttempts == 0)
    }

    // MARK: PIN change

    @Test("A PIN change proves the old PIN (a wrong one is counted, nothing swapped) and replaces the key under the same credential id, once")
    func pinChange() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido()
        let user = try await engines.addUser("u1")
        let device = engines.authenticator(pin: true)
        let info = try await Self.register(device, for: user, with: fido)
        let oldKey = try #require(try await engines.store.authenticators(userID: "u1").first?.publicKeyCOSE)
        let newKey = P256.Signing.PrivateKey()
        /// One change: the old PIN's assertion (a wrong one when `wrong`) and `registrar`'s registration of `key`.
        func change(to key: P256.Signing.PrivateKey?, wrong: Bool = false, registrar: TestWebAuthnAuthenticator? = nil) async throws -> FidoAuthenticatorInfo {
            let options = try await fido.pinChangeOptions(for: user, authenticatorID: info.id)
            let challenge = try challenge(of: options)
            device.signWith = wrong ? P256.Signing.PrivateKey() : nil
            let assertion = try device.assertion(challenge: challenge, userHandle: nil)
            device.signWith = nil
            return try await fido.changePin(
                for: user, ceremonyID: try #require(options["ceremonyId"]?.stringValue), authenticatorID: info.id, assertion: assertion,
                credential: (registrar ?? device).register(challenge: challenge, key: key))
        }
        await expectCode(.pinAttemptFailed) { _ = try await change(to: newKey, wrong: true) }
        var stored = try #require(try await engines.store.authenticators(userID: "u1").first)
        #expect(stored.failedAttempts == 1 && stored.publicKeyCOSE == oldKey)
        // The same key again, or a key under another credential id: refused, nothing swapped.
        await expectCode(.invalidInput) { _ = try await change(to: nil) }
        stored = try #require(try await engines.store.authenticators(userID: "u1").first)
        #expect(stored.publicKeyCOSE == oldKey)
        // The old PIN was right, so its reserved attempt goes back, as the WebAuthn grant gives it back
        // (releaseVerifiedPinAttempt): only the earlier wrong PIN counts.
        #expect(stored.failedAttempts == 1)
        engines.clock.advance(by: 60)
        await expectCode(.invalidInput) { _ = try await change(to: newKey, registrar: engines.authenticator(pin: true)) }
        #expect(try await engines.store.authenticators(userID: "u1").first?.publicKeyCOSE == oldKey)
        engines.clock.advance(by: 60)
        let changed = try await change(to: newKey)
        #expect(changed.id == info.id && changed.pinStatus?.state == FidoPinStatus.unlocked)
        stored = try #require(try await engines.store.authenticators(userID: "u1").first)
        #expect(stored.publicKeyCOSE != oldKey && stored.failedAttempts == 0 && stored.credentialID == Data(device.credentialID))
        // The old PIN is now a wrong one; the new key signs in.
        await expectCode(.invalidGrant) { _ = try await Self.signIn(engines, fido, device, user: user) }
        device.signWith = newKey
        _ = try await engines.webAuthnEndpoint(fido).exchange(try await Self.signInParameters(fido, device, user: user))
        // Only PIN authenticators of the user have a PIN to change.
        await expectCode(.notFound) { _ = try await fido.pinChangeOptions(for: user, authenticatorID: "nope") }
        let plain = try await Self.register(engines.authenticator(), for: user, with: fido)
        await expectCode(.invalidInput) { _ = try await fido.pinChangeOptions(for: user, authenticatorID: plain.id) }
    }

    /// The WebAuthn grant's parameters for `device`'s assertion (signed with whatever key it holds now).
    static func signInParameters(_ fido: FidoService, _ device: TestWebAuthnAuthenticator, user: User) async throws -> [String: String] {
        let options = try await fido.authenticationOptions(username: user.username)
        return [
            "grant_type": GrantType.webauthn, "ceremony_id": try #require(options["ceremonyId"]?.stringValue),
            "credential": try device.assert(challenge: try challenge(of: options), userHandle: nil),
        ]
    }

    // MARK: Sign-in

    @Test("A counter that goes back is refused and recorded once; the ceremony is consumed, so the replay is refused without a second record")
    func counterRegression() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido()
        let user = try await engines.addUser("u1")
        let device = engines.authenticator()
        try await Self.register(device, for: user, with: fido)
        device.counter = 5
        _ = try await Self.signIn(engines, fido, device, user: user)
        let options = try await fido.authenticationOptions(username: "u1")
        let parameters = [
            "grant_type": GrantType.webauthn, "ceremony_id": try #require(options["ceremonyId"]?.stringValue),
            "credential": try device.assert(challenge: try challenge(of: options), userHandle: nil, counter: 3),
        ]
        let refused = await Self.refusal(.invalidGrant) { _ = try await engines.webAuthnEndpoint(fido).exchange(parameters) }
        #expect(refused?.detail == ErrorCode.webauthnCounterRegressed.rawValue && refused?.verifiedSubject == "u1")
        await expectCode(.invalidGrant) { _ = try await engines.webAuthnEndpoint(fido).exchange(parameters) }
        let flagged = try await engines.store.auditRecords(matching: AuditQuery(kinds: ["authenticator.counter_regressed"]))
        #expect(flagged.count == 1)
        #expect(try await engines.store.authenticators(userID: "u1").first?.signCount == 6)
    }

    @Test("A discoverable ceremony needs the credential's user handle; a username ceremony refuses another user's credential")
    func userBinding() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido()
        let alice = try await engines.addUser("alice")
        _ = try await engines.addUser("bob")
        let device = engines.authenticator()
        try await Self.register(device, for: alice, with: fido)
        let endpoint = engines.webAuthnEndpoint(fido)
        func attempt(username: String?, userHandle: String?) async throws {
            let options = try await fido.authenticationOptions(username: username)
            _ = try await endpoint.exchange([
                "grant_type": GrantType.webauthn, "ceremony_id": try #require(options["ceremonyId"]?.stringValue),
                "credential": try device.assert(challenge: try challenge(of: options), userHandle: userHandle),
            ])
        }
        await expectCode(.invalidGrant) { try await attempt(username: nil, userHandle: nil) }
        await expectCode(.invalidGrant) { try await attempt(username: nil, userHandle: Base64URL.encode(Data("bob".utf8))) }
        await expectCode(.invalidGrant) { try await attempt(username: "bob", userHandle: nil) }
        try await attempt(username: nil, userHandle: Base64URL.encode(Data("alice".utf8)))
        #expect(try await engines.store.authenticators(userID: "alice").first?.signCount == device.counter)
    }

    @Test("Sign-up: disabled is challenge_type_disabled; a taken username is already_registered; otherwise a new user id is bound")
    func signUpOptions() async throws {
        let engines = try await Engines.make()
        _ = try await engines.addUser("taken")
        await expectCode(.challengeTypeDisabled) { _ = try await engines.fido { $0.signUpEnabled = false }.signUpOptions(username: "new") }
        await expectCode(.alreadyRegistered) { _ = try await engines.fido().signUpOptions(username: "Taken") }
        await expectCode(.invalidInput) { _ = try await engines.fido().signUpOptions(username: "") }
        let options = try await engines.fido().signUpOptions(username: "Newcomer")
        #expect(options["publicKey"]?["user"]?["name"] == "newcomer")
        #expect(options["publicKey"]?["authenticatorSelection"]?["residentKey"] == "required")
    }

    @Test("PIN status by credential id: not_found for unknown ids and non-PIN authenticators, invalid_input for what is not base64url")
    func pinStatusLookup() async throws {
        let engines = try await Engines.make()
        let fido = engines.fido()
        let user = try await engines.addUser("u1")
        let plain = engines.authenticator()
        try await Self.register(plain, for: user, with: fido)
        await expectCode(.notFound) { _ = try await fido.pinStatus(credentialID: plain.credentialIDString) }
        await expectCode(.notFound) { _ = try await fido.pinStatus(credentialID: "AAAAAAAAAAAAAAAAAAAAAA") }
        await expectCode(.invalidInput) { _ = try await fido.pinStatus(credentialID: "%%") }
    }
}
