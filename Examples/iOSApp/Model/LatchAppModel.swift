import Combine  // ObservableObject and @Published, not SwiftUI
import Foundation
import LatchClient

/// Everything the example app does with Latch. This is plain Swift that uses only Foundation, Combine and LatchClient,
/// so the SDK calls can be type-checked without SwiftUI. The views call these methods and show the published state.
///
/// The app offers two ways to create an account on this device:
/// - **Passkey**: the system passkey sheet creates a passkey for Latch's domain. iCloud Keychain syncs it, so the user
///   can also sign in on a new phone.
/// - **Device key**: App Attest registers this device's attested Secure Enclave key. The user has no username to type
///   and no credential that leaves the device. Later sign-ins are App Attest assertions (`amr` `hwk`).
///
/// When the user comes back, they sign in again with the same kind of credential. The tokens are bound to a key of
/// this device (DPoP) and are refreshed by the client, so the user signs in only when the session has ended.
@MainActor
final class LatchAppModel: ObservableObject {
    /// What the app shows.
    enum Screen: Equatable {
        /// The configuration is being read.
        case loading
        /// No account on this device.
        case welcome
        /// An account exists on this device, but there is no live session.
        case signedOut(username: String, method: SignInMethod)
        /// A live session. The claims are in ``claims``.
        case signedIn
        /// The app cannot talk to Latch (for example, a bad `latch-client.json`). Nothing else can be done.
        case broken(String)
    }

    /// How this device's account signs in. It is kept in `UserDefaults`: it is not a secret.
    enum SignInMethod: String, Sendable {
        case passkey
        case deviceKey
    }

    /// One verified ID-token claim, ready to show.
    struct Claim: Identifiable, Hashable, Sendable {
        let name: String
        let value: String
        var id: String { name }
    }

    /// A message for an alert.
    struct Notice: Identifiable, Equatable, Sendable {
        let id = UUID()
        let title: String
        let message: String
    }

    @Published private(set) var screen: Screen = .loading
    /// The ID token's claims. The client verifies the token (signature, issuer, audience, expiry) against the
    /// server's JWKS before it returns them.
    @Published private(set) var claims: [Claim] = []
    /// How the session's tokens are bound, for example "DPoP: this app's own key on this device".
    @Published private(set) var tokenBinding: String?
    /// What is running now (shown with a spinner). While it is set, the buttons are disabled.
    @Published private(set) var progress: String?
    /// The alert to show. The view sets it back to nil when the alert closes.
    @Published var notice: Notice?

    /// Whether this device can register with App Attest. The simulator and some Macs cannot.
    let deviceKeySupported: Bool

    private let configurationURL: URL?
    private let passkeys: any PasskeyController
    private let defaults: UserDefaults
    private var client: UserClient?
    private var statusTask: Task<Void, Never>?

    private enum DefaultsKey {
        /// Set after the first launch of this installation (see ``start()``).
        static let installed = "latch.example.installed"
        static let signInMethod = "latch.example.signInMethod"
    }

    /// - Parameters:
    ///   - configurationURL: the `latch-client.json` that `latch admin client-config` printed, shipped in the bundle.
    ///   - passkeys: shows the system passkey sheet. The app passes a `SystemPasskeyController`, which needs the
    ///     window that presents the sheet. That keeps UIKit and SwiftUI out of this file, and lets a test pass a fake.
    init(
        configurationURL: URL? = Bundle.main.url(forResource: "latch-client", withExtension: "json"),
        passkeys: any PasskeyController,
        defaults: UserDefaults = .standard
    ) {
        self.configurationURL = configurationURL
        self.passkeys = passkeys
        self.defaults = defaults
        self.deviceKeySupported = DeviceAppAttestProvider().isSupported
    }

    // MARK: Start

    /// Reads the configuration, makes the client and decides the first screen. Call it once, when the app starts.
    func start() async {
        guard client == nil else { return }
        let client: UserClient
        do {
            guard let configurationURL else {
                throw UserClientError.invalidConfiguration("latch-client.json is not in the app bundle")
            }
            let configuration = try LatchClientConfiguration.load(from: configurationURL)
            // The Keychain, under the configuration's namespace. By default the items are readable after the first
            // unlock and are never synced to iCloud or restored to another device. Keys are Secure Enclave keys where
            // the device has a Secure Enclave (SecureEnclaveKeyProvider), and software keys on the simulator.
            let keyStore = try KeychainKeyStore(namespace: configuration.namespace)
            client = try UserClient(configuration: configuration, keyStore: keyStore)
        } catch {
            screen = .broken(Self.describe(error))
            return
        }
        self.client = client
        // Keychain items are not deleted with the app. A new installation starts clean here, so a reinstalled app
        // does not find an account whose App Attest key is gone. If the Keychain cannot be cleared, try again at the
        // next launch.
        if !defaults.bool(forKey: DefaultsKey.installed) {
            do {
                try await client.reset()
                defaults.removeObject(forKey: DefaultsKey.signInMethod)
                defaults.set(true, forKey: DefaultsKey.installed)
            } catch {
                notice = Notice(title: "Could not clear old data", message: Self.describe(error))
            }
        }
        observeStatus(of: client)
        await updateScreen()
    }

    /// Follows the client's status. A session can end elsewhere: a sign-out on another device, an admin, or reuse of
    /// a refresh token. The next call that reaches the server then reports it here. A device key can also turn out to
    /// be unusable on this device.
    private func observeStatus(of client: UserClient) {
        statusTask = Task { [weak self] in
            for await status in await client.signInStatusUpdates() {
                guard let self else { return }
                switch status {
                case .notSignedIn(.sessionEnded) where self.screen == .signedIn:
                    self.notice = Notice(title: "Signed out", message: "Your session ended. Sign in again.")
                    await self.updateScreen()
                case .notSignedIn(.deviceKeyLost):
                    // The registration's key cannot be used on this device (a restore onto another phone). The
                    // client removed the registration; the user registers again.
                    self.notice = Notice(title: "Register again", message: "This device cannot use its old key any more.")
                    await self.updateScreen()
                default:
                    break
                }
            }
        }
    }

    // MARK: Passkey

    /// Creates an account whose first credential is a new passkey, and signs in with it. The system shows the passkey
    /// sheet twice: once to create the passkey, and once to sign in with it, because the server opens a session only
    /// for a signature.
    func signUpWithPasskey(username: String) async {
        let name = username.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty else {
            notice = Notice(title: "Choose a username", message: "The passkey is saved under this name.")
            return
        }
        await perform("Creating your passkey…") { client in
            self.defaults.set(SignInMethod.passkey.rawValue, forKey: DefaultsKey.signInMethod)
            // If the user closes the second sheet, the account exists but is signed out: the next screen offers to
            // sign in with the passkey.
            try await client.signUpWithPasskey(controller: self.passkeys, username: name, displayName: name)
        }
    }

    /// Signs in with a passkey made earlier, for example on another phone and synced by iCloud Keychain. The user
    /// picks the passkey in the sheet (a discoverable credential), so no username is needed. The signed-in user
    /// becomes this device's account.
    func signInWithExistingPasskey() async {
        await perform("Signing in…") { client in
            self.defaults.set(SignInMethod.passkey.rawValue, forKey: DefaultsKey.signInMethod)
            try await client.signInWithPasskey(controller: self.passkeys)
        }
    }

    // MARK: Device key

    /// Registers this device with App Attest. Apple certifies a new Secure Enclave key for this app, and that key
    /// becomes the account's device key. Then the app signs in with it.
    func registerThisDevice() async {
        guard deviceKeySupported else {
            notice = Notice(title: "Not available", message: "App Attest does not work on this device. Use a passkey.")
            return
        }
        await perform("Registering this device…") { client in
            let provider = DeviceAppAttestProvider()
            _ = try await client.registerWithAppAttest(provider)
            self.defaults.set(SignInMethod.deviceKey.rawValue, forKey: DefaultsKey.signInMethod)
            _ = try await client.signInWithAppAttest(provider)
        }
    }

    // MARK: Returning user

    /// Signs in again with the kind of credential this device registered.
    func signIn() async {
        guard case .signedOut(let username, let method) = screen else { return }
        switch method {
        case .passkey:
            await perform("Signing in…") { client in
                // By username: the sheet offers only this user's passkeys.
                try await client.signInWithPasskey(controller: self.passkeys, username: username.isEmpty ? nil : username)
            }
        case .deviceKey:
            await perform("Signing in with the device key…") { client in
                _ = try await client.signInWithAppAttest(DeviceAppAttestProvider())
            }
        }
    }

    // MARK: Signed in

    /// Reads the verified claims of the ID token. The client refreshes the tokens first if they expire within 60 s.
    func loadClaims() async {
        guard let client else { return }
        do {
            let verified = try await client.userClaims()
            claims = verified.map { Claim(name: $0.key, value: Self.display($0.key, $0.value)) }.sorted { $0.name < $1.name }
            tokenBinding = Self.describe(await client.tokenBinding())
        } catch {
            claims = []
            tokenBinding = nil
            show(error)
            // The session ended (for example, the refresh was refused): show the sign-in screen. Any other failure
            // (no connection) keeps this screen; pulling it down tries again.
            if await !client.isSignedIn() { await updateScreen() }
        }
    }

    /// Signs out of this device: the server revokes the refresh token, then the client forgets the tokens. The
    /// account, its passkey or device key, stays, so the user can sign in again.
    func signOut() async {
        await perform("Signing out…") { client in
            do throws(UserClientError) {
                try await client.signOut()
            } catch where error.code == .network || error.code == .serviceUnavailable {
                // The server could not be reached. Forget the tokens anyway, because the user asked to sign out. The
                // server session ends by itself when the refresh token expires.
                await client.clearAuthTokens()
                self.notice = Notice(
                    title: "Signed out on this device",
                    message: "The server could not be reached, so your session there ends by itself when it expires.")
            }
        }
    }

    /// Removes the account from this device: keys and tokens. The account stays on the server. A passkey user can sign
    /// in again with the passkey. A device-key account cannot be used again.
    func forgetThisDevice() async {
        await perform("Removing the account from this device…") { client in
            try await client.reset()
            self.defaults.removeObject(forKey: DefaultsKey.signInMethod)
        }
    }

    // MARK: Plumbing

    /// Runs one SDK operation. The buttons are disabled while it runs. A failure becomes an alert, except a closed
    /// sheet. Then the screen follows the client's state.
    private func perform(_ label: String, _ operation: (UserClient) async throws -> Void) async {
        guard let client, progress == nil else { return }
        progress = label
        do {
            try await operation(client)
        } catch {
            show(error)
        }
        progress = nil
        await updateScreen()
    }

    /// The screen for the client's state. It reads only local state, with no server round trip.
    private func updateScreen() async {
        guard let client else { return }
        if await client.isSignedIn() {
            screen = .signedIn
            await loadClaims()
        } else if await client.isRegistered() {
            claims = []
            tokenBinding = nil
            let method = defaults.string(forKey: DefaultsKey.signInMethod).flatMap(SignInMethod.init(rawValue:)) ?? .passkey
            screen = .signedOut(username: await client.userName() ?? "", method: method)
        } else {
            claims = []
            tokenBinding = nil
            screen = .welcome
        }
    }

    private func show(_ error: any Error) {
        guard !Self.isCancellation(error) else { return }
        notice = Notice(title: Self.title(for: error), message: Self.describe(error))
    }

    /// Whether the user closed a system sheet (passkey, browser) or the task was cancelled. That is not an error to
    /// show.
    nonisolated static func isCancellation(_ error: any Error) -> Bool {
        if error is CancellationError { return true }
        return (error as? UserClientError)?.code == .cancelled
    }

    nonisolated static func title(for error: any Error) -> String {
        switch (error as? UserClientError)?.code {
        case .notSignedIn?: "Signed out"
        case .network?, .serviceUnavailable?: "No connection"
        case .alreadyRegistered?: "Already registered"
        case .notRegistered?, .deviceKeyLost?: "No account on this device"
        case .notAuthorized?: "Sign-in refused"
        case .missingEntitlement?, .invalidConfiguration?: "Setup problem"
        case .unsupportedDevice?: "Not available on this device"
        default: "Something went wrong"
        }
    }

    /// A message for the user. New Latch versions add error codes, so this `switch` ends with `default`.
    nonisolated static func describe(_ error: any Error) -> String {
        guard let error = error as? UserClientError else { return error.localizedDescription }
        switch error.code {
        case .notSignedIn:
            return "Your session ended. Sign in again."
        case .network:
            return "The server could not be reached. Check the connection and try again."
        case .serviceUnavailable:
            return "The server is busy. Try again in a moment."
        case .alreadyRegistered:
            return "That username is taken, or this device already has an account."
        case .notRegistered:
            return "This device has no account. Sign up first."
        case .deviceKeyLost:
            // The client already removed the registration it cannot use (for example after a restore onto another
            // phone).
            return "This device cannot use its old key any more. Register again."
        case .notAuthorized:
            return "The server refused the credential, or the sheet was closed."
        case .keychainLocked:
            return "Unlock your phone, then try again."
        case .unsupportedDevice:
            return "This device cannot do that. Use a passkey instead."
        case .missingEntitlement, .invalidConfiguration:
            // A build problem (an entitlement, the associated domain for passkeys) or a client id, registration type
            // or App ID that the server does not know.
            return "The app and the server are not set up for this: \(error.message ?? error.description)"
        default:
            return error.description
        }
    }

    /// How the tokens are bound, in words.
    nonisolated static func describe(_ binding: TokenBinding?) -> String? {
        guard let binding else { return nil }
        guard binding.isDPoPBound else { return "Bearer (not bound to a key)" }
        return binding.isDeviceKey ? "DPoP: the device sign-in key" : "DPoP: this app's own key on this device"
    }

    /// A claim's value as text. Times are shown as dates.
    nonisolated static func display(_ name: String, _ value: JSONValue) -> String {
        if ["iat", "exp", "auth_time", "nbf"].contains(name), let seconds = value.doubleValue {
            return Date(timeIntervalSince1970: seconds).formatted(date: .abbreviated, time: .standard)
        }
        if case .string(let text) = value { return text }
        return String(decoding: value.serialized(), as: UTF8.self)
    }
}
