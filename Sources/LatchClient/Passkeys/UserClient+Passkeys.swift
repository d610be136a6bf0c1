import Foundation
import LatchJOSE
import LatchModel

/// Passkeys through the OS: the platform (a ``PasskeyController``, ``SystemPasskeyController`` on Apple platforms)
/// makes and holds the key; the SDK carries the server's options to it and its answer to the server. The device keeps
/// no key material of its own — only the registration and the tokens, as the other sign-ins do.
extension UserClient {
    /// A passwordless sign-up sent but not yet answered: resent as it is, so a lost answer gets the same user (the
    /// passkey the platform made for it is not made again).
    struct PendingPasskeySignUp: Codable {
        var request: RegistrationRequest
    }

    /// Where ``PendingPasskeySignUp`` is kept: apart from other registrations, so no other path resends it.
    static let pendingPasskeySignUpItem = "pending-passkey-sign-up"

    /// Passwordless sign-up with a passkey: a new user whose first credential is a passkey the platform creates
    /// (`POST /v1/fido/sign-up/options`, the system sheet, `POST /v1/registrations` with `WEBAUTHN`), then a sign-in
    /// with it — a second sheet, limited to the new passkey, since the server opens sessions only from an
    /// assertion. Returns the tokens, stored like every sign-in's.
    ///
    /// - Parameters:
    ///   - username: the username to ask for (absent: the server uses the new user's id); a taken one is
    ///     ``UserClientError/alreadyRegistered``, before any sheet.
    ///   - displayName: what the sheet shows for the account (absent: the username).
    ///
    /// Like ``signUpWithFido(_:pin:username:name:)``, the sign-up request is kept until the server answers, so a
    /// retry after a lost answer resends it (whatever `username` it is given) and gets the same user without a new
    /// passkey. A closed sheet writes nothing (``UserClientError/cancelled``). When the user is registered but the
    /// sign-in's sheet is closed, the registration is kept and the error thrown: sign in with
    /// ``signInWithPasskey(controller:username:)``.
    @discardableResult
    public func signUpWithPasskey(controller: any PasskeyController, username: String? = nil, displayName: String? = nil)
        async throws(UserClientError) -> AuthenticationTokens
    {
        guard !isRegistered() else { throw .alreadyRegistered }
        var pending = load(PendingPasskeySignUp.self, Self.pendingPasskeySignUpItem)
        if pending == nil {
            var body: [String: JSONValue] = [:]
            if let username { body["username"] = .string(username) }
            let options = try Self.json(try await send("POST", "v1/fido/sign-up/options", json: JSONValue.object(body)))
            let (ceremonyID, request) = try PasskeyMessages.registrationRequest(from: options, displayName: displayName)
            let credential = try PasskeyMessages.registrationJSON(try await controller.createPasskey(request))
            let answer: JSONValue = .object(["ceremonyId": .string(ceremonyID), "credential": credential])
            pending = PendingPasskeySignUp(
                request: RegistrationRequest(
                    challengeType: .webauthn, answer: String(decoding: answer.serialized(), as: UTF8.self),
                    registrationId: UUID().uuidString.lowercased()))
            try save(pending, Self.pendingPasskeySignUpItem)
        }
        guard let pending else { throw .invalidInput("no sign-up to send") }
        let response = try await send("POST", "v1/registrations", json: pending.request)
        guard (200..<300).contains(response.status) else {
            let error = UserClientError.from(status: response.status, body: response.body, headers: response.headers)
            if error != .serviceUnavailable { remove(Self.pendingPasskeySignUpItem) }
            throw error
        }
        guard let registered = try? JSONDecoder().decode(RegistrationResponse.self, from: response.body) else {
            throw .invalidInput("malformed registration answer")
        }
        // No device key: the passkey is the credential, and the platform holds it.
        try save(Registration(userId: registered.userId, username: registered.username, type: .webauthn), Item.registration)
        remove(Self.pendingPasskeySignUpItem)
        // By username: the server allows the new passkey only, so the sheet offers just that one.
        return try await signInWithPasskey(controller: controller, username: registered.username)
    }

    /// Adds a passkey the platform creates to the signed-in user (`POST /v1/fido/registration/options`, the system
    /// sheet, `POST /v1/fido/registration`). `name` (1–64 characters) is the server's name for it. Returns the server's
    /// view of the new authenticator. A closed sheet sends nothing (``UserClientError/cancelled``).
    @discardableResult
    public func registerPasskey(controller: any PasskeyController, name: String? = nil) async throws(UserClientError) -> FidoAuthenticatorInfo {
        // Checked before the sheet: a refusal after it would leave a passkey on the device the server never took.
        if let name, !(1...64).contains(name.count) { throw .invalidInput("name must be 1–64 characters") }
        let options = try Self.json(try await authorized("POST", "v1/fido/registration/options", json: .object([:])))
        let (ceremonyID, request) = try PasskeyMessages.registrationRequest(from: options)
        let credential = try PasskeyMessages.registrationJSON(try await controller.createPasskey(request))
        var body: [String: JSONValue] = ["ceremonyId": .string(ceremonyID), "credential": credential]
        if let name { body["name"] = .string(name) }
        return try Self.decode(FidoAuthenticatorInfo.self, try await authorized("POST", "v1/fido/registration", json: .object(body)))
    }

    /// Signs in with a passkey: by `username` (the sheet offers that user's passkeys), or, without one, discoverably
    /// (the user picks any passkey of the relying party; its user handle names the user). The tokens are bound to this
    /// client's DPoP key like every sign-in's. On a device that has no registration yet (a passkey synced from
    /// another device), the signed-in user becomes this device's registration. A closed sheet sends nothing and
    /// stores nothing (``UserClientError/cancelled``).
    @discardableResult
    public func signInWithPasskey(controller: any PasskeyController, username: String? = nil) async throws(UserClientError) -> AuthenticationTokens {
        setStatus(.signingIn)
        do throws(UserClientError) {
            var body: [String: JSONValue] = [:]
            if let username { body["username"] = .string(username) }
            let options = try Self.json(try await send("POST", "v1/fido/authentication/options", json: JSONValue.object(body)))
            let (ceremonyID, request) = try PasskeyMessages.assertionRequest(from: options)
            let assertion = try PasskeyMessages.assertionJSON(try await controller.assertPasskey(request))
            let tokens = try await webAuthnGrant(ceremonyID: ceremonyID, assertion: assertion)
            if !isRegistered(), let claims = try? ParsedJWS(tokens.idToken).claims, let subject = claims["sub"]?.stringValue {
                let username = claims["username"]?.stringValue ?? subject
                try save(Registration(userId: subject, username: username, type: .webauthn), Item.registration)
            }
            return tokens
        } catch {
            setStatus(.notSignedIn(.signInFailed))
            throw error
        }
    }
}
