import Crypto
import Foundation
import LatchApp
import LatchCBOR
import LatchClient
import LatchCore
import LatchJOSE
import LatchModel
import LatchSQLite
import LatchTesting
import Testing

/// Plays the OS's passkey sheet (what iOS's `ASAuthorizationPlatformPublicKeyCredentialProvider` does for an app whose
/// associated domains name the relying party): a P-256 key per passkey, kept like a keychain; client data with the
/// origin iOS gives apps, `https://<rpId>`; authenticator data with the flags of a synced passkey (UP, UV, BE, BS), a
/// zero AAGUID and no counter; a `none` or `packed` self attestation; assertions over authData ‖ SHA-256(clientData),
/// with the stored user handle. A discoverable sign-in picks the newest passkey of the relying party, as a user
/// tapping the first one offered. `failNext` makes the next sheet misbehave.
actor FakePasskeyController: PasskeyController {
    struct Passkey: Sendable {
        var rpID: String
        var credentialID: Data
        var key: P256.Signing.PrivateKey
        var userID: Data
        var userName: String
    }

    /// What the next sheet does instead of its job.
    enum Fault: Sendable {
        /// The user closes the sheet.
        case cancel
        /// The client data carries this challenge instead of the server's.
        case challenge(Data)
        /// The authenticator data is for this relying party id instead of the request's.
        case rpID(String)
        /// The client data names this origin.
        case origin(String)
        /// The client data is padded past what the SDK accepts.
        case oversizedClientData
        /// An assertion's signature is 2 KiB.
        case oversizedSignature
    }

    enum Attestation: Sendable { case none, packedSelf }

    let attestation: Attestation
    private(set) var passkeys: [Passkey] = []
    private(set) var registrationRequests: [PasskeyRegistrationRequest] = []
    private(set) var assertionRequests: [PasskeyAssertionRequest] = []
    /// One entry per coming sheet: nil behaves.
    private var faults: [Fault?] = []

    init(attestation: Attestation = .none) { self.attestation = attestation }

    /// The sheet after `skipping` more well-behaved ones misbehaves with `fault`.
    func failNext(_ fault: Fault, skipping: Int = 0) { faults += [Fault?](repeating: nil, count: skipping) + [fault] }

    /// The credential ids of the passkeys for `userName`, oldest first.
    func credentialIDs(of userName: String) -> [Data] { passkeys.filter { $0.userName == userName }.map(\.credentialID) }

    func createPasskey(_ request: PasskeyRegistrationRequest) async throws(UserClientError) -> PasskeyRegistration {
        registrationRequests.append(request)
        let fault = nextFault()
        if case .cancel? = fault { throw .cancelled }
        let key = P256.Signing.PrivateKey()
        let credentialID = Data((0..<20).map { _ in UInt8.random(in: 0...255) })
        let clientData = Self.clientData("webauthn.create", request.challenge, origin: "https://\(request.relyingPartyID)", fault)
        let raw = Array(key.publicKey.rawRepresentation)
        let coseKey = CBORValue.map([
            .init(.int(1), .int(2)), .init(.int(3), .int(-7)), .init(.int(-1), .int(1)), .init(.int(-2), .bytes(Array(raw[..<32]))),
            .init(.int(-3), .bytes(Array(raw[32...]))),
        ])
        // UP | UV | BE | BS | AT, counter 0, AAGUID 0 (iCloud Keychain on iOS 16).
        var authData = Self.rpIDHash(request.relyingPartyID, fault) + [0x5D, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 16)
        authData += [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)] + Array(credentialID) + coseKey.encoded
        let statement: CBORValue
        switch attestation {
        case .none: statement = .map([])
        case .packedSelf:
            let signature = try Self.sign(authData + Array(SHA256.hash(data: clientData)), with: key)
            statement = .map([.init(.text("alg"), .int(-7)), .init(.text("sig"), .bytes(Array(signature)))])
        }
        let object = CBORValue.map([
            .init(.text("fmt"), .text(attestation == .none ? "none" : "packed")), .init(.text("attStmt"), statement),
            .init(.text("authData"), .bytes(authData)),
        ])
        // The OS keeps the passkey whatever the server later says of it.
        passkeys.append(Passkey(rpID: request.relyingPartyID, credentialID: credentialID, key: key, userID: request.userID, userName: request.userName))
        return PasskeyRegistration(credentialID: credentialID, rawClientDataJSON: Data(clientData), rawAttestationObject: Data(object.encoded))
    }

    func assertPasskey(_ request: PasskeyAssertionRequest) async throws(UserClientError) -> PasskeyAssertion {
        assertionRequests.append(request)
        let fault = nextFault()
        if case .cancel? = fault { throw .cancelled }
        let candidates = passkeys.filter {
            $0.rpID == request.relyingPartyID && (request.allowedCredentialIDs.isEmpty || request.allowedCredentialIDs.contains($0.credentialID))
        }
        // iOS answers "canceled" when it has no passkey to offer.
        guard let passkey = candidates.last else { throw .cancelled }
        let clientData = Self.clientData("webauthn.get", request.challenge, origin: "https://\(request.relyingPartyID)", fault)
        let authData = Self.rpIDHash(request.relyingPartyID, fault) + [0x1D, 0, 0, 0, 0]
        var signature = try Self.sign(authData + Array(SHA256.hash(data: clientData)), with: passkey.key)
        if case .oversizedSignature? = fault { signature = Data(repeating: 0x30, count: 2048) }
        return PasskeyAssertion(
            credentialID: passkey.credentialID, rawClientDataJSON: Data(clientData), rawAuthenticatorData: Data(authData), signature: signature,
            userID: passkey.userID)
    }

    private func nextFault() -> Fault? { faults.isEmpty ? nil : faults.removeFirst() }

    /// One passkey creation outside any server ceremony, for the message tests.
    static func registration(rpID: String = "login.latch.test") async throws -> (PasskeyRegistrationRequest, PasskeyRegistration) {
        let request = PasskeyRegistrationRequest(
            relyingPartyID: rpID, challenge: Data(repeating: 7, count: 32), userID: Data("user-1".utf8), userName: "ada")
        return (request, try await FakePasskeyController().createPasskey(request))
    }

    /// Client data as iOS writes it: type, challenge (base64url), origin.
    static func clientData(_ type: String, _ challenge: Data, origin: String, _ fault: Fault?) -> [UInt8] {
        var challenge = challenge
        var origin = origin
        if case .challenge(let other)? = fault { challenge = other }
        if case .origin(let other)? = fault { origin = other }
        var text = #"{"type":"\#(type)","challenge":"\#(Base64URL.encode(challenge))","origin":"\#(origin)"}"#
        if case .oversizedClientData? = fault { text += String(repeating: " ", count: PasskeyMessages.maximumClientDataLength) }
        return Array(text.utf8)
    }

    static func rpIDHash(_ rpID: String, _ fault: Fault?) -> [UInt8] {
        if case .rpID(let other)? = fault { return Array(SHA256.hash(data: Array(other.utf8))) }
        return Array(SHA256.hash(data: Array(rpID.utf8)))
    }

    static func sign(_ message: [UInt8], with key: P256.Signing.PrivateKey) throws(UserClientError) -> Data {
        do {
            return try key.signature(for: message).derRepresentation
        } catch {
            throw .invalidInput("signing failed: \(error)")
        }
    }
}

/// A key store that records the names written, over an in-memory one.
final class WriteRecordingKeyStore: KeyStore, @unchecked Sendable {
    private let inner = InMemoryKeyStore()
    private let lock = NSLock()
    private var names: [String] = []

    var written: [String] {
        lock.lock()
        defer { lock.unlock() }
        return names
    }

    func value(for name: String) throws -> Data? { try inner.value(for: name) }
    func set(_ value: Data, for name: String) throws {
        lock.lock()
        names.append(name)
        lock.unlock()
        try inner.set(value, for: name)
    }
    func remove(_ name: String) throws { try inner.remove(name) }
    func removeAll() throws { try inner.removeAll() }
}

/// A transport that counts requests by path and can lose the next answer to a path (after the server handled it).
final class PasskeyTestTransport: HTTPTransport, @unchecked Sendable {
    private let inner = URLSessionTransport()
    private let lock = NSLock()
    private var counts: [String: Int] = [:]
    private var losing: Set<String> = []

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        let path = request.url.path
        record(path)
        let response = try await inner.send(request)
        if takeLoss(path) { throw URLError(.networkConnectionLost) }
        return response
    }

    func count(_ path: String) -> Int {
        lock.lock()
        defer { lock.unlock() }
        return counts[path] ?? 0
    }

    func loseNextAnswer(to path: String) {
        lock.lock()
        losing.insert(path)
        lock.unlock()
    }

    private func record(_ path: String) {
        lock.lock()
        counts[path, default: 0] += 1
        lock.unlock()
    }

    private func takeLoss(_ path: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return losing.remove(path) != nil
    }
}

@Suite("UserClient passkeys through the OS (a fake sheet) against a live server", .serialized)
struct PasskeyClientTests {
    /// The relying party id: a domain of its own, as a deployment's `fido.rpId` (not the loopback issuer's host).
    static let rpID = "login.latch.test"
    static let appID = "ABCDE12345.com.example.passkeys"

    /// A live server with the relying party id set and, unless `registerApp` is false, an iOS app registered: what makes
    /// the server accept the app origin `https://<rpId>`.
    static func run(registerApp: Bool = true, _ body: @Sendable @escaping (LiveLatch) async throws -> Void) async throws {
        try await LiveLatch.run(configure: { $0.fidoRPID = rpID }) { latch in
            if registerApp { try await Self.registerApp(latch) }
            try await body(latch)
        }
    }

    static func registerApp(_ latch: LiveLatch) async throws {
        let patch = AdminClientPatch(ios: AdminIOSEvidence(appIds: [appID], appAttestEnvironment: "production"))
        let response = try await URLSessionTransport().send(
            HTTPRequestData(
                method: "PATCH", url: latch.url.appendingPathComponent("admin/v1/clients/default"),
                headers: ["Authorization": "Bearer \(LiveLatch.adminToken)", "Content-Type": "application/json"], body: try JSONEncoder().encode(patch)))
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
    }

    static func device(_ latch: LiveLatch, store: any KeyStore = InMemoryKeyStore(), transport: any HTTPTransport = URLSessionTransport()) throws -> UserClient {
        try UserClient(configuration: latch.configuration(), keyStore: store, transport: transport)
    }

    @Test("Sign up with a passkey (the app origin is accepted once an iOS app is registered), then sign in discoverably and by username, on this device and a new one")
    func signUpAndSignIn() async throws {
        try await Self.run(registerApp: false) { latch in
            let sheet = FakePasskeyController()
            let client = try Self.device(latch)
            // No iOS app yet: the server accepts only its web origin, and refuses the app's.
            await #expect(throws: UserClientError.server(code: "webauthn_client_data_invalid", message: nil)) {
                try await client.signUpWithPasskey(controller: sheet, username: "ada")
            }
            #expect(await client.isRegistered() == false)
            #expect(try await latch.store.users(after: nil, limit: 10).isEmpty)

            try await Self.registerApp(latch)
            // The domain publishes the app for iOS's webcredentials check.
            let association = try await URLSessionTransport().send(
                HTTPRequestData(method: "GET", url: latch.url.appendingPathComponent(".well-known/apple-app-site-association")))
            #expect(try JSONValue.parse(association.body)["webcredentials"]?["apps"] == [.string(Self.appID)])

            let tokens = try await client.signUpWithPasskey(controller: sheet, username: "Ada", displayName: "Ada Lovelace")
            let created = try #require(await sheet.registrationRequests.last)
            #expect(created.relyingPartyID == Self.rpID && created.userName == "ada" && created.displayName == "Ada Lovelace")
            #expect(created.challenge.count >= 16 && created.userVerification == .preferred && created.excludedCredentialIDs.isEmpty)
            let subject = try #require(await client.subject())
            #expect(created.userID == Data(subject.utf8), "the user handle is the server's user id")
            #expect(await client.isRegistered())
            #expect(await client.userName() == "ada")
            // The sign-in after the sign-up offered only the new passkey.
            let credentialID = try #require(await sheet.credentialIDs(of: "ada").last)
            #expect(await sheet.assertionRequests.map(\.allowedCredentialIDs) == [[credentialID]])
            // DPoP-bound to the client's own key, as every sign-in; amr of a synced passkey, user verified.
            #expect(tokens.tokenType == "DPoP" && tokens.dpopKeyThumbprint != nil)
            #expect(tokens.dpopKeyThumbprint == (await client.dpopKeyThumbprint()))
            #expect(try await client.userClaim("amr") == ["swk", "user", "mfa"])
            #expect(try await client.userClaim("sub") == .string(subject))

            // Discoverable: no username, the sheet may offer any passkey; the user handle names the user.
            try await client.signOut()
            _ = try await client.signInWithPasskey(controller: sheet)
            #expect(await sheet.assertionRequests.last?.allowedCredentialIDs == [])
            #expect(try await client.userClaim("username") == "ada")
            // By username: the server lists the user's passkeys.
            try await client.signOut()
            _ = try await client.signInWithPasskey(controller: sheet, username: "ada")
            #expect(await sheet.assertionRequests.last?.allowedCredentialIDs == [credentialID])
            #expect(await client.isSignedIn())

            // The passkey synced to a new device: a discoverable sign-in makes the user this device's registration.
            let other = try Self.device(latch)
            #expect(await other.isRegistered() == false)
            _ = try await other.signInWithPasskey(controller: sheet)
            #expect(await other.subject() == subject)
            #expect(await other.userName() == "ada")
            #expect(await other.isSignedIn())
            await #expect(throws: UserClientError.alreadyRegistered) { try await other.signUpWithPasskey(controller: sheet) }
            #expect(try await latch.store.users(after: nil, limit: 10).count == 1)
        }
    }

    @Test("A sign-up whose answer was lost is resent as it was: the same user, no second passkey; packed self attestation is kept")
    func signUpRetry() async throws {
        try await Self.run { latch in
            let transport = PasskeyTestTransport()
            let sheet = FakePasskeyController(attestation: .packedSelf)
            let client = try Self.device(latch, transport: transport)
            transport.loseNextAnswer(to: "/v1/registrations")
            await #expect(throws: UserClientError.network(underlying: URLError(.networkConnectionLost))) {
                try await client.signUpWithPasskey(controller: sheet, username: "grace")
            }
            #expect(await client.isRegistered() == false)
            _ = try await client.signUpWithPasskey(controller: sheet, username: "grace")
            #expect(await sheet.registrationRequests.count == 1, "the retry made no new passkey")
            #expect(transport.count("/v1/registrations") == 2)
            #expect(try await latch.store.users(after: nil, limit: 10).count == 1)
            #expect(try await client.fidoAuthenticators().map(\.format) == ["packed"])
        }
    }

    @Test("A signed-in user adds passkeys: the second registration excludes the first; sign-in by username offers both")
    func registerWhileSignedIn() async throws {
        try await Self.run { latch in
            let sheet = FakePasskeyController()
            let client = try Self.device(latch)
            // Not signed in: refused before any sheet.
            await #expect(throws: UserClientError.notSignedIn) { try await client.registerPasskey(controller: sheet) }
            let username = try await client.registerWithAuthenticationProvider(try latch.testProvider())
            _ = try await client.signInWithKey()
            // A name the server would refuse is refused before the sheet (no orphan passkey on the device).
            await #expect(throws: UserClientError.invalidInput("")) { try await client.registerPasskey(controller: sheet, name: "") }
            #expect(await sheet.registrationRequests.isEmpty)

            let phone = try await client.registerPasskey(controller: sheet, name: "iPhone")
            let tablet = try await client.registerPasskey(controller: sheet, name: "iPad")
            #expect(phone.name == "iPhone" && tablet.name == "iPad" && phone.backupEligible && phone.format == "none")
            let ids = await sheet.credentialIDs(of: username)
            #expect(ids.count == 2)
            #expect(await sheet.registrationRequests.map(\.excludedCredentialIDs) == [[], [ids[0]]])
            #expect(await sheet.registrationRequests.allSatisfy { $0.relyingPartyID == Self.rpID })
            #expect(Set(try await client.fidoAuthenticators().compactMap(\.credentialId)) == Set(ids.map { Base64URL.encode($0) }))

            try await client.signOut()
            _ = try await client.signInWithPasskey(controller: sheet, username: username)
            #expect(Set(try #require(await sheet.assertionRequests.last).allowedCredentialIDs) == Set(ids))
            #expect(try await client.userClaim("amr") == ["swk", "user", "mfa"])
            // The device key registration is untouched: it still signs in.
            _ = try await client.signInWithKey()
            #expect(try await client.userClaim("username") == .string(username))
        }
    }

    @Test("A closed sheet writes nothing and sends nothing (sign-up, registration, sign-in); a closed sign-in after a sign-up keeps the registration only")
    func cancelledSheet() async throws {
        try await Self.run { latch in
            let transport = PasskeyTestTransport()
            let store = WriteRecordingKeyStore()
            let client = try Self.device(latch, store: store, transport: transport)
            let sheet = FakePasskeyController()
            await sheet.failNext(.cancel)
            await #expect(throws: UserClientError.cancelled) { try await client.signUpWithPasskey(controller: sheet, username: "lin") }
            #expect(store.written.isEmpty, "written: \(store.written)")
            #expect(transport.count("/v1/fido/sign-up/options") == 1 && transport.count("/v1/registrations") == 0)
            #expect(await client.isRegistered() == false)
            #expect(try await latch.store.users(after: nil, limit: 10).isEmpty)

            // The sign-up's second sheet (its sign-in) closed: the user is registered here, without tokens.
            await sheet.failNext(.cancel, skipping: 1)
            await #expect(throws: UserClientError.cancelled) { try await client.signUpWithPasskey(controller: sheet, username: "lin") }
            #expect(await client.isRegistered())
            #expect(await client.userName() == "lin")
            #expect(try store.value(for: "tokens") == nil && store.value(for: "pending-passkey-sign-up") == nil)
            #expect(await client.signInStatus == .notSignedIn(.signInFailed))
            #expect(transport.count("/oauth2/token") == 0)
            _ = try await client.signInWithPasskey(controller: sheet)
            #expect(await client.isSignedIn())

            // Registration while signed in, closed: nothing sent to finish it, nothing written, nothing registered.
            var written = store.written.count
            await sheet.failNext(.cancel)
            await #expect(throws: UserClientError.cancelled) { try await client.registerPasskey(controller: sheet, name: "spare") }
            #expect(transport.count("/v1/fido/registration") == 0 && store.written.count == written)
            #expect(try await client.fidoAuthenticators().count == 1)

            // Sign-in, closed: no token request, no tokens.
            try await client.signOut()
            written = store.written.count
            let tokenRequests = transport.count("/oauth2/token")
            await sheet.failNext(.cancel)
            await #expect(throws: UserClientError.cancelled) { try await client.signInWithPasskey(controller: sheet) }
            #expect(transport.count("/oauth2/token") == tokenRequests && store.written.count == written)
            #expect(await client.isSignedIn() == false)
            #expect(await client.refreshToken() == nil)
        }
    }

    @Test("The server refuses a passkey answer for another challenge, relying party or origin — registration and sign-in")
    func mismatchRefusedByServer() async throws {
        try await Self.run { latch in
            let transport = PasskeyTestTransport()
            let store = InMemoryKeyStore()
            let client = try Self.device(latch, store: store, transport: transport)
            let sheet = FakePasskeyController()
            let faults: [(FakePasskeyController.Fault, String)] = [
                (.challenge(Data(repeating: 1, count: 32)), "webauthn_client_data_invalid"), (.rpID("evil.example"), "webauthn_rp_mismatch"),
                (.origin("https://evil.example"), "webauthn_client_data_invalid"),
            ]
            for (index, (fault, code)) in faults.enumerated() {
                await sheet.failNext(fault)
                await #expect(throws: UserClientError.server(code: code, message: nil)) {
                    try await client.signUpWithPasskey(controller: sheet, username: "mae")
                }
                // The server saw it and refused it; the refused sign-up is not kept for a retry.
                #expect(transport.count("/v1/registrations") == index + 1)
                #expect(try store.value(for: "pending-passkey-sign-up") == nil)
            }
            #expect(await client.isRegistered() == false)
            #expect(try await latch.store.users(after: nil, limit: 10).isEmpty)

            _ = try await client.signUpWithPasskey(controller: sheet, username: "mae")
            try await client.signOut()
            let tokenRequests = transport.count("/oauth2/token")
            for fault in faults.map(\.0) {
                await sheet.failNext(fault)
                await #expect(throws: UserClientError.notAuthorized) { try await client.signInWithPasskey(controller: sheet, username: "mae") }
                #expect(await client.isSignedIn() == false)
            }
            #expect(transport.count("/oauth2/token") == tokenRequests + faults.count, "each refused assertion reached the server")
            _ = try await client.signInWithPasskey(controller: sheet, username: "mae")
            #expect(await client.isSignedIn())
        }
    }

    @Test("Oversized platform output is refused before anything is sent")
    func oversizedRefusedBeforeSending() async throws {
        try await Self.run { latch in
            let transport = PasskeyTestTransport()
            let store = WriteRecordingKeyStore()
            let client = try Self.device(latch, store: store, transport: transport)
            let sheet = FakePasskeyController()
            await sheet.failNext(.oversizedClientData)
            await #expect(throws: UserClientError.invalidInput("")) { try await client.signUpWithPasskey(controller: sheet, username: "otto") }
            #expect(transport.count("/v1/registrations") == 0 && store.written.isEmpty)

            _ = try await client.signUpWithPasskey(controller: sheet, username: "otto")
            let tokenRequests = transport.count("/oauth2/token")
            await sheet.failNext(.oversizedSignature)
            await #expect(throws: UserClientError.invalidInput("")) { try await client.signInWithPasskey(controller: sheet) }
            await sheet.failNext(.oversizedClientData)
            await #expect(throws: UserClientError.invalidInput("")) { try await client.signInWithPasskey(controller: sheet) }
            #expect(transport.count("/oauth2/token") == tokenRequests)

            _ = try await client.signInWithPasskey(controller: sheet)
            await sheet.failNext(.oversizedClientData)
            await #expect(throws: UserClientError.invalidInput("")) { try await client.registerPasskey(controller: sheet) }
            #expect(transport.count("/v1/fido/registration") == 0)
        }
    }

    // MARK: The messages, without a server

    /// A `none` attestation object for `credentialID` whose statement carries `padding` bytes (a key-less authData is
    /// enough for the SDK, which reads up to the credential id).
    static func attestationObject(credentialID: Data, padding: Int) -> Data {
        var authData = Array(SHA256.hash(data: Array(rpID.utf8))) + [0x5D, 0, 0, 0, 0] + [UInt8](repeating: 0, count: 16)
        authData += [UInt8(credentialID.count >> 8), UInt8(credentialID.count & 0xFF)] + Array(credentialID)
        let statement: CBORValue = padding == 0 ? .map([]) : .map([.init(.text("padding"), .bytes([UInt8](repeating: 0, count: padding)))])
        return Data(CBORValue.map([.init(.text("fmt"), .text("none")), .init(.text("attStmt"), statement), .init(.text("authData"), .bytes(authData))]).encoded)
    }

    @Test("Creation options become the platform request: base64url bytes decoded, display name, preferences, excluded ids")
    func creationOptions() throws {
        let challenge = Data((0..<32).map { UInt8($0) })
        let excluded = Data(repeating: 9, count: 20)
        var publicKey: [String: JSONValue] = [
            "challenge": .string(Base64URL.encode(challenge)), "rp": ["id": "login.latch.test", "name": "Latch"],
            "user": ["id": .string(Base64URL.encode(Data("f0e1-user".utf8))), "name": "ada", "displayName": "ada"],
            "pubKeyCredParams": [["type": "public-key", "alg": -8], ["type": "public-key", "alg": -7]],
            "excludeCredentials": [["type": "public-key", "id": .string(Base64URL.encode(excluded))]],
            "authenticatorSelection": ["residentKey": "required", "userVerification": "required"], "attestation": "direct",
        ]
        let (ceremony, request) = try PasskeyMessages.registrationRequest(
            from: ["ceremonyId": "lfc_1", "publicKey": .object(publicKey)], displayName: "Ada Lovelace")
        #expect(ceremony == "lfc_1")
        #expect(request.challenge == challenge && request.userID == Data("f0e1-user".utf8) && request.relyingPartyID == "login.latch.test")
        #expect(request.userName == "ada" && request.displayName == "Ada Lovelace")
        #expect(request.userVerification == .required && request.attestation == .direct && request.excludedCredentialIDs == [excluded])
        #expect(try PasskeyMessages.registrationRequest(from: ["ceremonyId": "c", "publicKey": .object(publicKey)]).request.displayName == "ada")

        func refused(_ change: (inout [String: JSONValue]) -> Void) -> UserClientError? {
            var changed = publicKey
            change(&changed)
            do {
                _ = try PasskeyMessages.registrationRequest(from: ["ceremonyId": "c", "publicKey": .object(changed)])
                return nil
            } catch {
                return error
            }
        }
        #expect(refused { $0["pubKeyCredParams"] = [["type": "public-key", "alg": -257]] } == .invalidConfiguration(""), "no ES256 offered")
        #expect(refused { $0["challenge"] = .string(Base64URL.encode(Data(count: 8))) } == .invalidInput(""), "a short challenge")
        #expect(refused { $0["challenge"] = "not base64url!" } == .invalidInput(""))
        #expect(refused { $0["rp"] = ["id": "https://login.latch.test"] } == .invalidInput(""), "an origin is not an rp id")
        #expect(refused { $0["user"] = ["id": .string(Base64URL.encode(Data(count: 65))), "name": "ada"] } == .invalidInput(""), "a 65-byte user handle")
        #expect(refused { $0["excludeCredentials"] = [["type": "public-key", "id": ""]] } == .invalidInput(""))
        publicKey["challenge"] = nil
        #expect(throws: UserClientError.invalidInput("")) { try PasskeyMessages.registrationRequest(from: ["publicKey": .object(publicKey)]) }
    }

    @Test("Request options become the platform request; no allowCredentials is a discoverable sign-in")
    func requestOptions() throws {
        let challenge = Data(repeating: 5, count: 32)
        let allowed = [Data(repeating: 1, count: 16), Data(repeating: 2, count: 64)]
        let options: JSONValue = [
            "ceremonyId": "lfc_2",
            "publicKey": [
                "challenge": .string(Base64URL.encode(challenge)), "rpId": "login.latch.test", "userVerification": "discouraged",
                "allowCredentials": .array(allowed.map { ["type": "public-key", "id": .string(Base64URL.encode($0))] }),
            ],
        ]
        let (ceremony, request) = try PasskeyMessages.assertionRequest(from: options)
        #expect(ceremony == "lfc_2" && request.challenge == challenge && request.relyingPartyID == "login.latch.test")
        #expect(request.userVerification == .discouraged && request.allowedCredentialIDs == allowed)
        let discoverable = try PasskeyMessages.assertionRequest(
            from: ["ceremonyId": "c", "publicKey": ["challenge": .string(Base64URL.encode(challenge)), "rpId": "login.latch.test", "allowCredentials": []]])
        #expect(discoverable.request.allowedCredentialIDs.isEmpty && discoverable.request.userVerification == .preferred)
        #expect(throws: UserClientError.invalidInput("")) {
            try PasskeyMessages.assertionRequest(from: ["ceremonyId": "c", "publicKey": ["challenge": .string(Base64URL.encode(challenge))]])
        }
    }

    @Test("The platform's answers become WebAuthn JSON with exactly its bytes; every size is bounded")
    func answersBounded() async throws {
        let (_, registration) = try await FakePasskeyController.registration()
        let json = try PasskeyMessages.registrationJSON(registration)
        let id = Base64URL.encode(registration.credentialID)
        #expect(json["id"] == .string(id) && json["rawId"] == .string(id) && json["type"] == "public-key")
        #expect(json["response"]?["clientDataJSON"] == .string(Base64URL.encode(registration.rawClientDataJSON)))
        #expect(json["response"]?["attestationObject"] == .string(Base64URL.encode(try #require(registration.rawAttestationObject))))

        func refusedRegistration(_ change: (inout PasskeyRegistration) -> Void) -> Bool {
            var changed = registration
            change(&changed)
            return (try? PasskeyMessages.registrationJSON(changed)) == nil
        }
        #expect(refusedRegistration { $0.rawAttestationObject = nil })
        #expect(refusedRegistration { $0.rawAttestationObject = Data([0x01]) }, "not a CBOR map")
        #expect(refusedRegistration { $0.credentialID = Data(repeating: 1, count: 20) }, "the attestation names another credential")
        // Well-formed but too large: refused for its size alone.
        let padded = Self.attestationObject(credentialID: registration.credentialID, padding: PasskeyMessages.maximumAttestationObjectLength)
        #expect(refusedRegistration { $0.rawAttestationObject = padded })
        #expect(!refusedRegistration { $0.rawAttestationObject = Self.attestationObject(credentialID: registration.credentialID, padding: 1000) })
        let longID = Data(repeating: 1, count: PasskeyMessages.maximumCredentialIDLength + 1)
        #expect(refusedRegistration {
            $0.credentialID = longID
            $0.rawAttestationObject = Self.attestationObject(credentialID: longID, padding: 0)
        })
        #expect(refusedRegistration { $0.credentialID = Data() })
        #expect(refusedRegistration { $0.rawClientDataJSON = Data(repeating: 0x20, count: PasskeyMessages.maximumClientDataLength + 1) })
        #expect(refusedRegistration { $0.rawClientDataJSON = Data() })

        let assertion = PasskeyAssertion(
            credentialID: Data(repeating: 3, count: 20), rawClientDataJSON: Data("{}".utf8), rawAuthenticatorData: Data(repeating: 0, count: 37),
            signature: Data(repeating: 0x30, count: 70), userID: Data("user-1".utf8))
        let signed = try PasskeyMessages.assertionJSON(assertion)
        #expect(signed["response"]?["userHandle"] == .string(Base64URL.encode(Data("user-1".utf8))))
        #expect(signed["response"]?["signature"] == .string(Base64URL.encode(assertion.signature)))
        var withoutHandle = assertion
        withoutHandle.userID = Data()
        #expect(try PasskeyMessages.assertionJSON(withoutHandle)["response"]?["userHandle"] == nil)

        func refusedAssertion(_ change: (inout PasskeyAssertion) -> Void) -> Bool {
            var changed = assertion
            change(&changed)
            return (try? PasskeyMessages.assertionJSON(changed)) == nil
        }
        #expect(refusedAssertion { $0.signature = Data() })
        #expect(refusedAssertion { $0.signature = Data(repeating: 0x30, count: PasskeyMessages.maximumSignatureLength + 1) })
        #expect(refusedAssertion { $0.rawAuthenticatorData = Data(repeating: 0, count: 36) })
        #expect(refusedAssertion { $0.rawAuthenticatorData = Data(repeating: 0, count: PasskeyMessages.maximumAuthenticatorDataLength + 1) })
        #expect(refusedAssertion { $0.userID = Data(repeating: 1, count: PasskeyMessages.maximumUserHandleLength + 1) })
        #expect(refusedAssertion { $0.credentialID = Data(repeating: 1, count: PasskeyMessages.maximumCredentialIDLength + 1) })
    }
}
