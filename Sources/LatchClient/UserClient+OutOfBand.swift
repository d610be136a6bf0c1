import Foundation
import LatchJOSE
import LatchModel

/// What an out-of-band operation did on this device.
public enum OutOfBandOutcome: Sendable, Equatable {
    /// This device's authenticator joined the user (enrollment, device linking).
    case registered(FidoAuthenticatorInfo)
    /// The user approved the text the backend sent.
    case approved
    /// The user declined it.
    case denied
    /// The authenticator with this id was deregistered.
    case deregistered(String)
}

extension UserClient {
    /// Runs the operation an out-of-band payload (a scanned QR code or an opened app link, see
    /// ``OutOfBandPayload/init(decoding:)``) names, with `authenticator`:
    /// - registration: a new credential joins the payload's user (this device becomes registered as that user
    ///   when it was not); sign in afterwards with ``signInWithFido(_:pin:)``;
    /// - authentication: `approve` is shown the backend's text; `true` signs the approval, `false` declines it;
    /// - deregistration: this device proves it holds the credential, which is deregistered and forgotten.
    ///
    /// Only payloads for this client's server are redeemed (a QR code naming another host is refused).
    public func redeemOutOfBand(
        _ payload: OutOfBandPayload, authenticator: any FidoAuthenticator, pin: String? = nil, name: String? = nil,
        approve: @Sendable (String) async -> Bool = { _ in true }
    ) async throws(UserClientError) -> OutOfBandOutcome {
        let operation = try redeemOperation(payload)
        let redeemed = try Self.json(try await send("POST", "v1/oob/redeem/\(operation)", json: OutOfBandRedeemRequest(token: payload.data.token)))
        guard let ceremonyID = redeemed["ceremonyId"]?.stringValue, redeemed["publicKey"] != nil else { throw .invalidInput("malformed redeem answer") }
        switch operation {
        case "registration":
            if authenticator.model == .pin {
                guard let pin else { throw .invalidInput("a PIN authenticator needs the PIN") }
                try await checkPolicy(pin)
            }
            let (_, credential, made) = try await makeCredential(authenticator, options: redeemed, pin: pin)
            var body: [String: JSONValue] = ["ceremonyId": .string(ceremonyID), "credential": credential]
            if let name { body["name"] = .string(name) }
            let info = try Self.decode(FidoAuthenticatorInfo.self, try await send("POST", "v1/oob/registration", json: JSONValue.object(body)))
            var saved = made
            saved.authenticatorId = info.id
            try save(fidoCredentials + [saved], Item.fidoCredentials)
            if !isRegistered(), let userID = redeemed["userId"]?.stringValue, let username = redeemed["username"]?.stringValue {
                try save(Registration(userId: userID, username: username, type: .webauthn, deviceKeyId: nil, deviceKey: nil), Item.registration)
            }
            return .registered(info)
        case "authentication":
            guard await approve(redeemed["message"]?.stringValue ?? "") else {
                _ = try Self.json(try await send("POST", "v1/oob/deny", json: JSONValue.object(["ceremonyId": .string(ceremonyID)])))
                return .denied
            }
            let assertion = try await assert(authenticator, options: redeemed, pin: pin)
            _ = try Self.json(
                try await send("POST", "v1/oob/authentication", json: JSONValue.object(["ceremonyId": .string(ceremonyID), "credential": assertion.json])))
            return .approved
        default:
            let assertion = try await assert(authenticator, options: redeemed, pin: pin)
            let answer = try Self.json(
                try await send("POST", "v1/oob/deregistration", json: JSONValue.object(["ceremonyId": .string(ceremonyID), "credential": assertion.json])))
            let id = answer["authenticatorId"]?.stringValue ?? assertion.stored.authenticatorId
            try save(fidoCredentials.filter { $0.credentialId != assertion.stored.credentialId }, Item.fidoCredentials)
            return .deregistered(id)
        }
    }

    /// ``redeemOutOfBand(_:authenticator:pin:name:approve:)`` as a Nevis-shaped operation.
    public nonisolated func outOfBandOperation(
        _ payload: OutOfBandPayload, authenticator: any FidoAuthenticator, pin: String? = nil, name: String? = nil,
        approve: @escaping @Sendable (String) async -> Bool = { _ in true }
    ) -> FidoOperation<OutOfBandOutcome> {
        FidoOperation { () async throws(UserClientError) -> OutOfBandOutcome in
            try await self.redeemOutOfBand(payload, authenticator: authenticator, pin: pin, name: name, approve: approve)
        }
    }

    /// Device linking: an enrollment for the signed-in user (needs a recent sign-in), to show as a QR code or send as
    /// a link to the new device, which redeems it with ``redeemOutOfBand(_:authenticator:pin:name:approve:)``.
    public func linkDevice() async throws(UserClientError) -> OutOfBandEnrollmentResponse {
        try Self.decode(OutOfBandEnrollmentResponse.self, try await authorized("POST", "v1/me/enrollments", json: .object([:])))
    }

    /// The operation of a payload for this client's server: its redeem URL must be on the configured server.
    func redeemOperation(_ payload: OutOfBandPayload) throws(UserClientError) -> String {
        guard let url = URL(string: payload.data.redeem_url), url.scheme == configuration.serverURL.scheme, url.host == configuration.serverURL.host,
            url.port == configuration.serverURL.port
        else { throw .invalidInput("this code is for another server (\(payload.data.redeem_url.prefix(100)))") }
        let operation = url.lastPathComponent
        guard url.path.hasSuffix("/v1/oob/redeem/\(operation)"), ["registration", "authentication", "deregistration"].contains(operation) else {
            throw .invalidInput("this code names an unknown operation")
        }
        return operation
    }

    /// An assertion for request `options` (`{ceremonyId, publicKey}`, other members ignored) by the credential this
    /// device holds among those allowed (with its PIN binding signature, for a bound PIN credential).
    func assert(_ authenticator: any FidoAuthenticator, options: JSONValue, pin: String?)
        async throws(UserClientError) -> (json: JSONValue, stored: FidoCredential)
    {
        let publicKey = try PasskeyMessages.decode(FidoRequestOptions.self, options, "authentication").publicKey
        guard let rpID = publicKey.rpId else { throw .invalidInput("authentication options have no rpId") }
        let challenge = publicKey.challenge.base64URL
        let allowed = Set((publicKey.allowCredentials ?? []).map(\.id.base64URL))
        guard let stored = fidoCredentials.last(where: { allowed.contains($0.credentialId) && $0.model == authenticator.model }),
            let credentialID = Base64URL.decode(stored.credentialId)
        else { throw .notRegistered }
        let bindingKey = try pinBindingKey(of: stored)
        let assertion = try await WebAuthnMessages.assertion(
            credentialID: Array(credentialID), userHandle: stored.userHandle, rpID: rpID, origin: fidoOrigin, challenge: challenge
        ) { message throws(UserClientError) in try await authenticator.sign(message, material: stored.material, pin: pin) }
        return (try bound(assertion, of: stored, key: bindingKey, challenge: challenge), stored)
    }
}
