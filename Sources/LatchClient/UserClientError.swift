import Foundation
import LatchModel

/// Every error the SDK throws: a stable ``code`` to decide on, a message for people, and the details some codes
/// carry (a PIN status, a `max_age`, a refused token's index, the error underneath).
///
/// A struct rather than an enum, as Auth0.swift and swift-certificates do: new Latch features bring new codes in
/// minor releases without breaking an app's `switch`. Compare with the static members — `error == .notSignedIn`,
/// `catch UserClientError.notSignedIn`, or `switch error.code { case .notSignedIn: … default: … }`. Equality compares
/// the code (and, for a few codes, the detail that tells two answers apart). A server code this version does not name
/// arrives as the code itself (``server(code:message:)``), so it can be handled before a release names it.
/// Codes and what to do about each: docs/ios.md ("Errors").
public struct UserClientError: Error, Sendable, CustomStringConvertible {
    /// A stable, machine-readable error code (snake_case, like the server's).
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code as text (`not_signed_in`, or a server code such as `attestation_environment_mismatch`).
        public let rawValue: String
        /// A code from its text: for comparing with a server code this SDK version does not name.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code as text.
        public var description: String { rawValue }

        /// No user is registered on this device (or `reset()` removed it).
        public static let notRegistered = Code(rawValue: "not_registered")
        /// A user is registered already (here, or the identity exists on the server).
        public static let alreadyRegistered = Code(rawValue: "already_registered")
        /// No valid session: never signed in, signed out, or the session ended (revoked, expired, global sign-out).
        public static let notSignedIn = Code(rawValue: "not_signed_in")
        /// The server refused the credentials (a bad assertion, an unknown key), or a token failed verification.
        public static let notAuthorized = Code(rawValue: "not_authorized")
        /// The operation needs a sign-in within ``UserClientError/maxAge`` seconds: sign in again, then retry (RFC 9470).
        public static let insufficientAuthentication = Code(rawValue: "insufficient_authentication")
        /// The configuration or the server's setup does not fit (unknown client, a switched-off registration type).
        public static let invalidConfiguration = Code(rawValue: "invalid_configuration")
        /// An argument or the server's answer was malformed.
        public static let invalidInput = Code(rawValue: "invalid_input")
        /// The server is temporarily unavailable; retry later.
        public static let serviceUnavailable = Code(rawValue: "service_unavailable")
        /// The request did not reach the server or its answer was lost (``UserClientError/underlying`` says why).
        public static let network = Code(rawValue: "network_error")
        /// A PIN authenticator's proof failed, or it is cooling down or locked out (``UserClientError/pinStatus``).
        public static let pinAttemptFailed = Code(rawValue: "pin_attempt_failed")
        /// The server refused a PIN assertion for its device binding (a binding key the server does not know: the
        /// credential was copied to another device, or the authenticator was re-registered elsewhere). Nothing was
        /// counted; register the PIN authenticator again on this device.
        public static let pinBindingInvalid = Code(rawValue: "pin_binding_invalid")
        /// A new PIN does not meet the server's PIN policy (``UserClientError/pinRefusal``); ask for another.
        public static let pinRefused = Code(rawValue: "pin_refused")
        /// An issuer login was refused because of one token (``UserClientError/tokenIndex``).
        public static let issuerTokenRejected = Code(rawValue: "issuer_token_rejected")
        /// A custom registration cannot go on: start it again (``UserClientError/hookStatus``, ``UserClientError/hookData``).
        public static let registrationRestartRequired = Code(rawValue: "registration_restart_required")
        /// The ``CustomRegistrationHandler`` cancelled the custom registration.
        public static let customRegistrationCancelled = Code(rawValue: "custom_registration_cancelled")
        /// A browser sign-in came back with an OAuth error (``UserClientError/oauthError``, RFC 6749 §4.1.2.1).
        public static let federatedSignInFailed = Code(rawValue: "federated_sign_in_failed")
        /// The browser's answer is not for the pending browser sign-in (its `state`). Nothing was changed.
        public static let federatedSignInStateMismatch = Code(rawValue: "federated_sign_in_state_mismatch")
        /// The browser's answer names another issuer (RFC 9207). The pending sign-in is ended.
        public static let federatedSignInIssuerMismatch = Code(rawValue: "federated_sign_in_issuer_mismatch")
        /// The user closed a system sheet (the browser, the passkey sheet) before it finished. Nothing was written.
        public static let cancelled = Code(rawValue: "cancelled")
        /// The device sign-in key registered here cannot be used on this device any more (a backup restored onto
        /// another device: Secure Enclave keys never leave their device). The local registration was removed;
        /// register again.
        public static let deviceKeyLost = Code(rawValue: "device_key_lost")
        /// The Keychain cannot be read yet: the device has not been unlocked since it started
        /// (`errSecInteractionNotAllowed`). Retry after the first unlock.
        public static let keychainLocked = Code(rawValue: "keychain_locked")
        /// Another Keychain failure (``UserClientError/osStatus`` holds the `OSStatus`).
        public static let keychainFailure = Code(rawValue: "keychain_failure")
        /// The app lacks an entitlement the operation needs (App Attest environment, Keychain access group,
        /// associated domains for passkeys).
        public static let missingEntitlement = Code(rawValue: "missing_entitlement")
        /// This device cannot do it: no App Attest (simulator, some Macs), no Secure Enclave, no passkeys.
        public static let unsupportedDevice = Code(rawValue: "unsupported_device")
        /// The Secure Enclave refused to make or use a key.
        public static let secureEnclaveUnavailable = Code(rawValue: "secure_enclave_unavailable")
        /// App Attest or DeviceCheck failed on the device (Apple's service, a bad key id).
        public static let attestationFailed = Code(rawValue: "attestation_failed")
        /// A passkey ceremony failed in the OS (other than a cancelled sheet).
        public static let passkeyFailed = Code(rawValue: "passkey_failed")
    }

    /// The stable code.
    public let code: Code
    /// A human-readable explanation (English; not for decisions).
    public let message: String?
    /// The error underneath, for ``Code/network`` and platform failures.
    public let underlying: (any Error)?
    /// ``Code/pinAttemptFailed``: the server's count of the PIN authenticator.
    public private(set) var pinStatus: FidoPinStatus?
    /// ``Code/pinRefused``: why the new PIN was refused.
    public private(set) var pinRefusal: PinEnroller.Refusal?
    /// ``Code/insufficientAuthentication``: the sign-in age the operation needs, in seconds.
    public private(set) var maxAge: Int?
    /// ``Code/issuerTokenRejected``: the 0-based index of the refused issuer token.
    public private(set) var tokenIndex: Int?
    /// ``Code/registrationRestartRequired``: the hook's unrecoverable status (5000–5999), nil when Latch ended it.
    public private(set) var hookStatus: Int?
    /// ``Code/registrationRestartRequired``: what the hook sent to show the user.
    public private(set) var hookData: JSONValue?
    /// ``Code/federatedSignInFailed``: the server's OAuth `error` (`access_denied`, `login_required`, …).
    public private(set) var oauthError: String?
    /// Keychain failures: the Security framework's `OSStatus`.
    public private(set) var osStatus: Int32?

    /// An error with `code`; `message` for people, `underlying` for the cause.
    public init(_ code: Code, _ message: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    // MARK: The errors, by code

    /// ``Code/notRegistered``.
    public static let notRegistered = UserClientError(.notRegistered)
    /// ``Code/alreadyRegistered``.
    public static let alreadyRegistered = UserClientError(.alreadyRegistered)
    /// ``Code/notSignedIn``.
    public static let notSignedIn = UserClientError(.notSignedIn)
    /// ``Code/notAuthorized``.
    public static let notAuthorized = UserClientError(.notAuthorized)
    /// ``Code/serviceUnavailable``.
    public static let serviceUnavailable = UserClientError(.serviceUnavailable)
    /// ``Code/customRegistrationCancelled``.
    public static let customRegistrationCancelled = UserClientError(.customRegistrationCancelled)
    /// ``Code/federatedSignInStateMismatch``.
    public static let federatedSignInStateMismatch = UserClientError(.federatedSignInStateMismatch)
    /// ``Code/federatedSignInIssuerMismatch``.
    public static let federatedSignInIssuerMismatch = UserClientError(.federatedSignInIssuerMismatch)
    /// The user closed the system sheet (browser or passkey).
    public static let cancelled = UserClientError(.cancelled)
    /// The browser sheet was closed: ``cancelled``.
    public static let federatedSignInCancelled = cancelled
    /// ``Code/deviceKeyLost``.
    public static let deviceKeyLost = UserClientError(.deviceKeyLost, "this device cannot use the registered device key; register again")

    /// The operation needs a sign-in within `maxAge` seconds.
    public static func insufficientAuthentication(maxAge: Int) -> UserClientError {
        var error = UserClientError(.insufficientAuthentication)
        error.maxAge = maxAge
        return error
    }
    /// The configuration or the server's setup does not fit.
    public static func invalidConfiguration(_ detail: String) -> UserClientError { UserClientError(.invalidConfiguration, detail) }
    /// An argument or the server's answer was malformed.
    public static func invalidInput(_ detail: String) -> UserClientError { UserClientError(.invalidInput, detail) }
    /// The request did not reach the server, or its answer was lost.
    public static func network(underlying: any Error) -> UserClientError { UserClientError(.network, nil, underlying: underlying) }
    /// A failed PIN proof, a cool-down or a lockout.
    public static func pinAttemptFailed(_ status: FidoPinStatus) -> UserClientError {
        var error = UserClientError(.pinAttemptFailed)
        error.pinStatus = status
        return error
    }
    /// A new PIN the policy refuses.
    public static func pinRefused(_ refusal: PinEnroller.Refusal) -> UserClientError {
        var error = UserClientError(.pinRefused, "\(refusal)")
        error.pinRefusal = refusal
        return error
    }
    /// An issuer login refused because of the token at `tokenIndex`.
    public static func issuerTokenRejected(tokenIndex: Int, message: String?) -> UserClientError {
        var error = UserClientError(.issuerTokenRejected, message)
        error.tokenIndex = tokenIndex
        return error
    }
    /// A custom registration that must start again.
    public static func registrationRestartRequired(status: Int?, data: JSONValue?) -> UserClientError {
        var error = UserClientError(.registrationRestartRequired)
        error.hookStatus = status
        error.hookData = data
        return error
    }
    /// A browser sign-in answered with OAuth error `code`.
    public static func federatedSignInFailed(code: String, description: String?) -> UserClientError {
        var error = UserClientError(.federatedSignInFailed, description)
        error.oauthError = code
        return error
    }
    /// Any other error the server reported: its stable code becomes ``code``.
    public static func server(code: String, message: String?) -> UserClientError { UserClientError(Code(rawValue: code), message) }
    /// A platform failure (Keychain, Secure Enclave, App Attest, passkeys).
    public static func platform(_ code: Code, _ message: String, underlying: (any Error)? = nil, osStatus: Int32? = nil) -> UserClientError {
        var error = UserClientError(code, message, underlying: underlying)
        error.osStatus = osStatus
        return error
    }

    /// The code and the message, for logs (never shown to users as is).
    public var description: String {
        var text: String
        switch code {
        case .notRegistered: text = "not registered"
        case .alreadyRegistered: text = "already registered"
        case .notSignedIn: text = "not signed in"
        case .notAuthorized: text = "not authorized"
        case .insufficientAuthentication: text = "a sign-in within the last \(maxAge ?? 0) s is required"
        case .serviceUnavailable: text = "service unavailable"
        case .network: text = "network error: \(underlying.map { "\($0)" } ?? "unknown")"
        case .pinAttemptFailed:
            guard let status = pinStatus else { return "wrong PIN" }
            return status.state == FidoPinStatus.lockedOut
                ? "PIN authenticator locked out"
                : "wrong PIN: \(status.remainingTries) tries remain" + (status.coolDown > 0 ? ", wait \(status.coolDown) s" : "")
        case .pinRefused: return "PIN refused: \(pinRefusal.map { "\($0)" } ?? message ?? "")"
        case .issuerTokenRejected: return "issuer token \(tokenIndex ?? -1) refused" + (message.map { ": \($0)" } ?? "")
        case .registrationRestartRequired:
            return "the registration must start again"
                + (hookStatus.map { " (hook status \($0))" } ?? " (the transaction ended)")
                + (hookData.map { ": " + String(decoding: $0.serialized(), as: UTF8.self) } ?? "")
        case .customRegistrationCancelled: text = "custom registration cancelled"
        case .federatedSignInFailed: return "browser sign-in failed: \(oauthError ?? "")" + (message.map { ": \($0)" } ?? "")
        case .federatedSignInStateMismatch: text = "the browser's answer is not for the pending sign-in (state)"
        case .federatedSignInIssuerMismatch: text = "the browser's answer comes from another issuer"
        case .cancelled: text = "cancelled by the user"
        case .invalidConfiguration: text = "invalid configuration"
        case .invalidInput: text = "invalid input"
        default: text = code.rawValue
        }
        if let message { text += ": \(message)" }
        return text
    }

    /// Maps a server error answer to an error, by its code.
    static func from(status: Int, body: Data, headers: [String: String]) -> UserClientError {
        guard let answer = try? JSONDecoder().decode(ErrorResponse.self, from: body) else {
            return status >= 500 ? .serviceUnavailable : .server(code: "http_\(status)", message: nil)
        }
        if let status = answer.pinStatus { return .pinAttemptFailed(status) }
        if answer.reason == .pinBindingInvalid || answer.error == .pinBindingInvalid {
            return UserClientError(.pinBindingInvalid, answer.errorDescription)
        }
        let detail = "\(answer.error.rawValue): \(answer.errorDescription ?? "")"
        switch answer.error {
        case .invalidToken: return .notSignedIn
        case .insufficientUserAuthentication:
            return .insufficientAuthentication(maxAge: Self.maxAge(headers["www-authenticate"]) ?? 300)
        case .invalidGrant, .invalidProof, .unauthorized: return .notAuthorized
        case .alreadyRegistered, .registrationConflict: return .alreadyRegistered
        case .invalidClient, .unsupportedGrantType, .unsupportedChallengeType, .challengeTypeDisabled, .invalidScope:
            return .invalidConfiguration(detail)
        case .invalidRequest, .invalidJSON, .invalidInput, .invalidPublicKey, .requestTooLarge:
            return .invalidInput(detail)
        case .temporarilyUnavailable: return .serviceUnavailable
        // Custom registration: the app's or the deployment's setup does not fit…
        case .customProviderUnknown, .customProviderDisabled, .customFlowMismatch, .customTransactionClientMismatch, .hookAddressRefused:
            return .invalidConfiguration(detail)
        // …the transaction is over (the hook said so, or Latch)…
        case .customRegistrationRestart:
            let members = try? JSONDecoder().decode(HookErrorMembers.self, from: body)
            return .registrationRestartRequired(status: members?.status, data: members?.data)
        case .customTransactionUnknown, .customTransactionExpired, .customTransactionFinished:
            return .registrationRestartRequired(status: nil, data: nil)
        // …or the hook could not answer now; the transaction stays usable.
        case .hookUnavailable, .hookTimeout: return .serviceUnavailable
        default: return .server(code: answer.error.rawValue, message: answer.errorDescription)
        }
    }

    /// The hook's members of a `custom_registration_retry` or `custom_registration_restart` answer.
    struct HookErrorMembers: Decodable {
        var status: Int?
        var data: JSONValue?
        var transactionId: String?
    }

    /// `max_age=N` from a `WWW-Authenticate` challenge.
    static func maxAge(_ challenge: String?) -> Int? {
        guard let challenge, let range = challenge.range(of: "max_age=") else { return nil }
        return Int(challenge[range.upperBound...].prefix { $0.isNumber })
    }
}

extension UserClientError: Equatable {
    /// Errors compare by code, and for a few codes by the detail that tells two answers apart (a PIN state, a
    /// `max_age`, a token index, a hook status, an OAuth error); messages and underlying errors never count.
    public static func == (lhs: UserClientError, rhs: UserClientError) -> Bool {
        lhs.code == rhs.code && lhs.pinStatus?.state == rhs.pinStatus?.state && lhs.pinRefusal == rhs.pinRefusal && lhs.maxAge == rhs.maxAge
            && lhs.tokenIndex == rhs.tokenIndex && lhs.hookStatus == rhs.hookStatus && lhs.oauthError == rhs.oauthError
    }

    /// Pattern matching by code: `catch UserClientError.notSignedIn`, `case .deviceKeyLost:` — whatever the details.
    public static func ~= (pattern: UserClientError, value: UserClientError) -> Bool { pattern.code == value.code }

    /// Pattern matching in a `catch` over any error: `catch UserClientError.cancelled`.
    public static func ~= (pattern: UserClientError, value: any Error) -> Bool { (value as? UserClientError)?.code == pattern.code }
}
