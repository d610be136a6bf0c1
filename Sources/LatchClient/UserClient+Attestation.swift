import Crypto
import Foundation
import LatchJOSE
import LatchModel

/// Registration with device attestation (App Attest, Android key attestation, Play Integrity) and sign-in with App
/// Attest assertions. Each registration asks the server for a single-use challenge that the evidence binds.
extension UserClient {
    /// Registers with an App Attest key: a new Secure Enclave key attested over SHA-256 of the challenge. The user
    /// then signs in with ``signInWithAppAttest(_:)``. Returns the username.
    ///
    /// One key per registration: a key made but not attested (Apple's service was unreachable, say) is attested on the
    /// next try rather than replaced; a key once attested is never attested again (App Attest refuses that), so a
    /// registration refused after attestation makes a new key next time.
    /// - Throws: ``UserClientError/Code/unsupportedDevice`` where App Attest is not available (the simulator): fall
    ///   back to ``registerWithDeviceCheck(_:buildType:vendorId:registrationId:)`` or another registration.
    @discardableResult
    public func registerWithAppAttest(_ provider: any AppAttestProvider, registrationId: String? = nil) async throws(UserClientError) -> String {
        guard !isRegistered() else { throw .alreadyRegistered }
        guard provider.isSupported else { throw .platform(.unsupportedDevice, "this device does not support App Attest") }
        let challenge = try await registrationChallenge(.appAttest)
        let keyID: String
        if let pending = load(String.self, Item.pendingAppAttestKey) {
            keyID = pending
        } else {
            keyID = try await Self.attesting { try await provider.generateKey() }
            try save(keyID, Item.pendingAppAttestKey)
        }
        let attestation: Data
        do {
            attestation = try await Self.attesting {
                try await provider.attestKey(keyID, clientDataHash: Data(SHA256.hash(data: Data(challenge.utf8))))
            }
        } catch {
            // A key App Attest no longer knows (restored onto another device) or refused: the next try makes a new one.
            if error.code == .deviceKeyLost || error.code == .invalidInput || error.code == .attestationFailed { remove(Item.pendingAppAttestKey) }
            throw error
        }
        // Attested: this key cannot be attested again, whatever the server answers.
        remove(Item.pendingAppAttestKey)
        let request = RegistrationRequest(
            challengeType: .appAttest, answer: attestation.base64EncodedString(), registrationId: registrationId ?? UUID().uuidString.lowercased(),
            challenge: challenge, keyId: keyID)
        return try await sendRegistration(request, deviceKey: nil, deviceKeyID: keyID)
    }

    /// Signs in with the App Attest key registered here: a sign-in nonce, embedded in client data the key asserts.
    @discardableResult
    public func signInWithAppAttest(_ provider: any AppAttestProvider) async throws(UserClientError) -> AuthenticationTokens {
        guard let registration = try read(Registration.self, Item.registration), registration.type == .appAttest, let keyID = registration.deviceKeyId else {
            throw .notRegistered
        }
        setStatus(.signingIn)
        do throws(UserClientError) {
            let nonce = try await signInNonce(username: registration.username).nonce
            // The App Attest key cannot sign a proof: the client's own DPoP key does, and the assertion vouches for it
            // by naming its thumbprint (`dpop_jkt`), so an attested-DPoP app accepts it as attested.
            let key = try newSessionKey()
            var writer = JSONWriter(reservingCapacity: 128)
            writer.beginObject()
            writer.member("challenge", nonce)
            if let key { writer.member("dpop_jkt", key.publicKey.thumbprint) }
            writer.endObject()
            let clientData = Data(writer.bytes)
            let assertion: Data
            do {
                assertion = try await Self.attesting { try await provider.generateAssertion(keyID, clientDataHash: Data(SHA256.hash(data: clientData))) }
            } catch {
                guard error.code == .deviceKeyLost else { throw error }
                // App Attest keys never leave their device: after a restore onto another one the registration is useless.
                forgetLostRegistration()
                throw error
            }
            let response = try await send(
                "POST", "oauth2/token",
                form: [
                    ("grant_type", GrantType.appAttest), ("key_id", keyID), ("assertion", Base64URL.encode(assertion)),
                    ("client_data", Base64URL.encode(clientData)), ("client_id", configuration.clientId),
                ],
                proof: key.map { DPoPProofSpec(key: $0) })
            guard response.status == 200 else { throw UserClientError.from(status: response.status, body: response.body, headers: response.headers) }
            return try storeTokens(response, proofKey: key)
        } catch {
            // A lost key already said so (`deviceKeyLost`); any other failure is a failed sign-in.
            if error.code != .deviceKeyLost { setStatus(.notSignedIn(.signInFailed)) }
            throw error
        }
    }

    /// Registers the provider's attested key with its Android key attestation chain; the user signs in with
    /// ``signInWithKey()``. Returns the username.
    @discardableResult
    public func registerWithAndroidKeyAttestation(_ provider: any AndroidKeyAttestationProvider, registrationId: String? = nil)
        async throws(UserClientError) -> String
    {
        guard !isRegistered() else { throw .alreadyRegistered }
        let challenge = try await registrationChallenge(.androidKey)
        let chain: [Data]
        let key: PrivateKey
        do {
            (chain, key) = try await provider.generateAttestedKey(challenge: Data(challenge.utf8))
        } catch {
            throw .invalidInput("key attestation failed on this device: \(error)")
        }
        let answer = String(decoding: JSONValue.array(chain.map { .string($0.base64EncodedString()) }).serialized(), as: UTF8.self)
        let keyID = UUID().uuidString.lowercased()
        let request = RegistrationRequest(
            challengeType: .androidKey, answer: answer, registrationId: registrationId ?? UUID().uuidString.lowercased(),
            publicKey: RegistrationPublicKey(keyId: keyID, algorithm: key.algorithm.rawValue, publicKey: key.publicKey.pemRepresentation),
            challenge: challenge)
        return try await sendRegistration(request, deviceKey: key.storedRepresentation, deviceKeyID: keyID)
    }

    /// Registers a new device key with a Play Integrity token whose request hash binds the challenge and the key
    /// (base64url SHA-256 of the challenge and the key's SPKI); the user signs in with ``signInWithKey()``.
    @discardableResult
    public func registerWithPlayIntegrity(_ provider: any PlayIntegrityProvider, registrationId: String? = nil) async throws(UserClientError) -> String {
        guard !isRegistered() else { throw .alreadyRegistered }
        let challenge = try await registrationChallenge(.playIntegrity)
        let key = try newDeviceKey()
        let requestHash = Base64URL.encode(Data(SHA256.hash(data: Data(challenge.utf8) + key.publicKey.derRepresentation)))
        let token: String
        do {
            token = try await provider.integrityToken(requestHash: requestHash)
        } catch {
            throw .invalidInput("the Play Integrity API failed: \(error)")
        }
        let keyID = UUID().uuidString.lowercased()
        let request = RegistrationRequest(
            challengeType: .playIntegrity, answer: token, registrationId: registrationId ?? UUID().uuidString.lowercased(),
            publicKey: RegistrationPublicKey(keyId: keyID, algorithm: key.algorithm.rawValue, publicKey: key.publicKey.pemRepresentation),
            packageName: provider.packageName, challenge: challenge)
        return try await sendRegistration(request, deviceKey: key.storedRepresentation, deviceKeyID: keyID)
    }

    /// The build a DeviceCheck token comes from: `debug` tokens are checked on Apple's development host.
    public enum BuildType: String, Sendable {
        case debug, release
    }

    /// Registers a new device key with a DeviceCheck token (`DCDevice.current.generateToken()`): Latch checks the
    /// token with Apple and allows one registration per device. The user signs in with ``signInWithKey()``.
    @discardableResult
    public func registerWithDeviceCheck(token: Data, buildType: BuildType, vendorId: String?, registrationId: String? = nil)
        async throws(UserClientError) -> String
    {
        guard !isRegistered() else { throw .alreadyRegistered }
        let key = try newDeviceKey()
        let keyID = UUID().uuidString.lowercased()
        let request = RegistrationRequest(
            challengeType: .deviceCheck, answer: token.base64EncodedString(), registrationId: registrationId ?? UUID().uuidString.lowercased(),
            publicKey: RegistrationPublicKey(keyId: keyID, algorithm: key.algorithm.rawValue, publicKey: key.publicKey.pemRepresentation),
            buildType: buildType.rawValue, vendorId: vendorId)
        return try await sendRegistration(request, deviceKey: key.storedRepresentation, deviceKeyID: keyID)
    }

    /// Registers this device with App Attest where it is supported, else with a DeviceCheck token (one registration
    /// per device), else fails with ``UserClientError/Code/unsupportedDevice``. Returns the username.
    @discardableResult
    public func registerAttestedDevice(
        appAttest: any AppAttestProvider, deviceCheck: (any DeviceCheckTokenProvider)?, buildType: BuildType, vendorId: String? = nil
    ) async throws(UserClientError) -> String {
        if appAttest.isSupported { return try await registerWithAppAttest(appAttest) }
        guard let deviceCheck, deviceCheck.isSupported else {
            throw .platform(.unsupportedDevice, "this device supports neither App Attest nor DeviceCheck")
        }
        return try await registerWithDeviceCheck(deviceCheck, buildType: buildType, vendorId: vendorId)
    }

    /// Registers a new device key with a token `provider` makes (``DeviceCheckDevice`` on Apple devices).
    @discardableResult
    public func registerWithDeviceCheck(
        _ provider: any DeviceCheckTokenProvider, buildType: BuildType, vendorId: String?, registrationId: String? = nil
    ) async throws(UserClientError) -> String {
        guard provider.isSupported else { throw .platform(.unsupportedDevice, "this device does not support DeviceCheck") }
        let token = try await Self.attesting { try await provider.generateToken() }
        return try await registerWithDeviceCheck(token: token, buildType: buildType, vendorId: vendorId, registrationId: registrationId)
    }

    // MARK: Shared steps

    /// A platform attestation call: its ``UserClientError`` as it is, any other error as ``UserClientError/Code/attestationFailed``.
    static func attesting<T>(_ body: () async throws -> T) async throws(UserClientError) -> T {
        do {
            return try await body()
        } catch let error as UserClientError {
            throw error
        } catch {
            throw .platform(.attestationFailed, "the device could not attest: \(error)", underlying: error)
        }
    }

    /// Forgets a registration whose key this device cannot use any more (and the session bound to it), so the app can
    /// register again; the status says why.
    func forgetLostRegistration() {
        remove(Item.registration)
        remove(Item.tokens)
        setStatus(.notSignedIn(.deviceKeyLost))
    }

    func registrationChallenge(_ type: RegistrationMethod) async throws(UserClientError) -> String {
        let response = try await send("POST", "v1/registrations/challenge", json: RegistrationChallengeRequest(challengeType: type))
        guard response.status == 200, let answer = try? JSONDecoder().decode(RegistrationChallengeResponse.self, from: response.body) else {
            throw UserClientError.from(status: response.status, body: response.body, headers: response.headers)
        }
        return answer.challenge
    }

    func signInNonce(username: String) async throws(UserClientError) -> SignInChallengeResponse {
        let response = try await send("POST", "v1/sign-in/challenge", json: SignInChallengeRequest(username: username))
        guard response.status == 200, let challenge = try? JSONDecoder().decode(SignInChallengeResponse.self, from: response.body) else {
            throw UserClientError.from(status: response.status, body: response.body, headers: response.headers)
        }
        return challenge
    }

    /// A new device sign-in key (in the Secure Enclave where the provider has one).
    func newDeviceKey() throws(UserClientError) -> any DeviceSigningKey {
        try keyProvider.makeKey(deviceKeyAlgorithm)
    }

    /// Sends a registration and keeps what sign-in needs. A refused or lost answer leaves nothing: the evidence
    /// bound a single-use challenge, so a retry starts with a new one.
    func sendRegistration(_ request: RegistrationRequest, deviceKey: String?, deviceKeyID: String) async throws(UserClientError) -> String {
        let response = try await send("POST", "v1/registrations", json: request)
        guard (200..<300).contains(response.status) else {
            throw UserClientError.from(status: response.status, body: response.body, headers: response.headers)
        }
        guard let answer = try? JSONDecoder().decode(RegistrationResponse.self, from: response.body) else {
            throw .invalidInput("malformed registration answer")
        }
        try save(
            Registration(userId: answer.userId, username: answer.username, type: request.challengeType, deviceKeyId: deviceKeyID, deviceKey: deviceKey),
            Item.registration)
        return answer.username
    }
}
