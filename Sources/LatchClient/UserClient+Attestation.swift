import Crypto
import Foundation
import LatchJOSE
import LatchModel

/// Registration with device attestation (App Attest, Android key attestation, Play Integrity) and sign-in with App
/// Attest assertions. Each registration asks the server for a single-use challenge that the evidence binds.
extension UserClient {
    /// Registers with an App Attest key: a new Secure Enclave key attested over SHA-256 of the challenge. The user
    /// then signs in with ``signInWithAppAttest(_:)``. Returns the username.
    @discardableResult
    public func registerWithAppAttest(_ provider: any AppAttestProvider, registrationId: String? = nil) async throws(UserClientError) -> String {
        guard !isRegistered() else { throw .alreadyRegistered }
        let challenge = try await registrationChallenge(.appAttest)
        let keyID: String
        let attestation: Data
        do {
            keyID = try await provider.generateKey()
            attestation = try await provider.attestKey(keyID, clientDataHash: Data(SHA256.hash(data: Data(challenge.utf8))))
        } catch {
            throw .invalidInput("App Attest failed on this device: \(error)")
        }
        let request = RegistrationRequest(
            challengeType: .appAttest, answer: attestation.base64EncodedString(), registrationId: registrationId ?? UUID().uuidString.lowercased(),
            challenge: challenge, keyId: keyID)
        return try await sendRegistration(request, deviceKeyPEM: nil, deviceKeyID: keyID)
    }

    /// Signs in with the App Attest key registered here: a sign-in nonce, embedded in client data the key asserts.
    @discardableResult
    public func signInWithAppAttest(_ provider: any AppAttestProvider) async throws(UserClientError) -> AuthenticationTokens {
        guard let registration = load(Registration.self, Item.registration), registration.type == .appAttest, let keyID = registration.deviceKeyId else {
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
                assertion = try await provider.generateAssertion(keyID, clientDataHash: Data(SHA256.hash(data: clientData)))
            } catch {
                throw UserClientError.invalidInput("App Attest could not assert: \(error)")
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
            setStatus(.notSignedIn(.signInFailed))
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
        return try await sendRegistration(request, deviceKeyPEM: key.pemRepresentation, deviceKeyID: keyID)
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
        return try await sendRegistration(request, deviceKeyPEM: key.pemRepresentation, deviceKeyID: keyID)
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
        return try await sendRegistration(request, deviceKeyPEM: key.pemRepresentation, deviceKeyID: keyID)
    }

    // MARK: Shared steps

    func registrationChallenge(_ type: ChallengeType) async throws(UserClientError) -> String {
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

    func newDeviceKey() throws(UserClientError) -> PrivateKey {
        guard let key = try? PrivateKey.generate(deviceKeyAlgorithm) else { throw .invalidConfiguration("cannot make a device key") }
        return key
    }

    /// Sends a registration and keeps what sign-in needs. A refused or lost answer leaves nothing: the evidence
    /// bound a single-use challenge, so a retry starts with a new one.
    func sendRegistration(_ request: RegistrationRequest, deviceKeyPEM: String?, deviceKeyID: String) async throws(UserClientError) -> String {
        let response = try await send("POST", "v1/registrations", json: request)
        guard (200..<300).contains(response.status) else {
            throw UserClientError.from(status: response.status, body: response.body, headers: response.headers)
        }
        guard let answer = try? JSONDecoder().decode(RegistrationResponse.self, from: response.body) else {
            throw .invalidInput("malformed registration answer")
        }
        try save(
            Registration(userId: answer.userId, username: answer.username, type: request.challengeType, deviceKeyId: deviceKeyID, deviceKeyPEM: deviceKeyPEM),
            Item.registration)
        return answer.username
    }
}
