import Crypto
import Foundation
import LatchJOSE
import LatchModel

extension UserClient {
    /// A FIDO credential this device holds: which authenticator made it, and what restores its key.
    struct FidoCredential: Codable {
        var authenticatorId: String
        var credentialId: String
        var model: LatchAuthenticatorModel
        var userHandle: String
        var material: Data
        /// A PIN authenticator's binding key (``DeviceSigningKey/storedRepresentation``, from the client's
        /// ``DeviceKeyProvider``: a Secure Enclave key on iOS): it signs every PIN assertion so the server counts only
        /// this device's wrong PINs. Nil for other authenticators and for PIN credentials made before binding.
        var bindingKey: String?
    }

    var fidoCredentials: [FidoCredential] { load([FidoCredential].self, Item.fidoCredentials) ?? [] }

    /// The WebAuthn origin this app signs: the server's origin (what Latch accepts by default).
    var fidoOrigin: String {
        let url = configuration.serverURL
        var origin = (url.scheme ?? "https") + "://" + (url.host ?? "localhost")
        if let port = url.port { origin += ":\(port)" }
        return origin
    }

    // MARK: Policy

    /// What the server accepts (`GET /v1/fido/policy`): for ``AuthenticatorSelector`` and ``PinEnroller``.
    public func fidoPolicy() async throws(UserClientError) -> FidoPolicy {
        let response = try await send("GET", "v1/fido/policy")
        return try Self.decode(FidoPolicy.self, response)
    }

    // MARK: Registration

    /// Registers `authenticator` to the signed-in user: the server's options, a new key (from the PIN, for a PIN
    /// authenticator — checked first against the server's PIN policy), a `packed` self attestation; the device keeps
    /// what restores the key. A PIN authenticator also gets a device binding key from the client's
    /// ``DeviceKeyProvider`` (the Secure Enclave on iOS), whose signature every later PIN assertion carries, so that
    /// only this device's wrong PINs count at the server (docs/fido.md, "PIN binding"). Returns the server's view of
    /// the new authenticator.
    @discardableResult
    public func registerFidoAuthenticator(_ authenticator: any FidoAuthenticator, pin: String? = nil, name: String? = nil)
        async throws(UserClientError) -> FidoAuthenticatorInfo
    {
        if authenticator.model == .pin {
            guard let pin else { throw .invalidInput("a PIN authenticator needs the PIN") }
            try await checkPolicy(pin)
        }
        let options = try Self.json(try await authorized("POST", "v1/fido/registration/options", json: .object([:])))
        let (ceremonyID, credential, made) = try await makeCredential(authenticator, options: options, pin: pin)
        var body: [String: JSONValue] = ["ceremonyId": .string(ceremonyID), "credential": credential]
        if let name { body["name"] = .string(name) }
        let info = try Self.decode(FidoAuthenticatorInfo.self, try await authorized("POST", "v1/fido/registration", json: .object(body)))
        var saved = made
        saved.authenticatorId = info.id
        try save(fidoCredentials + [saved], Item.fidoCredentials)
        return info
    }

    /// Passwordless sign-up: a new user whose first credential is `authenticator` (`POST /v1/fido/sign-up/options`,
    /// then `POST /v1/registrations` with `WEBAUTHN`). `username` is asked for (absent: the server uses the new
    /// user's id). Like ``registerWithAuthenticationProvider(_:registrationId:)`` the request is kept until the
    /// server answers, so a retry after a lost answer resends it and gets the same user. Then sign in with
    /// ``signInWithFido(_:pin:)``. Returns the username.
    @discardableResult
    public func signUpWithFido(_ authenticator: any FidoAuthenticator, pin: String? = nil, username: String? = nil, name: String? = nil)
        async throws(UserClientError) -> String
    {
        guard !isRegistered() else { throw .alreadyRegistered }
        var pending = load(PendingRegistration.self, Item.pendingRegistration)
        if pending?.fido == nil || pending?.fido?.model != authenticator.model { pending = nil }
        if pending == nil {
            if authenticator.model == .pin {
                guard let pin else { throw .invalidInput("a PIN authenticator needs the PIN") }
                try await checkPolicy(pin)
            }
            var body: [String: JSONValue] = [:]
            if let username { body["username"] = .string(username) }
            let options = try Self.json(try await send("POST", "v1/fido/sign-up/options", json: JSONValue.object(body)))
            let (ceremonyID, credential, made) = try await makeCredential(authenticator, options: options, pin: pin)
            var answer: [String: JSONValue] = ["ceremonyId": .string(ceremonyID), "credential": credential]
            if let name { answer["name"] = .string(name) }
            let request = RegistrationRequest(
                challengeType: .webauthn, answer: String(decoding: JSONValue.object(answer).serialized(), as: UTF8.self),
                registrationId: UUID().uuidString.lowercased())
            pending = PendingRegistration(request: request, deviceKey: nil, fido: made)
            try save(pending, Item.pendingRegistration)
        }
        guard let pending, var credential = pending.fido else { throw .invalidInput("no sign-up to send") }
        let response = try await send("POST", "v1/registrations", json: pending.request)
        guard (200..<300).contains(response.status) else {
            let error = UserClientError.from(status: response.status, body: response.body, headers: response.headers)
            if error != .serviceUnavailable { remove(Item.pendingRegistration) }
            throw error
        }
        guard let answer = try? JSONDecoder().decode(RegistrationResponse.self, from: response.body), let authenticatorID = answer.authenticatorId else {
            throw .invalidInput("malformed registration answer")
        }
        credential.authenticatorId = authenticatorID
        try save(fidoCredentials + [credential], Item.fidoCredentials)
        try save(
            Registration(userId: answer.userId, username: answer.username, type: .webauthn, deviceKeyId: nil, deviceKey: nil), Item.registration)
        remove(Item.pendingRegistration)
        return answer.username
    }

    /// A new credential for the creation `options` (`{ceremonyId, publicKey}`): a key from `authenticator` (from the
    /// PIN, for a PIN authenticator), a `packed` self attestation; and what restores the key on this device (its
    /// `authenticatorId` is the server's, once it answers).
    func makeCredential(_ authenticator: any FidoAuthenticator, options: JSONValue, pin: String?)
        async throws(UserClientError) -> (ceremonyID: String, credential: JSONValue, stored: FidoCredential)
    {
        let decoded = try PasskeyMessages.decode(FidoCreationOptions.self, options, "registration")
        let (ceremonyID, publicKey) = (decoded.ceremonyId, decoded.publicKey)
        guard let rpID = publicKey.rp.id else { throw .invalidInput("registration options have no rp.id") }
        let challenge = publicKey.challenge.base64URL
        let userHandle = publicKey.user.id.base64URL
        let key = try await authenticator.createKey(pin: pin)
        var credentialID = [UInt8](repeating: 0, count: 32)
        for index in credentialID.indices { credentialID[index] = UInt8.random(in: 0...255) }
        var credential = try await WebAuthnMessages.registration(
            credentialID: credentialID, aaguid: authenticator.model.aaguid, publicKey: key.publicKey, rpID: rpID, origin: fidoOrigin,
            challenge: challenge
        ) { message throws(UserClientError) in try await authenticator.sign(message, material: key.material, pin: pin) }
        var bindingKey: String?
        if authenticator.model == .pin {
            // The PIN binding key: made by the client's key provider (the Secure Enclave on iOS), registered with
            // proof of possession; the server then counts only wrong PINs this device vouches for.
            let binding = try keyProvider.makeKey(.ES256)
            credential = try WebAuthnMessages.withPinBinding(
                credential, key: binding, challenge: Array(publicKey.challenge.data), credentialID: credentialID)
            bindingKey = binding.storedRepresentation
        }
        let stored = FidoCredential(
            authenticatorId: "", credentialId: Base64URL.encode(Data(credentialID)), model: authenticator.model, userHandle: userHandle,
            material: key.material, bindingKey: bindingKey)
        return (ceremonyID, credential, stored)
    }

    /// The binding key of `stored` when it is a bound PIN credential, restored before anything is signed: on another
    /// device (a restored backup) this throws ``UserClientError/deviceKeyLost`` and nothing reaches the server.
    func pinBindingKey(of stored: FidoCredential) throws(UserClientError) -> (any DeviceSigningKey)? {
        guard stored.model == .pin, let text = stored.bindingKey else { return nil }
        return try keyProvider.restoreKey(text)
    }

    /// `assertion` with this device's binding signature (`pinBinding`) by `key`; unchanged without a key (an unbound
    /// PIN credential made before binding, or another authenticator).
    func bound(_ assertion: JSONValue, of stored: FidoCredential, key: (any DeviceSigningKey)?, challenge: String) throws(UserClientError) -> JSONValue {
        guard let key else { return assertion }
        guard let challengeBytes = Base64URL.decode(challenge), let credentialID = Base64URL.decode(stored.credentialId) else {
            throw .invalidInput("malformed authentication options")
        }
        return try WebAuthnMessages.withPinBinding(assertion, key: key, challenge: Array(challengeBytes), credentialID: Array(credentialID))
    }

    // MARK: Sign-in

    /// Signs in with the credential `authenticator` registered on this device (a discoverable ceremony: the user
    /// handle names the user). A wrong PIN throws ``UserClientError/pinAttemptFailed(_:)`` with the server's count.
    @discardableResult
    public func signInWithFido(_ authenticator: any FidoAuthenticator, pin: String? = nil) async throws(UserClientError) -> AuthenticationTokens {
        guard let stored = fidoCredentials.last(where: { $0.model == authenticator.model }), let credentialID = Base64URL.decode(stored.credentialId)
        else { throw .notRegistered }
        setStatus(.signingIn)
        do throws(UserClientError) {
            let options = try PasskeyMessages.decode(
                FidoRequestOptions.self, try Self.json(try await send("POST", "v1/fido/authentication/options", json: JSONValue.object([:]))),
                "authentication")
            let (ceremonyID, challenge) = (options.ceremonyId, options.publicKey.challenge.base64URL)
            guard let rpID = options.publicKey.rpId else { throw UserClientError.invalidInput("authentication options have no rpId") }
            let bindingKey = try pinBindingKey(of: stored)
            let assertion = try await WebAuthnMessages.assertion(
                credentialID: Array(credentialID), userHandle: stored.userHandle, rpID: rpID, origin: fidoOrigin, challenge: challenge
            ) { message throws(UserClientError) in try await authenticator.sign(message, material: stored.material, pin: pin) }
            return try await webAuthnGrant(ceremonyID: ceremonyID, assertion: try bound(assertion, of: stored, key: bindingKey, challenge: challenge))
        } catch {
            setStatus(.notSignedIn(.signInFailed))
            throw error
        }
    }

    // MARK: Status, list, deregistration

    /// The server's count for this device's PIN authenticator, before a ceremony.
    public func pinStatus() async throws(UserClientError) -> FidoPinStatus {
        guard let stored = fidoCredentials.last(where: { $0.model == .pin }) else { throw .notRegistered }
        let response = try await send("POST", "v1/fido/authenticators/status", json: FidoStatusRequest(credentialId: stored.credentialId))
        return try Self.decode(FidoPinStatus.self, response)
    }

    /// The signed-in user's authenticators (on every device).
    public func fidoAuthenticators() async throws(UserClientError) -> [FidoAuthenticatorInfo] {
        try Self.decode(FidoAuthenticatorList.self, try await authorized("GET", "v1/me/authenticators")).authenticators
    }

    /// Deregisters one authenticator (needs a recent sign-in) and forgets its key here if this device holds it.
    public func deleteFidoAuthenticator(id: String) async throws(UserClientError) {
        _ = try await authorized("DELETE", "v1/me/authenticators/\(id)")
        try save(fidoCredentials.filter { $0.authenticatorId != id }, Item.fidoCredentials)
    }

    /// Deregisters every authenticator of the user (needs a recent sign-in) and forgets this device's keys.
    public func deleteAllFidoAuthenticators() async throws(UserClientError) {
        _ = try await authorized("DELETE", "v1/me/authenticators")
        remove(Item.fidoCredentials)
    }

    // MARK: PIN change

    /// Changes the PIN of this device's PIN authenticator: proves `oldPin` (a wrong one counts at the server like a
    /// sign-in's) and registers the key `newPin` derives, under the same credential; the server swaps the keys in one
    /// step. The new PIN is checked against the policy first.
    @discardableResult
    public func changePin(_ authenticator: PinAuthenticator, oldPin: String, newPin: String) async throws(UserClientError) -> FidoAuthenticatorInfo {
        guard let stored = fidoCredentials.last(where: { $0.model == .pin }), let credentialID = Base64URL.decode(stored.credentialId) else {
            throw .notRegistered
        }
        try await checkPolicy(newPin)
        let options = try PasskeyMessages.decode(
            FidoRequestOptions.self,
            try Self.json(try await authorized("POST", "v1/fido/pin-change/options", json: .object(["authenticatorId": .string(stored.authenticatorId)]))),
            "PIN change")
        let (ceremonyID, challenge) = (options.ceremonyId, options.publicKey.challenge.base64URL)
        guard let rpID = options.publicKey.rpId else { throw .invalidInput("PIN change options have no rpId") }
        let bindingKey = try pinBindingKey(of: stored)
        let assertion = try bound(
            try await WebAuthnMessages.assertion(
                credentialID: Array(credentialID), userHandle: stored.userHandle, rpID: rpID, origin: fidoOrigin, challenge: challenge
            ) { message throws(UserClientError) in try await authenticator.sign(message, material: stored.material, pin: oldPin) },
            of: stored, key: bindingKey, challenge: challenge)
        // The new PIN's key goes under the same credential id; the binding key stays as registered.
        let key = try await authenticator.createKey(pin: newPin)
        let credential = try await WebAuthnMessages.registration(
            credentialID: Array(credentialID), aaguid: authenticator.model.aaguid, publicKey: key.publicKey, rpID: rpID, origin: fidoOrigin,
            challenge: challenge
        ) { message throws(UserClientError) in try await authenticator.sign(message, material: key.material, pin: newPin) }
        let info = try Self.decode(
            FidoAuthenticatorInfo.self,
            try await authorized(
                "POST", "v1/fido/pin-change",
                json: .object([
                    "ceremonyId": .string(ceremonyID), "authenticatorId": .string(stored.authenticatorId), "assertion": assertion,
                    "credential": credential,
                ])))
        var credentials = fidoCredentials
        for index in credentials.indices where credentials[index].authenticatorId == stored.authenticatorId {
            credentials[index].material = key.material
        }
        try save(credentials, Item.fidoCredentials)
        return info
    }

    /// A new PIN checked against the server's PIN policy.
    /// The WebAuthn grant for a signed assertion of ceremony `ceremonyID`, with a DPoP proof of the new session's key;
    /// the tokens are stored.
    func webAuthnGrant(ceremonyID: String, assertion: JSONValue) async throws(UserClientError) -> AuthenticationTokens {
        let key = try newSessionKey()
        let response = try await send(
            "POST", "oauth2/token",
            form: [
                ("grant_type", GrantType.webauthn), ("ceremony_id", ceremonyID),
                ("credential", String(decoding: assertion.serialized(), as: UTF8.self)), ("client_id", configuration.clientId),
            ],
            proof: key.map { DPoPProofSpec(key: $0) })
        guard response.status == 200 else { throw UserClientError.from(status: response.status, body: response.body, headers: response.headers) }
        return try storeTokens(response, proofKey: key)
    }

    func checkPolicy(_ pin: String) async throws(UserClientError) {
        let enroller = PinEnroller(policy: try await fidoPolicy().pin)
        do {
            try enroller.validate(pin)
        } catch {
            throw .pinRefused(error)
        }
    }

    // MARK: Answers

    static func json(_ response: HTTPResponseData) throws(UserClientError) -> JSONValue {
        guard (200..<300).contains(response.status) else { throw UserClientError.from(status: response.status, body: response.body, headers: response.headers) }
        guard let value = try? JSONValue.parse(response.body), value.objectValue != nil else { throw .invalidInput("malformed answer") }
        return value
    }

    static func decode<T: Decodable>(_ type: T.Type, _ response: HTTPResponseData) throws(UserClientError) -> T {
        guard (200..<300).contains(response.status) else { throw UserClientError.from(status: response.status, body: response.body, headers: response.headers) }
        guard let value = try? JSONDecoder().decode(T.self, from: response.body) else { throw .invalidInput("malformed answer") }
        return value
    }
}
