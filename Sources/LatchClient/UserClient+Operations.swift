import Foundation
import LatchJOSE
import LatchModel

extension UserClient {
    // MARK: Registration

    /// Registers the user `provider` vouches for; returns the username.
    ///
    /// With a ``TESTAuthenticationProvider`` a device key pair is made and its public key registered (the
    /// user then signs in with ``signInWithKey()``); with a ``LocalAuthenticationProvider`` (custom federated)
    /// no key is made. A `registrationId` is generated when absent and kept until the server answers, so a
    /// retry after a lost answer resends the same registration and gets the same user.
    @discardableResult
    public func registerWithAuthenticationProvider(_ provider: any AuthenticationProvider, registrationId: String? = nil)
        async throws(UserClientError) -> String
    {
        guard !isRegistered() else { throw .alreadyRegistered }
        var pending = load(PendingRegistration.self, Item.pendingRegistration)
        if let existing = pending, let registrationId, existing.request.registrationId != registrationId {
            pending = nil
        }
        if pending == nil {
            let info: AuthenticationInfo
            do {
                info = try provider.authenticationInfo()
            } catch {
                throw .invalidInput("the provider could not sign: \(error)")
            }
            var request = RegistrationRequest(
                challengeType: info.type, answer: info.jwt, registrationId: registrationId ?? UUID().uuidString.lowercased())
            var deviceKey: String?
            if info.type == .test {
                let key = try newDeviceKey()
                request.publicKey = RegistrationPublicKey(
                    keyId: UUID().uuidString.lowercased(), algorithm: key.algorithm.rawValue, publicKey: key.publicKey.pemRepresentation)
                deviceKey = key.storedRepresentation
            }
            pending = PendingRegistration(request: request, deviceKey: deviceKey)
            try save(pending, Item.pendingRegistration)
        }
        guard let pending else { throw .invalidInput("no registration to send") }
        // A network failure propagates with the pending registration kept for the retry.
        let response = try await send("POST", "v1/registrations", json: pending.request)
        guard (200..<300).contains(response.status) else {
            let error = UserClientError.from(status: response.status, body: response.body, headers: response.headers)
            // A definite refusal ends this attempt; unavailability keeps it for a retry.
            if error != .serviceUnavailable { remove(Item.pendingRegistration) }
            throw error
        }
        guard let answer = try? JSONDecoder().decode(RegistrationResponse.self, from: response.body) else {
            throw .invalidInput("malformed registration answer")
        }
        try save(
            Registration(
                userId: answer.userId, username: answer.username, type: pending.request.challengeType,
                deviceKeyId: pending.request.publicKey?.keyId, deviceKey: pending.deviceKey),
            Item.registration)
        remove(Item.pendingRegistration)
        return answer.username
    }

    // MARK: Sign-in

    /// Signs in with the device key: challenge → assertion signed over the nonce → tokens (RFC 7523 JWT-bearer).
    @discardableResult
    public func signInWithKey() async throws(UserClientError) -> AuthenticationTokens {
        guard let registration = try read(Registration.self, Item.registration), let stored = registration.deviceKey,
            let keyID = registration.deviceKeyId
        else { throw .notRegistered }
        let key: any DeviceSigningKey
        do {
            key = try keyProvider.restoreKey(stored)
        } catch {
            guard error.code == .deviceKeyLost else { throw error }
            // Restored onto another device: the registration cannot sign in from here. Forget it (and the session
            // bound to it) so the app can register this device again.
            forgetLostRegistration()
            throw .deviceKeyLost
        }
        setStatus(.signingIn)
        do throws(UserClientError) {
            let challengeResponse = try await send("POST", "v1/sign-in/challenge", json: SignInChallengeRequest(username: registration.username))
            guard challengeResponse.status == 200,
                let challenge = try? JSONDecoder().decode(SignInChallengeResponse.self, from: challengeResponse.body)
            else {
                throw UserClientError.from(status: challengeResponse.status, body: challengeResponse.body, headers: challengeResponse.headers)
            }
            // On the server's time when a refused DPoP proof taught it (see `serverClockOffset`).
            let now = Int64(clock().timeIntervalSince1970 + serverClockOffset)
            let assertion: String
            do {
                assertion = try JWSSigner.sign(
                    claims: [
                    "iss": .string(registration.username), "sub": .string(registration.username), "aud": .string(challenge.audience),
                    "jti": .string(challenge.nonce), "iat": .int(now), "exp": .int(now + 300),
                ], key: key, keyID: keyID)
            } catch {
                throw UserClientError.invalidConfiguration("the device key cannot sign: \(error)")
            }
            return try await exchange(assertion: assertion)
        } catch {
            setStatus(.notSignedIn(.signInFailed))
            throw error
        }
    }

    /// Signs in with a JWT from `provider` (custom federated sign-in).
    @discardableResult
    public func signInWithAuthenticationProvider(_ provider: any AuthenticationProvider) async throws(UserClientError) -> AuthenticationTokens {
        setStatus(.signingIn)
        do throws(UserClientError) {
            let info: AuthenticationInfo
            do {
                info = try provider.authenticationInfo()
            } catch {
                throw UserClientError.invalidInput("the provider could not sign: \(error)")
            }
            let tokens = try await exchange(assertion: info.jwt)
            if !isRegistered(), let subject = try? ParsedJWS(tokens.idToken).claims["sub"]?.stringValue {
                // A federated user registered elsewhere (another device, another app) is known here from now on.
                try save(Registration(userId: subject, username: info.username, type: .fsso, deviceKeyId: nil, deviceKey: nil), Item.registration)
            }
            return tokens
        } catch {
            setStatus(.notSignedIn(.signInFailed))
            throw error
        }
    }

    /// The JWT-bearer grant, with a DPoP proof of the new session's key (the device sign-in key when there is one).
    private func exchange(assertion: String) async throws(UserClientError) -> AuthenticationTokens {
        let key = try newSessionKey()
        let response = try await send(
            "POST", "oauth2/token",
            form: [("grant_type", GrantType.jwtBearer), ("assertion", assertion), ("client_id", configuration.clientId)],
            proof: key.map { DPoPProofSpec(key: $0) })
        guard response.status == 200 else {
            throw UserClientError.from(status: response.status, body: response.body, headers: response.headers)
        }
        return try storeTokens(response, proofKey: key)
    }

    // MARK: Sign-out levels: clear tokens (local), sign out (this device), global sign-out (every device), de-register

    /// Forgets the tokens on this device only.
    public func clearAuthTokens() {
        remove(Item.tokens)
        setStatus(.notSignedIn(.tokensCleared))
    }

    /// Revokes this device's refresh token, then forgets the tokens. Succeeds when already signed out.
    public func signOut() async throws(UserClientError) {
        if let token = refreshToken() {
            let response = try await send("POST", "oauth2/revoke", form: [("token", token), ("client_id", configuration.clientId)])
            guard response.status == 200 else {
                throw UserClientError.from(status: response.status, body: response.body, headers: response.headers)
            }
        }
        remove(Item.tokens)
        setStatus(.notSignedIn(.signedOut))
    }

    /// Ends every session of the user on every device, then forgets the tokens here.
    public func globalSignOut() async throws(UserClientError) {
        _ = try await authorized("POST", "v1/me/global-sign-out")
        remove(Item.tokens)
        setStatus(.notSignedIn(.signedOut))
    }

    /// Deletes the user and everything attached on the server, then resets this client. Needs a recent
    /// sign-in: `insufficientAuthentication(maxAge:)` means sign in again and retry.
    public func deregister() async throws(UserClientError) {
        _ = try await authorized("DELETE", "v1/me")
        try wipe()
        setStatus(.notSignedIn(.deregistered))
    }

    /// Removes this client's keys and tokens (its namespace only). The user can never sign in from here again.
    public func reset() throws(UserClientError) {
        try wipe()
        setStatus(.notSignedIn(.reset))
    }

    private func wipe() throws(UserClientError) {
        do {
            try keyStore.removeAll()
        } catch {
            throw .invalidConfiguration("the key store cannot be cleared: \(error)")
        }
    }
}
