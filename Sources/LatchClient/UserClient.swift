import Foundation
import LatchJOSE
import LatchModel

/// The client apps use to register a user, sign in and keep a session.
///
/// An actor: every operation is safe to call from any task. Tokens that are about to expire (within 60 s) are
/// refreshed before use, and concurrent callers share one refresh. Keys and tokens live in the ``KeyStore``
/// under the configuration's namespace.
///
/// Tokens are DPoP-bound (RFC 9449) unless ``LatchClientConfiguration/dpop`` is off or the app's server policy says
/// `off`: every token request carries a proof of a key this device holds, and every call with the access token a
/// proof over it. The client makes the proofs itself; for the app's own backends, see
/// ``authorizationHeaders(method:url:)`` and ``authorizedRequest(_:)``.
public actor UserClient {
    /// The configuration this client was made with.
    public let configuration: LatchClientConfiguration
    let keyStore: any KeyStore
    let transport: any HTTPTransport
    let clock: @Sendable () -> Date
    let deviceKeyAlgorithm: JWSAlgorithm
    /// Makes and restores the device sign-in and DPoP keys (the Secure Enclave on Apple devices that have one).
    let keyProvider: any DeviceKeyProvider
    let verifier: IDTokenVerifier
    private var refreshing: Task<AuthenticationTokens, any Error>?
    private var status: SignInStatus
    private var observers: [UUID: AsyncStream<SignInStatus>.Continuation] = [:]
    /// The latest `DPoP-Nonce` of each server (by origin), put into the next proofs for it (RFC 9449 §8).
    var dpopNonces: [String: String] = [:]
    /// Added to the clock for a proof's `iat`: learned from the server's `Date` when it refused a proof and the device's
    /// clock was off by more than ``clockSkewTolerance`` (a proof may be at most 60 s from the server's clock).
    var serverClockOffset: TimeInterval = 0

    /// Refresh when a token expires within this many seconds.
    static let refreshMargin: TimeInterval = 60

    /// - Parameters:
    ///   - keyStore: where keys and tokens live: ``KeychainKeyStore`` on Apple platforms, ``FileKeyStore`` elsewhere.
    ///   - deviceKeyAlgorithm: the device sign-in key's algorithm: `ES256` (P-256, what the Secure Enclave holds) or
    ///     `RS256` (RSA-2048, always in software).
    ///   - keyProvider: makes the device sign-in and DPoP keys: by default Secure Enclave keys on an iPhone or iPad that
    ///     has one, software keys in the key store elsewhere (``DeviceKeyProviders/platformDefault``).
    public init(
        configuration: LatchClientConfiguration, keyStore: any KeyStore, transport: any HTTPTransport = URLSessionTransport(),
        deviceKeyAlgorithm: JWSAlgorithm = .ES256, keyProvider: any DeviceKeyProvider = DeviceKeyProviders.platformDefault,
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws(UserClientError) {
        try configuration.validate()
        self.configuration = configuration
        self.keyStore = keyStore
        self.transport = transport
        self.deviceKeyAlgorithm = deviceKeyAlgorithm
        self.keyProvider = keyProvider
        self.clock = clock
        self.verifier = IDTokenVerifier(serverURL: configuration.serverURL, transport: transport, clock: clock)
        let hasTokens = (try? keyStore.value(for: Item.tokens)) ?? nil
        self.status = hasTokens == nil ? .notSignedIn(.neverSignedIn) : .signedIn
    }

    // MARK: Persisted state

    enum Item {
        static let registration = "registration"
        static let pendingRegistration = "pending-registration"
        static let pendingCustomRegistration = "pending-custom-registration"
        static let tokens = "tokens"
        static let fidoCredentials = "fido-credentials"
        /// The client's own DPoP key (PKCS#8 PEM), for users without a device sign-in key.
        static let dpopKey = "dpop-key"
        /// An App Attest key made but not attested yet (its id): attested on the next try instead of making another.
        static let pendingAppAttestKey = "pending-app-attest-key"
    }

    /// The registered user on this device.
    struct Registration: Codable {
        var userId: String
        var username: String
        var type: RegistrationMethod
        var deviceKeyId: String?
        /// The device sign-in key's ``DeviceSigningKey/storedRepresentation`` (a PEM, or a Secure Enclave blob).
        var deviceKey: String?

        enum CodingKeys: String, CodingKey {
            // `deviceKeyPEM`: the name SDK versions before Secure Enclave keys wrote; kept so their stores still read.
            case userId, username, type, deviceKeyId, deviceKey = "deviceKeyPEM"
        }
    }

    /// A registration sent but not yet answered: retried verbatim, so the server sees the same id and proof.
    struct PendingRegistration: Codable {
        var request: RegistrationRequest
        var deviceKey: String?
        /// For a FIDO sign-up: the credential the request registers (its `authenticatorId` comes with the answer).
        var fido: FidoCredential?

        enum CodingKeys: String, CodingKey {
            case request, fido, deviceKey = "deviceKeyPEM"
        }
    }

    func load<T: Decodable>(_ type: T.Type, _ name: String) -> T? {
        guard let data = try? keyStore.value(for: name) else { return nil }
        return try? JSONDecoder().decode(T.self, from: data)
    }

    /// Like ``load(_:_:)``, but a store that cannot be read is an error, not "nothing stored": a Keychain locked before
    /// the first unlock is ``UserClientError/Code/keychainLocked``, never a signed-out or unregistered device.
    func read<T: Decodable>(_ type: T.Type, _ name: String) throws(UserClientError) -> T? {
        let data: Data?
        do {
            data = try keyStore.value(for: name)
        } catch {
            throw Self.keyStoreError(error, "the key store cannot be read")
        }
        guard let data else { return nil }
        return try? JSONDecoder().decode(T.self, from: data)
    }

    func save(_ value: some Encodable, _ name: String) throws(UserClientError) {
        do {
            try keyStore.set(try JSONEncoder().encode(value), for: name)
        } catch {
            throw Self.keyStoreError(error, "the key store cannot be written")
        }
    }

    /// A key-store failure as the app sees it: the store's own ``UserClientError`` (a locked Keychain, say) as it is,
    /// anything else as an invalid configuration naming `what`.
    static func keyStoreError(_ error: any Error, _ what: String) -> UserClientError {
        error as? UserClientError ?? .invalidConfiguration("\(what): \(error)")
    }

    func remove(_ name: String) {
        try? keyStore.remove(name)
    }

    // MARK: Status

    /// The current status, then every change, until the stream is dropped.
    public func signInStatusUpdates() -> AsyncStream<SignInStatus> {
        let id = UUID()
        let (stream, continuation) = AsyncStream.makeStream(of: SignInStatus.self, bufferingPolicy: .bufferingNewest(16))
        continuation.yield(status)
        observers[id] = continuation
        continuation.onTermination = { _ in Task { await self.removeObserver(id) } }
        return stream
    }

    private func removeObserver(_ id: UUID) { observers[id] = nil }

    /// The current status.
    public var signInStatus: SignInStatus { status }

    func setStatus(_ new: SignInStatus) {
        guard new != status else { return }
        status = new
        for continuation in observers.values { continuation.yield(new) }
    }

    // MARK: Accessors

    /// Whether a user is registered on this device.
    public func isRegistered() -> Bool { load(Registration.self, Item.registration) != nil }

    /// The registered username.
    public func userName() -> String? { load(Registration.self, Item.registration)?.username }

    /// The user's stable id: the `sub` of the tokens.
    public func subject() -> String? { load(Registration.self, Item.registration)?.userId }

    /// Whether tokens are held whose refresh family has not ended (no server round trip).
    public func isSignedIn() -> Bool {
        guard let tokens = load(AuthenticationTokens.self, Item.tokens) else { return false }
        return tokens.refreshTokenExpiry > clock()
    }

    /// The current refresh token, as stored.
    public func refreshToken() -> String? { load(AuthenticationTokens.self, Item.tokens)?.refreshToken }

    /// When the ID and access tokens expire.
    public func tokenExpiry() -> Date? { load(AuthenticationTokens.self, Item.tokens)?.tokenExpiry }

    /// When the refresh family ends, as the server stated.
    public func refreshTokenExpiry() -> Date? { load(AuthenticationTokens.self, Item.tokens)?.refreshTokenExpiry }

    /// A valid access token, refreshed first when it expires within 60 s.
    public func accessToken() async throws(UserClientError) -> String { try await validTokens().accessToken }

    /// A valid ID token, refreshed first when it expires within 60 s.
    public func idToken() async throws(UserClientError) -> String { try await validTokens().idToken }

    /// A claim of the ID token — only after its signature, issuer, audience and expiry were verified against
    /// the JWKS the server publishes. Never read from an unverified token.
    public func userClaim(_ name: String) async throws(UserClientError) -> JSONValue? {
        let token = try await idToken()
        return try await verifier.verify(token, clientID: configuration.clientId, now: clock())[name]
    }

    /// Every verified claim of the ID token.
    public func userClaims() async throws(UserClientError) -> [String: JSONValue] {
        try await verifier.verify(try await idToken(), clientID: configuration.clientId, now: clock())
    }

    /// Asks the server who is signed in (OIDC UserInfo). A revoked session answers `notSignedIn`.
    public func userInfo() async throws(UserClientError) -> [String: JSONValue] {
        let response = try await authorized("GET", "oauth2/userinfo")
        guard case .object(let info)? = try? JSONValue.parse(response.body) else { throw .invalidInput("malformed userinfo answer") }
        return info
    }

    // MARK: Tokens

    /// The stored tokens, refreshed when they expire within the margin.
    func validTokens() async throws(UserClientError) -> AuthenticationTokens {
        guard let tokens = try read(AuthenticationTokens.self, Item.tokens) else { throw .notSignedIn }
        if tokens.tokenExpiry.timeIntervalSince(clock()) > Self.refreshMargin { return tokens }
        return try await refreshTokens()
    }

    /// Refreshes now. Concurrent callers share one request; a refresh answered with an ended session moves the
    /// client to `notSignedIn(.sessionEnded)`.
    @discardableResult
    public func refreshTokens() async throws(UserClientError) -> AuthenticationTokens {
        let task: Task<AuthenticationTokens, any Error>
        if let running = refreshing {
            task = running
        } else {
            task = Task { try await self.refreshOnce() }
            refreshing = task
        }
        do {
            let tokens = try await task.value
            if refreshing == task { refreshing = nil }
            return tokens
        } catch {
            if refreshing == task { refreshing = nil }
            throw error as? UserClientError ?? .network(underlying: error)
        }
    }

    private func refreshOnce() async throws(UserClientError) -> AuthenticationTokens {
        guard let tokens = try read(AuthenticationTokens.self, Item.tokens) else { throw .notSignedIn }
        // A bound session proves the key it is bound to (RFC 9449 §5); an unbound one gets a bound access token.
        let key = try sessionKey(for: tokens)
        let response = try await send(
            "POST", "oauth2/token",
            form: [("grant_type", GrantType.refreshToken), ("refresh_token", tokens.refreshToken), ("client_id", configuration.clientId)],
            proof: key.map { DPoPProofSpec(key: $0) })
        guard response.status == 200 else {
            let error = UserClientError.from(status: response.status, body: response.body, headers: response.headers)
            if error == .notAuthorized || error == .notSignedIn {
                // The family is revoked or expired: this device is signed out.
                remove(Item.tokens)
                setStatus(.notSignedIn(.sessionEnded))
                throw .notSignedIn
            }
            throw error
        }
        return try storeTokens(response, proofKey: key)
    }

    /// Stores a token answer. `proofKey` is the key whose proof the request carried: `DPoP` tokens are bound to it.
    func storeTokens(_ response: HTTPResponseData, proofKey: (any JWSSigningKey)?) throws(UserClientError) -> AuthenticationTokens {
        guard let answer = try? JSONDecoder().decode(TokenResponse.self, from: response.body) else {
            throw .invalidInput("malformed token answer")
        }
        let now = clock()
        var thumbprint: String?
        if answer.tokenType.caseInsensitiveCompare("DPoP") == .orderedSame {
            guard let bound = proofKey?.publicKey.thumbprint ?? Self.confirmationThumbprint(answer.accessToken) else {
                throw .invalidInput("a DPoP token answer to a request without a proof")
            }
            thumbprint = bound
        }
        let tokens = AuthenticationTokens(
            idToken: answer.idToken, accessToken: answer.accessToken, refreshToken: answer.refreshToken,
            tokenExpiry: now.addingTimeInterval(TimeInterval(answer.expiresIn)),
            refreshTokenExpiry: now.addingTimeInterval(TimeInterval(answer.refreshExpiresIn)), tokenType: answer.tokenType,
            dpopKeyThumbprint: thumbprint)
        try save(tokens, Item.tokens)
        setStatus(.signedIn)
        return tokens
    }

    // MARK: HTTP

    func url(_ path: String) -> URL { configuration.serverURL.appendingPathComponent(path) }

    /// A request to Latch. `authorization` is the whole `Authorization` value; `proof` adds a DPoP proof (retried once
    /// with the server's nonce when it asks for one, see ``perform(_:proof:)``).
    func send(
        _ method: String, _ path: String, json: (some Encodable)? = Optional<String>.none, form: [(String, String)]? = nil,
        authorization: String? = nil, proof: DPoPProofSpec? = nil
    ) async throws(UserClientError) -> HTTPResponseData {
        var request = HTTPRequestData(method: method, url: url(path))
        request.headers["Accept"] = "application/json"
        if let authorization { request.headers["Authorization"] = authorization }
        if let json {
            request.headers["Content-Type"] = "application/json"
            request.body = try? JSONEncoder().encode(json)
        } else if let form {
            request.headers["Content-Type"] = "application/x-www-form-urlencoded"
            request.body = Data(Self.formEncode(form).utf8)
        }
        return try await perform(request, proof: proof)
    }

    /// A call with the access token (`DPoP` and a proof for a bound one, else `Bearer`); an answer saying the session
    /// ended signs this device out.
    func authorized(_ method: String, _ path: String, json: JSONValue? = nil) async throws(UserClientError) -> HTTPResponseData {
        let tokens = try await validTokens()
        let (authorization, proof) = try self.authorization(tokens)
        let response = try await send(method, path, json: json, authorization: authorization, proof: proof)
        guard (200..<300).contains(response.status) else {
            let error = UserClientError.from(status: response.status, body: response.body, headers: response.headers)
            if error == .notSignedIn {
                remove(Item.tokens)
                setStatus(.notSignedIn(.sessionEnded))
            }
            throw error
        }
        return response
    }

    static func formEncode(_ parameters: [(String, String)]) -> String {
        // ASCII only: `alphanumerics` would leave non-ASCII letters unencoded (not allowed in a URL's query).
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        return parameters.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(separator: "&")
    }
}
