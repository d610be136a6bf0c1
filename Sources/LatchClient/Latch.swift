import Foundation
import LatchModel

/// The SDK's entry point: one value the app makes at launch and keeps, with Latch's operations grouped by what they
/// are for — ``registration``, ``signIn``, ``session`` and ``passkeys``. One verb per action: `signIn…` starts a
/// session, `signOut` ends this device's, `signOutEverywhere` every device's.
///
/// ```swift
/// let latch = try Latch.onDevice(configuration: try .load(from: configurationURL))   // Keychain + Secure Enclave
/// if await !latch.registration.isRegistered {
///     try await latch.registration.appAttest(DeviceAppAttestProvider())
/// }
/// try await latch.signIn.appAttest(DeviceAppAttestProvider())
/// let claims = try await latch.session.claims()
/// try await latch.session.signOut()
/// ```
///
/// Everything else — FIDO authenticators with a PIN, custom registration, issuer login, out-of-band enrollment, DPoP
/// headers for your own API — is on ``client``, the ``UserClient`` these groups call.
public struct Latch: Sendable {
    /// The client the groups call: every operation of the SDK.
    public let client: UserClient

    /// The entry point over `client`.
    public init(client: UserClient) { self.client = client }

    /// A client for `configuration` over `keyStore` (``FileKeyStore`` on Linux; see ``onDevice(configuration:accessGroup:migratingFileStore:)``
    /// on Apple platforms).
    public init(configuration: LatchClientConfiguration, keyStore: any KeyStore) throws(UserClientError) {
        self.client = try UserClient(configuration: configuration, keyStore: keyStore)
    }

    #if canImport(Security) && !os(Linux)
    /// The client an app on an Apple device uses: its items in the Keychain (``KeychainKeyStore``, after the first
    /// unlock, this device only), device and DPoP keys in the Secure Enclave where the device has one.
    /// - Parameters:
    ///   - accessGroup: a Keychain access group to share the session with app extensions.
    ///   - migratingFileStore: the root folder of a ``FileKeyStore`` an earlier version of the app used: its items move
    ///     into the Keychain first (once; see ``KeyStoreMigration``).
    public static func onDevice(
        configuration: LatchClientConfiguration, accessGroup: String? = nil, migratingFileStore: URL? = nil
    ) throws(UserClientError) -> Latch {
        let keyStore = try KeychainKeyStore(namespace: configuration.namespace, accessGroup: accessGroup)
        if let root = migratingFileStore, FileManager.default.fileExists(atPath: root.appendingPathComponent(configuration.namespace).path) {
            try KeyStoreMigration.migrate(from: try FileKeyStore(root: root, namespace: configuration.namespace), to: keyStore)
        }
        return Latch(client: try UserClient(configuration: configuration, keyStore: keyStore))
    }
    #endif

    /// Making the user known to Latch on this device.
    public var registration: Registration { Registration(client: client) }
    /// Starting a session.
    public var signIn: SignIn { SignIn(client: client) }
    /// The session: tokens, verified claims, status, and its end.
    public var session: Session { Session(client: client) }
    /// The user's passkeys.
    public var passkeys: Passkeys { Passkeys(client: client) }
}

extension Latch {
    /// Registration: a new user, or this device for a known one. Each returns the username.
    public struct Registration: Sendable {
        let client: UserClient

        /// Whether a user is registered on this device.
        public var isRegistered: Bool { get async { await client.isRegistered() } }

        /// With an App Attest key (``UserClient/registerWithAppAttest(_:registrationId:)``).
        @discardableResult
        public func appAttest(_ provider: any AppAttestProvider) async throws(UserClientError) -> String {
            try await client.registerWithAppAttest(provider)
        }

        /// With App Attest where the device supports it, else DeviceCheck (``UserClient/registerAttestedDevice(appAttest:deviceCheck:buildType:vendorId:)``).
        @discardableResult
        public func attestedDevice(
            appAttest: any AppAttestProvider, deviceCheck: (any DeviceCheckTokenProvider)?, buildType: UserClient.BuildType
        ) async throws(UserClientError) -> String {
            try await client.registerAttestedDevice(appAttest: appAttest, deviceCheck: deviceCheck, buildType: buildType)
        }

        /// With a JWT your backend signed, or an admin's test registration key (``UserClient/registerWithAuthenticationProvider(_:registrationId:)``).
        @discardableResult
        public func authenticationProvider(_ provider: any AuthenticationProvider) async throws(UserClientError) -> String {
            try await client.registerWithAuthenticationProvider(provider)
        }

        /// Passwordless sign-up with a new passkey; returns the new session's tokens
        /// (``UserClient/signUpWithPasskey(controller:username:displayName:)``).
        @discardableResult
        public func passkey(_ controller: any PasskeyController, username: String? = nil, displayName: String? = nil)
            async throws(UserClientError) -> AuthenticationTokens
        {
            try await client.signUpWithPasskey(controller: controller, username: username, displayName: displayName)
        }

        /// Decided by the operator's own service (``UserClient/registerWithCustomProvider(_:flow:handler:registrationId:)``).
        @discardableResult
        public func customProvider(_ providerId: String, handler: any CustomRegistrationHandler) async throws(UserClientError)
            -> CustomRegistrationResult
        {
            try await client.registerWithCustomProvider(providerId, handler: handler)
        }
    }

    /// Sign-in: each returns the new session's tokens (DPoP-bound unless the configuration says otherwise).
    public struct SignIn: Sendable {
        let client: UserClient

        /// With the device sign-in key (``UserClient/signInWithKey()``).
        @discardableResult
        public func deviceKey() async throws(UserClientError) -> AuthenticationTokens { try await client.signInWithKey() }

        /// With the App Attest key registered here (``UserClient/signInWithAppAttest(_:)``).
        @discardableResult
        public func appAttest(_ provider: any AppAttestProvider) async throws(UserClientError) -> AuthenticationTokens {
            try await client.signInWithAppAttest(provider)
        }

        /// With a passkey; `username` nil lets the user pick one (``UserClient/signInWithPasskey(controller:username:)``).
        @discardableResult
        public func passkey(_ controller: any PasskeyController, username: String? = nil) async throws(UserClientError) -> AuthenticationTokens {
            try await client.signInWithPasskey(controller: controller, username: username)
        }

        /// Through the browser and the organisation's identity provider (``UserClient/signInWithBrowser(_:redirectURI:idpHint:prompt:loginHint:)``).
        @discardableResult
        public func browser(_ session: any WebAuthenticationSession, idpHint: String? = nil) async throws(UserClientError) -> AuthenticationTokens {
            try await client.signInWithBrowser(session, idpHint: idpHint)
        }

        /// With a JWT your backend signed for the user (``UserClient/signInWithAuthenticationProvider(_:)``).
        @discardableResult
        public func authenticationProvider(_ provider: any AuthenticationProvider) async throws(UserClientError) -> AuthenticationTokens {
            try await client.signInWithAuthenticationProvider(provider)
        }
    }

    /// The session on this device.
    public struct Session: Sendable {
        let client: UserClient

        /// Where the client stands now.
        public var status: SignInStatus { get async { await client.signInStatus } }
        /// The current status, then every change.
        public func statusUpdates() async -> AsyncStream<SignInStatus> { await client.signInStatusUpdates() }
        /// Whether tokens are held whose refresh family has not ended (no server round trip).
        public var isSignedIn: Bool { get async { await client.isSignedIn() } }
        /// A valid access token, refreshed first when it expires within 60 s.
        public func accessToken() async throws(UserClientError) -> String { try await client.accessToken() }
        /// The ID token's claims, verified against the server's keys.
        public func claims() async throws(UserClientError) -> [String: JSONValue] { try await client.userClaims() }
        /// The `Authorization` (and, for bound tokens, `DPoP`) headers for a call to your API.
        public func authorizationHeaders(method: String, url: URL) async throws(UserClientError) -> [String: String] {
            try await client.authorizationHeaders(method: method, url: url)
        }
        /// Refreshes the tokens now.
        @discardableResult
        public func refresh() async throws(UserClientError) -> AuthenticationTokens { try await client.refreshTokens() }
        /// Ends this device's session on the server, then forgets the tokens.
        public func signOut() async throws(UserClientError) { try await client.signOut() }
        /// Ends every session of the user on every device.
        public func signOutEverywhere() async throws(UserClientError) { try await client.globalSignOut() }
        /// Deletes the user on the server (needs a recent sign-in), then this device's items.
        public func deleteAccount() async throws(UserClientError) { try await client.deregister() }
        /// Forgets everything of this client on this device; the server keeps the user.
        public func reset() async throws(UserClientError) { try await client.reset() }
    }

    /// The signed-in user's passkeys (and other FIDO authenticators).
    public struct Passkeys: Sendable {
        let client: UserClient

        /// Adds a passkey to the signed-in user.
        @discardableResult
        public func add(_ controller: any PasskeyController, name: String? = nil) async throws(UserClientError) -> FidoAuthenticatorInfo {
            try await client.registerPasskey(controller: controller, name: name)
        }
        /// The user's authenticators, passkeys among them.
        public func list() async throws(UserClientError) -> [FidoAuthenticatorInfo] { try await client.fidoAuthenticators() }
        /// Removes one.
        public func delete(id: String) async throws(UserClientError) { try await client.deleteFidoAuthenticator(id: id) }
    }
}
