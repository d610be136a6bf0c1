import Crypto
import Foundation
import LatchApp
import LatchAttestation
import LatchClient
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

// The SDK's platform calls (Keychain, Secure Enclave, App Attest, DeviceCheck, the browser session) are behind small
// protocols; these fakes behave as the platform does, so the logic above them runs on Linux against a live server.

/// The Keychain as Security.framework behaves for generic-password items: keyed by service and account, add refuses a
/// duplicate, update refuses a missing item; `locked` answers every call as before the first unlock.
final class FakeKeychain: KeychainItems {
    struct Key: Hashable {
        let service: String
        let account: String
    }
    let items = Locked<[Key: Data]>([:])
    let locked = Locked(false)
    /// The status the next write fails with (once).
    let failNextWrite = Locked<KeychainStatus?>(nil)

    private func check() throws(KeychainStatus) {
        if locked.withLock({ $0 }) { throw .interactionNotAllowed }
    }

    private func checkWrite() throws(KeychainStatus) {
        try check()
        if let status = failNextWrite.withLock({ status in defer { status = nil }; return status }) { throw status }
    }

    func data(service: String, account: String) throws(KeychainStatus) -> Data? {
        try check()
        return items.withLock { $0[Key(service: service, account: account)] }
    }

    func add(_ data: Data, service: String, account: String) throws(KeychainStatus) {
        try checkWrite()
        let added = items.withLock { items -> Bool in
            guard items[Key(service: service, account: account)] == nil else { return false }
            items[Key(service: service, account: account)] = data
            return true
        }
        if !added { throw .duplicateItem }
    }

    func update(_ data: Data, service: String, account: String) throws(KeychainStatus) {
        try checkWrite()
        let updated = items.withLock { items -> Bool in
            guard items[Key(service: service, account: account)] != nil else { return false }
            items[Key(service: service, account: account)] = data
            return true
        }
        if !updated { throw .itemNotFound }
    }

    func delete(service: String, account: String?) throws(KeychainStatus) {
        try checkWrite()
        items.withLock { items in items = items.filter { !($0.key.service == service && (account == nil || $0.key.account == account)) } }
    }

    var services: Set<String> { Set(items.withLock { $0.keys.map(\.service) }) }
}

/// A count shared by the copies of a value (fakes that are structs, as the protocols' real adapters are).
final class SharedCounter: Sendable {
    private let count = Locked(0)
    func add() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

/// One device's Secure Enclave: keys it makes are stored as a blob only this device restores (the blob carries the
/// device's id, as a real one is sealed by the device's enclave key); a blob of another device is `device_key_lost`.
/// Software PEM keys of earlier SDK versions restore as software keys, as ``SecureEnclaveKeyProvider`` does.
struct FakeEnclave: DeviceKeyProvider {
    let device: String
    let signatures = SharedCounter()

    struct Key: DeviceSigningKey {
        let inner: PrivateKey
        let device: String
        let signatures: SharedCounter
        var algorithm: JWSAlgorithm { .ES256 }
        var publicKey: PublicKey { inner.publicKey }
        var isHardwareBacked: Bool { true }
        var storedRepresentation: String { "fake-enclave:\(device):" + Data(inner.pemRepresentation.utf8).base64EncodedString() }
        func signature(for signingInput: [UInt8]) throws -> Data {
            signatures.add()
            return try inner.signature(for: signingInput)
        }
    }

    func makeKey(_ algorithm: JWSAlgorithm) throws(UserClientError) -> any DeviceSigningKey {
        guard algorithm == .ES256 else { return try SoftwareKeyProvider().makeKey(algorithm) }
        return Key(inner: try! PrivateKey.generate(.ES256), device: device, signatures: signatures)
    }

    func restoreKey(_ stored: String) throws(UserClientError) -> any DeviceSigningKey {
        guard stored.hasPrefix("fake-enclave:") else { return try SoftwareKeyProvider().restoreKey(stored) }
        let parts = stored.split(separator: ":", maxSplits: 2).map(String.init)
        guard parts.count == 3, parts[1] == device else { throw .deviceKeyLost }
        guard let pem = Data(base64Encoded: parts[2]).map({ String(decoding: $0, as: UTF8.self) }), let key = try? PrivateKey(pem: pem) else {
            throw .invalidConfiguration("damaged")
        }
        return Key(inner: key, device: device, signatures: signatures)
    }
}

/// App Attest as `DCAppAttestService` behaves: a key may be attested once (`invalidKey` after that, as for a key the
/// device does not have), failures injected per call.
final class StrictAppAttest: AppAttestProvider {
    let inner: TestAppAttestProvider
    let supported: Bool
    let attested = Locked<Set<String>>([])
    let generated = Locked(0)
    let failNextAttest = Locked<UserClientError?>(nil)
    let forgetKeys = Locked(false)

    init(_ inner: TestAppAttestProvider, supported: Bool = true) {
        self.inner = inner
        self.supported = supported
    }

    var isSupported: Bool { supported }

    func generateKey() async throws -> String {
        generated.withLock { $0 += 1 }
        return try await inner.generateKey()
    }

    func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        if let failure = failNextAttest.withLock({ failure in defer { failure = nil }; return failure }) { throw failure }
        guard attested.withLock({ $0.insert(keyId).inserted }) else { throw UserClientError.platform(.deviceKeyLost, "attested already") }
        return try await inner.attestKey(keyId, clientDataHash: clientDataHash)
    }

    func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        if forgetKeys.withLock({ $0 }) { throw UserClientError.platform(.deviceKeyLost, "App Attest does not know this key on this device") }
        return try await inner.generateAssertion(keyId, clientDataHash: clientDataHash)
    }
}

/// A DeviceCheck "device" that counts its tokens.
struct CountingDeviceCheck: DeviceCheckTokenProvider {
    let supported: Bool
    let tokens = SharedCounter()
    var isSupported: Bool { supported }
    func generateToken() async throws -> Data {
        tokens.add()
        return Data("not-a-real-devicecheck-token".utf8)
    }
}

/// The browser session as `ASWebAuthenticationSession` behaves: it opens the URL in a (test) browser that signs in at
/// the real upstream provider, and returns the redirect when it matches the callback; or the user closes it.
struct BrowserSession: WebAuthenticationSession {
    let browser: FederatedBrowser?
    /// Rewrites the URL the browser comes back with (to play an attacker's or a stale redirect).
    var tamper: (@Sendable (URL) -> URL)? = nil

    func start(url: URL, callback: WebAuthenticationCallback) async throws(UserClientError) -> URL {
        guard let browser else { throw .cancelled }
        let answer: URL
        do {
            answer = try await browser.signInThrough(url)
        } catch {
            throw .network(underlying: error)
        }
        guard callback.matches(answer) else { throw .invalidInput("the browser came back to \(answer), not the callback") }
        return tamper?(answer) ?? answer
    }
}

@Suite("SDK platform adapters through their fakes: Keychain store, migration, Secure Enclave keys, App Attest, browser session")
struct PlatformAdapterTests {
    static func error(_ body: () async throws -> Void) async -> UserClientError? { await FederatedSignInClientTests.error(body) }

    // MARK: Keychain store

    @Test("Keychain store: one service per namespace, replace in place, removeAll clears its own namespace only")
    func keychainNamespaces() throws {
        let keychain = FakeKeychain()
        let app = try KeychainKeyStore(namespace: "ios-app", items: keychain)
        let widget = try KeychainKeyStore(namespace: "widget", items: keychain)
        try app.set(Data("one".utf8), for: "tokens")
        try app.set(Data("two".utf8), for: "tokens")
        try widget.set(Data("other".utf8), for: "tokens")
        #expect(try app.value(for: "tokens") == Data("two".utf8))
        #expect(try widget.value(for: "tokens") == Data("other".utf8))
        #expect(keychain.services == ["latch.ios-app", "latch.widget"])
        try app.removeAll()
        #expect(try app.value(for: "tokens") == nil)
        #expect(try widget.value(for: "tokens") == Data("other".utf8))
        try app.remove("absent")
        #expect(throws: UserClientError.invalidConfiguration("")) { try KeychainKeyStore(namespace: "a/b", items: keychain) }
        #expect(throws: UserClientError.invalidConfiguration("")) { try KeychainKeyStore(namespace: "", items: keychain) }
    }

    @Test("Keychain errors: locked before first unlock is keychain_locked, a missing access group missing_entitlement; a failed write keeps the old value")
    func keychainErrors() throws {
        let keychain = FakeKeychain()
        let store = try KeychainKeyStore(namespace: "app", items: keychain)
        try store.set(Data("old".utf8), for: "tokens")
        keychain.failNextWrite.withLock { $0 = .missingEntitlement }
        let entitlement = #expect(throws: UserClientError.self) { try store.set(Data("new".utf8), for: "tokens") }
        #expect(entitlement?.code == .missingEntitlement && entitlement?.osStatus == -34018)
        #expect(try store.value(for: "tokens") == Data("old".utf8))
        keychain.failNextWrite.withLock { $0 = KeychainStatus(-61) }
        let other = #expect(throws: UserClientError.self) { try store.set(Data("new".utf8), for: "tokens") }
        #expect(other?.code == .keychainFailure && other?.osStatus == -61)
        keychain.locked.withLock { $0 = true }
        let locked = #expect(throws: UserClientError.self) { try store.value(for: "tokens") }
        #expect(locked?.code == .keychainLocked)
        keychain.locked.withLock { $0 = false }
        #expect(try store.value(for: "tokens") == Data("old".utf8))
    }

    @Test("A client over a locked Keychain says keychain_locked — never 'not registered' or 'signed out' — and works once unlocked")
    func lockedKeychainClient() async throws {
        try await LiveLatch.run { latch in
            let keychain = FakeKeychain()
            let store = try KeychainKeyStore(namespace: "default", items: keychain)
            let client = try UserClient(configuration: latch.configuration(), keyStore: store, keyProvider: FakeEnclave(device: "A"))
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            try await client.signInWithKey()
            keychain.locked.withLock { $0 = true }
            #expect(await Self.error { try await client.signInWithKey() }?.code == .keychainLocked)
            #expect(await Self.error { _ = try await client.accessToken() }?.code == .keychainLocked)
            keychain.locked.withLock { $0 = false }
            #expect(try await client.accessToken().isEmpty == false)
            #expect(await client.isRegistered())
        }
    }

    @Test("Migration: a FileKeyStore of an earlier SDK moves into the Keychain once; its PEM device key still signs in; a second run moves nothing")
    func migrationFromFileStore() async throws {
        try await LiveLatch.run { latch in
            let folder = TemporaryDirectory()
            defer { folder.remove() }
            let root = URL(fileURLWithPath: folder.path)
            // The earlier SDK: files, software keys.
            let files = try FileKeyStore(root: root, namespace: "default")
            let old = try UserClient(configuration: latch.configuration(), keyStore: files, keyProvider: SoftwareKeyProvider())
            let username = try await old.registerWithAuthenticationProvider(try latch.testProvider())
            try await old.signInWithKey()
            let names = try files.itemNames()
            #expect(names.contains("registration") && names.contains("tokens"))

            let keychain = FakeKeychain()
            let store = try KeychainKeyStore(namespace: "default", items: keychain)
            // Interrupted half-way: one item made it before the app was killed (and is kept as the newer value).
            try store.set(try #require(try files.value(for: "tokens")), for: "tokens")
            let moved = try KeyStoreMigration.migrate(from: files, to: store)
            #expect(Set(moved) == Set(names).subtracting(["tokens"]))
            #expect(FileManager.default.fileExists(atPath: files.directory.path) == false)
            #expect(try KeyStoreMigration.migrate(from: try FileKeyStore(root: root, namespace: "default"), to: store).isEmpty)

            let migrated = try UserClient(configuration: latch.configuration(), keyStore: store, keyProvider: FakeEnclave(device: "A"))
            #expect(await migrated.userName() == username)
            #expect(await migrated.isSignedIn())
            _ = try await migrated.refreshTokens()
            let tokens = try await migrated.signInWithKey()
            #expect(tokens.isDPoPBound)
        }
    }

    // MARK: Secure Enclave keys

    @Test("Enclave device key: the server sees an ES256 key, proofs and assertions are the enclave's; restored onto another device it is device_key_lost and the device registers again")
    func enclaveKeyLostAfterRestore() async throws {
        try await LiveLatch.run { latch in
            let store = InMemoryKeyStore()
            let enclaveA = FakeEnclave(device: "A")
            let client = try UserClient(configuration: latch.configuration(), keyStore: store, keyProvider: enclaveA)
            try await client.registerWithAuthenticationProvider(try latch.testProvider())
            let stored = try JSONValue.parse(try #require(try store.value(for: "registration")))["deviceKeyPEM"]?.stringValue
            #expect(stored?.hasPrefix("fake-enclave:A:") == true, "the store keeps the enclave blob, never a PEM")
            let tokens = try await client.signInWithKey()
            #expect(tokens.isDPoPBound)
            let signed = enclaveA.signatures.value
            #expect(signed >= 2, "the sign-in assertion and its DPoP proof")
            #expect(try await client.userInfo()["sub"] != nil)
            #expect(enclaveA.signatures.value > signed, "a call with the access token proves the enclave key")

            // A backup of the store restored onto device B: the blob is useless there.
            let copy = InMemoryKeyStore()
            for name in ["registration", "tokens"] { try copy.set(try #require(try store.value(for: name)), for: name) }
            let restored = try UserClient(configuration: latch.configuration(), keyStore: copy, keyProvider: FakeEnclave(device: "B"))
            #expect(await Self.error { try await restored.signInWithKey() } == .deviceKeyLost)
            #expect(await restored.isRegistered() == false)
            #expect(await restored.isSignedIn() == false)
            #expect(await restored.signInStatus == .notSignedIn(.deviceKeyLost))
            try await restored.registerWithAuthenticationProvider(try latch.testProvider())
            #expect(try await restored.signInWithKey().isDPoPBound)
            // Device A is untouched.
            #expect(try await client.signInWithKey().isDPoPBound)
        }
    }

    @Test("The client's own DPoP key: another device's enclave blob is replaced by a new key; a damaged key is an error, never silently replaced")
    func dedicatedDPoPKeyRestore() async throws {
        try await LiveLatch.run { latch in
            let store = InMemoryKeyStore()
            let other = try FakeEnclave(device: "B").makeKey(.ES256)
            try store.set(Data(other.storedRepresentation.utf8), for: "dpop-key")
            let client = try UserClient(configuration: latch.configuration(), keyStore: store, keyProvider: FakeEnclave(device: "A"))
            try await client.registerWithAuthenticationProvider(try latch.federated())
            let tokens = try await client.signInWithAuthenticationProvider(try latch.federated())
            #expect(tokens.isDPoPBound)
            let stored = String(decoding: try #require(try store.value(for: "dpop-key")), as: UTF8.self)
            #expect(stored.hasPrefix("fake-enclave:A:"))
            #expect(await client.dpopKeyThumbprint() != other.publicKey.thumbprint)

            let damaged = InMemoryKeyStore()
            try damaged.set(Data("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----".utf8), for: "dpop-key")
            let broken = try UserClient(configuration: latch.configuration(), keyStore: damaged, keyProvider: FakeEnclave(device: "A"))
            #expect(await Self.error { try await broken.signInWithAuthenticationProvider(try latch.federated()) }?.code == .invalidConfiguration)
            #expect(try damaged.value(for: "dpop-key").map { String(decoding: $0, as: UTF8.self) }?.contains("not a key") == true)
        }
    }

    // MARK: App Attest and DeviceCheck

    @Test("App Attest: a key made but not attested is attested on the retry (no second key); an attested key is never attested again")
    func appAttestKeyReuse() async throws {
        try await AppAttestDPoPClientTests.appAttestLatch { latch, device in
            let attest = StrictAppAttest(device)
            let client = try latch.device()
            attest.failNextAttest.withLock { $0 = .platform(.serviceUnavailable, "Apple's service is unavailable") }
            #expect(await Self.error { try await client.registerWithAppAttest(attest) } == .serviceUnavailable)
            #expect(await client.isRegistered() == false)
            try await client.registerWithAppAttest(attest)
            #expect(attest.generated.withLock { $0 } == 1, "the unattested key was attested on the retry")
            try await client.signInWithAppAttest(attest)

            // A registration refused after attestation: the next try makes a new key (App Attest refuses a second attestation).
            let other = try latch.device()
            attest.failNextAttest.withLock { $0 = .platform(.attestationFailed, "refused") }
            #expect(await Self.error { try await other.registerWithAppAttest(attest) }?.code == .attestationFailed)
            try await other.registerWithAppAttest(attest)
            #expect(attest.generated.withLock { $0 } == 3)
        }
    }

    @Test("App Attest after a restore onto another device: the assertion's invalid key is device_key_lost, the registration is forgotten")
    func appAttestKeyLost() async throws {
        try await AppAttestDPoPClientTests.appAttestLatch { latch, device in
            let attest = StrictAppAttest(device)
            let client = try latch.device()
            try await client.registerWithAppAttest(attest)
            try await client.signInWithAppAttest(attest)
            attest.forgetKeys.withLock { $0 = true }
            #expect(await Self.error { try await client.signInWithAppAttest(attest) } == .deviceKeyLost)
            #expect(await client.isRegistered() == false)
            #expect(await client.isSignedIn() == false)
            #expect(await client.signInStatus == .notSignedIn(.deviceKeyLost))
            attest.forgetKeys.withLock { $0 = false }
            try await client.registerWithAppAttest(attest)
            try await client.signInWithAppAttest(attest)
        }
    }

    @Test("No App Attest: unsupported_device with nothing sent, or a fallback to DeviceCheck")
    func unsupportedFallsBack() async throws {
        try await AppAttestDPoPClientTests.appAttestLatch { latch, device in
            let simulator = StrictAppAttest(device, supported: false)
            let client = try latch.device()
            #expect(await Self.error { try await client.registerWithAppAttest(simulator) }?.code == .unsupportedDevice)
            #expect(simulator.generated.withLock { $0 } == 0)
            let noDeviceCheck = CountingDeviceCheck(supported: false)
            let neither = await Self.error { try await client.registerAttestedDevice(appAttest: simulator, deviceCheck: noDeviceCheck, buildType: .release) }
            #expect(neither?.code == .unsupportedDevice && noDeviceCheck.tokens.value == 0)
            // DeviceCheck is tried instead (this server has no DeviceCheck key, so it refuses the type: the token was sent).
            let deviceCheck = CountingDeviceCheck(supported: true)
            let refused = await Self.error { try await client.registerAttestedDevice(appAttest: simulator, deviceCheck: deviceCheck, buildType: .release) }
            #expect(deviceCheck.tokens.value == 1)
            #expect(refused != nil && refused?.code != .unsupportedDevice)
            #expect(await client.isRegistered() == false)
        }
    }

    // MARK: Browser session

    @Test("Callbacks: a custom scheme or a claimed https link; http and relative URIs refused")
    func callbacks() throws {
        #expect(try WebAuthenticationCallback(redirectURI: "com.example.app:/callback") == .customScheme("com.example.app"))
        #expect(try WebAuthenticationCallback(redirectURI: "https://app.example.com/cb") == .https(host: "app.example.com", path: "/cb"))
        #expect(throws: UserClientError.invalidInput("")) { try WebAuthenticationCallback(redirectURI: "http://127.0.0.1/cb") }
        #expect(throws: UserClientError.invalidInput("")) { try WebAuthenticationCallback(redirectURI: "/callback") }
        let https = WebAuthenticationCallback.https(host: "app.example.com", path: "/cb")
        #expect(https.matches(URL(string: "https://app.example.com/cb?code=1")!))
        #expect(!https.matches(URL(string: "https://app.example.com/other")!))
        #expect(!https.matches(URL(string: "https://evil.example/cb")!))
        #expect(WebAuthenticationCallback.customScheme("com.example.app").matches(URL(string: "COM.example.app:/callback")!))
    }

    @Test(
        "Browser sign-in through a session: tokens from the real upstream; a closed browser is cancelled with nothing pending or stored; a tampered state is refused",
        .requires(.upstreamProvider))
    func browserSession() async throws {
        try await FederatedLatch.run { federated in
            var configuration = federated.latch.configuration()
            configuration.federatedSignInRedirectURI = FederatedLatch.appRedirect
            configuration.federatedSignOutRedirectURI = FederatedLatch.appSignedOut
            let client = try UserClient(configuration: configuration, keyStore: InMemoryKeyStore())

            #expect(await Self.error { try await client.signInWithBrowser(BrowserSession(browser: nil)) } == .cancelled)
            #expect(await client.hasPendingFederatedSignIn() == false)
            #expect(await client.isSignedIn() == false)

            let tampered = BrowserSession(browser: federated.browser()) { url in
                URL(string: url.absoluteString.replacingOccurrences(of: "state=", with: "state=x"))!
            }
            #expect(await Self.error { try await client.signInWithBrowser(tampered) } == .federatedSignInStateMismatch)
            #expect(await client.isSignedIn() == false)

            let tokens = try await client.signInWithBrowser(BrowserSession(browser: federated.browser()), idpHint: "corp")
            #expect(tokens.isDPoPBound)
            #expect(try await client.userClaims()["amr"] == .array([.string("fed")]))
            #expect(await client.hasPendingFederatedSignIn() == false)
        }
    }

    // MARK: The entry point

    @Test("The Latch entry point: register, sign in, claims, passkeys, sign out, sign out everywhere — through its groups")
    func entryPoint() async throws {
        try await PasskeyClientTests.run { latch in
            let app = Latch(client: try UserClient(configuration: latch.configuration(), keyStore: InMemoryKeyStore(), keyProvider: FakeEnclave(device: "A")))
            #expect(await app.registration.isRegistered == false)
            let username = try await app.registration.authenticationProvider(try latch.testProvider())
            #expect(await app.registration.isRegistered)
            let tokens = try await app.signIn.deviceKey()
            #expect(tokens.isDPoPBound)
            #expect(await app.session.isSignedIn)
            #expect(await app.session.status == .signedIn)
            #expect(try await app.session.claims()["username"] == .string(username))
            let headers = try await app.session.authorizationHeaders(method: "GET", url: URL(string: "https://api.example.com/x")!)
            #expect(headers["Authorization"]?.hasPrefix("DPoP ") == true && headers["DPoP"] != nil)

            let sheet = FakePasskeyController()
            let added = try await app.passkeys.add(sheet, name: "phone")
            #expect(try await app.passkeys.list().map(\.id).contains(added.id))
            try await app.session.signOut()
            #expect(await app.session.isSignedIn == false)
            #expect(try await app.signIn.passkey(sheet, username: username).isDPoPBound)
            try await app.passkeys.delete(id: added.id)
            #expect(try await app.passkeys.list().map(\.id).contains(added.id) == false)

            // The end of every session of the user.
            try await app.session.signOutEverywhere()
            #expect(await app.session.isSignedIn == false)
            await #expect(throws: UserClientError.notSignedIn) { try await app.session.accessToken() }
            try await app.session.reset()
            #expect(await app.registration.isRegistered == false)
        }
    }

    // MARK: Errors

    @Test("Errors: a stable code to switch on, equality by code (and the detail that matters), catch patterns, unknown server codes kept")
    func errorCodes() async throws {
        #expect(UserClientError.invalidInput("a") == .invalidInput("b"))
        #expect(UserClientError.insufficientAuthentication(maxAge: 60) != .insufficientAuthentication(maxAge: 300))
        #expect(UserClientError.server(code: "quota_exceeded", message: nil).code.rawValue == "quota_exceeded")
        #expect(UserClientError.federatedSignInCancelled == .cancelled)
        let thrown: any Error = UserClientError.platform(.keychainLocked, "locked", osStatus: -25308)
        do {
            throw thrown
        } catch UserClientError.cancelled {
            Issue.record("matched the wrong code")
        } catch UserClientError.platform(.keychainLocked, "any message") {
            // Matched by code, whatever the message.
        } catch {
            Issue.record("not matched: \(error)")
        }
        #expect("\(UserClientError.deviceKeyLost)".contains("device_key_lost"))
        #expect(UserClientError.pinAttemptFailed(FidoPinStatus(state: FidoPinStatus.lockedOut, remainingTries: 0, coolDown: 0)).description == "PIN authenticator locked out")
    }
}
