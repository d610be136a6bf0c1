import Foundation
import LatchJOSE
import LatchModel

// Custom registration (OneWelcome's "custom identity providers"): the operator's service, called by Latch as an HTTP
// hook for each step, decides whether the user is registered. The client runs the steps — `init` (two-step
// providers), `complete`, and their retries — asking a ``CustomRegistrationHandler`` for each step's data, and
// registers a new device sign-in key with `complete`, as test registrations do.

extension UserClient {
    /// The registration type this client records for a custom registration (local state only).
    static let customRegistrationType = RegistrationMethod(rawValue: "CUSTOM")

    /// A `complete` sent but not yet answered, or answered "try later": resent verbatim by the next
    /// ``registerWithCustomProvider(_:flow:handler:registrationId:)`` for the same provider, so the server sees the
    /// same registration id and key (a lost answer to a successful `complete` gets the same user).
    struct PendingCustomRegistration: Codable {
        var providerId: String
        var flow: CustomRegistrationFlow
        /// `init`'s status and data (two-step providers), for the handler if the resent `complete` is retryable.
        var initStatus: Int?
        var initData: JSONValue?
        var request: CustomRegistrationCompleteRequest
        var deviceKey: String

        enum CodingKeys: String, CodingKey {
            case providerId, flow, initStatus, initData, request, deviceKey = "deviceKeyPEM"
        }
    }

    // MARK: Providers

    /// The enabled custom identity providers (`GET /v1/custom-registrations/providers`), for the app to offer.
    /// A provider of a flow this SDK version does not know is left out.
    public func customProviders() async throws(UserClientError) -> [CustomIdentityProvider] {
        let list = try Self.decode(CustomProviderList.self, try await send("GET", "v1/custom-registrations/providers"))
        return list.providers.compactMap { provider in
            CustomRegistrationFlow(rawValue: provider.flow).map { CustomIdentityProvider(id: provider.id, name: provider.name, flow: $0) }
        }
    }

    // MARK: Registration

    /// Registers a user with a custom identity provider: the operator's hook decides, from the data `handler` supplies
    /// for each step. A device key pair is made and its public key registered with the user, as with a
    /// ``TESTAuthenticationProvider``: afterwards the client is registered (``isRegistered()``, ``userName()``,
    /// ``subject()``) and the user signs in with ``signInWithKey()``.
    ///
    /// The steps:
    /// - two-step provider: `init` with ``CustomRegistrationHandler/initChallenge(_:previousError:)``'s data — asked
    ///   again, with the hook's answer as `previousError`, and sent again on the same transaction, while the hook answers
    ///   4000–4999 — then `complete`;
    /// - one-step provider: `complete` only;
    /// - `complete` carries ``CustomRegistrationHandler/finishChallenge(_:previousError:)``'s data and the new public
    ///   key; while the hook answers 4000–4999 the handler is asked again (with `previousError`) and `complete` is sent
    ///   again on that answer's transaction.
    ///
    /// A `registrationId` is generated when absent and kept with the `complete` request until the server answers it:
    /// when the answer is lost (a network error) or the hook could not be reached (``UserClientError/serviceUnavailable``),
    /// calling this again for the same provider resends that request as it was — the same transaction, data, key and
    /// registration id, without asking the handler — and a registration the server made already answers the same user.
    /// Calling it for another provider, or with another `registrationId`, starts afresh.
    ///
    /// - Parameters:
    ///   - providerId: the custom identity provider's id (see ``customProviders()``).
    ///   - flow: the provider's flow, when the app knows it; nil asks the server (one more request).
    ///   - handler: supplies each step's data, or cancels.
    ///   - registrationId: the idempotency key of the registration (default: a new UUID, kept for retries).
    /// - Returns: the new user's id and username, and the hook's last status and data.
    /// - Throws: ``UserClientError/alreadyRegistered`` when a user is registered on this device (or the identity exists);
    ///   ``UserClientError/registrationRestartRequired(status:data:)`` when the hook answered 5000–5999 or the transaction
    ///   ended (expired, say) — start again; ``UserClientError/customRegistrationCancelled`` when the handler cancelled
    ///   (the server's transaction, if any, is cancelled first, best effort); ``UserClientError/invalidConfiguration(_:)``
    ///   for an unknown or disabled provider or a wrong `flow`; ``UserClientError/serviceUnavailable`` when the hook
    ///   could not be reached or did not answer in time.
    @discardableResult
    public func registerWithCustomProvider(
        _ providerId: String, flow: CustomRegistrationFlow? = nil, handler: any CustomRegistrationHandler, registrationId: String? = nil
    ) async throws(UserClientError) -> CustomRegistrationResult {
        guard !isRegistered() else { throw .alreadyRegistered }
        guard !providerId.isEmpty else { throw .invalidInput("give the custom identity provider's id") }
        var resumed = load(PendingCustomRegistration.self, Item.pendingCustomRegistration)
        if let kept = resumed,
            kept.providerId != providerId || kept.request.publicKey == nil || registrationId.map({ $0 != kept.request.registrationId }) == true
        {
            remove(Item.pendingCustomRegistration)
            resumed = nil
        }

        // What every `complete` of this registration carries.
        let info: CustomRegistrationInfo
        let publicKey: RegistrationPublicKey
        let deviceKey: String
        let idempotencyKey: String
        var request: CustomRegistrationCompleteRequest?
        if let resumed, let kept = resumed.request.publicKey {
            info = CustomRegistrationInfo(
                providerId: providerId, flow: resumed.flow, transactionId: resumed.request.transactionId, status: resumed.initStatus,
                data: resumed.initData)
            publicKey = kept
            deviceKey = resumed.deviceKey
            idempotencyKey = resumed.request.registrationId ?? registrationId ?? UUID().uuidString.lowercased()
            request = resumed.request
        } else {
            let resolved: CustomRegistrationFlow
            if let flow {
                resolved = flow
            } else {
                resolved = try await customFlow(of: providerId)
            }
            let key = try newDeviceKey()
            publicKey = RegistrationPublicKey(
                keyId: UUID().uuidString.lowercased(), algorithm: key.algorithm.rawValue, publicKey: key.publicKey.pemRepresentation)
            deviceKey = key.storedRepresentation
            idempotencyKey = registrationId ?? UUID().uuidString.lowercased()
            let start = CustomRegistrationInfo(providerId: providerId, flow: resolved, transactionId: nil, status: nil, data: nil)
            if resolved == .twoStep {
                info = try await customInit(start, handler: handler)
            } else {
                info = start
            }
        }

        var transactionId = info.transactionId
        var previousError: CustomRegistrationRetry?
        while true {
            let sending: CustomRegistrationCompleteRequest
            if let request {
                sending = request
            } else {
                let step = CustomRegistrationInfo(
                    providerId: providerId, flow: info.flow, transactionId: transactionId, status: info.status, data: info.data)
                guard case .respond(let data) = await handler.finishChallenge(step, previousError: previousError) else {
                    await cancelCustomTransaction(transactionId)
                    throw .customRegistrationCancelled
                }
                sending = CustomRegistrationCompleteRequest(
                    transactionId: transactionId, identityProvider: transactionId == nil ? providerId : nil, data: data, publicKey: publicKey,
                    registrationId: idempotencyKey, clientId: configuration.clientId)
                try save(
                    PendingCustomRegistration(
                        providerId: providerId, flow: info.flow, initStatus: info.status, initData: info.data, request: sending,
                        deviceKey: deviceKey),
                    Item.pendingCustomRegistration)
            }
            // A network failure propagates with the pending request kept for the retry.
            let response = try await send("POST", "v1/custom-registrations/complete", json: sending)
            if (200..<300).contains(response.status) {
                guard let answer = try? JSONDecoder().decode(CustomRegistrationCompleteResponse.self, from: response.body) else {
                    throw .invalidInput("malformed custom registration answer")
                }
                try save(
                    Registration(
                        userId: answer.userId, username: answer.username, type: Self.customRegistrationType, deviceKeyId: publicKey.keyId,
                        deviceKey: deviceKey),
                    Item.registration)
                remove(Item.pendingCustomRegistration)
                return CustomRegistrationResult(userId: answer.userId, username: answer.username, status: answer.status, data: answer.data)
            }
            if let retry = Self.customRetry(response) {
                // Answered: the handler is asked again, and `complete` goes to the transaction the answer names.
                remove(Item.pendingCustomRegistration)
                previousError = retry
                transactionId = retry.transactionId
                request = nil
                continue
            }
            let error = UserClientError.from(status: response.status, body: response.body, headers: response.headers)
            // A definite refusal ends this attempt; unavailability (the hook's too) keeps it for a retry.
            if error != .serviceUnavailable { remove(Item.pendingCustomRegistration) }
            throw error
        }
    }

    // MARK: Steps

    /// Runs `init` until the hook accepts it: the handler's data, again on the same transaction after each 4xxx.
    /// Returns what `complete` needs: the transaction and `init`'s status and data.
    private func customInit(_ start: CustomRegistrationInfo, handler: any CustomRegistrationHandler) async throws(UserClientError)
        -> CustomRegistrationInfo
    {
        var transactionId: String?
        var previousError: CustomRegistrationRetry?
        while true {
            let step = CustomRegistrationInfo(providerId: start.providerId, flow: start.flow, transactionId: transactionId, status: nil, data: nil)
            guard case .respond(let data) = await handler.initChallenge(step, previousError: previousError) else {
                await cancelCustomTransaction(transactionId)
                throw .customRegistrationCancelled
            }
            let response = try await send(
                "POST", "v1/custom-registrations/init",
                json: CustomRegistrationInitRequest(
                    identityProvider: start.providerId, data: data, transactionId: transactionId, clientId: configuration.clientId))
            if (200..<300).contains(response.status) {
                let answer = try Self.decode(CustomRegistrationInitResponse.self, response)
                return CustomRegistrationInfo(
                    providerId: start.providerId, flow: start.flow, transactionId: answer.transactionId, status: answer.status, data: answer.data)
            }
            guard let retry = Self.customRetry(response) else {
                throw UserClientError.from(status: response.status, body: response.body, headers: response.headers)
            }
            previousError = retry
            transactionId = retry.transactionId
        }
    }

    /// Cancels the transaction, if there is one; best effort (an open transaction also ends when its lifetime does).
    private func cancelCustomTransaction(_ transactionId: String?) async {
        guard let transactionId else { return }
        _ = try? await send(
            "POST", "v1/custom-registrations/cancel", json: CustomRegistrationCancelRequest(transactionId: transactionId, clientId: configuration.clientId))
    }

    /// The provider's flow, from the list of enabled providers.
    private func customFlow(of providerId: String) async throws(UserClientError) -> CustomRegistrationFlow {
        guard let provider = try await customProviders().first(where: { $0.id == providerId }) else {
            throw .invalidConfiguration("\(ErrorCode.customProviderUnknown.rawValue): no enabled custom identity provider '\(providerId)'")
        }
        return provider.flow
    }

    /// A `custom_registration_retry` answer (the hook's 4000–4999) naming the transaction to repeat the step on; nil
    /// for any other answer.
    static func customRetry(_ response: HTTPResponseData) -> CustomRegistrationRetry? {
        guard !(200..<300).contains(response.status),
            let answer = try? JSONDecoder().decode(ErrorResponse.self, from: response.body), answer.error == .customRegistrationRetry,
            let members = try? JSONDecoder().decode(UserClientError.HookErrorMembers.self, from: response.body),
            let status = members.status, let transactionId = members.transactionId, !transactionId.isEmpty
        else { return nil }
        return CustomRegistrationRetry(status: status, data: members.data, message: answer.errorDescription, transactionId: transactionId)
    }
}
