import Foundation
import LatchModel

/// Every error the SDK throws. Decided from the server's stable `error` code, never from message text.
///
/// **Do not switch over it exhaustively.** New Latch features (device attestation, FIDO authenticators, issuer
/// login) bring new cases in minor releases, and a source package cannot mark an enum non-frozen, so an exhaustive
/// `switch` would stop compiling on upgrade. Catch the cases your app handles and let the rest reach a general
/// `catch` (or end a `switch` with `default`). A server code this version does not map arrives as
/// ``server(code:message:)`` with the code intact, so it can be handled before a release names it.
public enum UserClientError: Error, Sendable, CustomStringConvertible {
    /// No user is registered on this device (or `reset()` removed it).
    case notRegistered
    /// A user is registered already (here, or the identity exists on the server).
    case alreadyRegistered
    /// No valid session: never signed in, signed out, or the session ended (revoked, expired, global sign-out).
    case notSignedIn
    /// The server refused the credentials (a bad assertion, an unknown key), or a token failed verification.
    case notAuthorized
    /// The operation needs a sign-in within `maxAge` seconds: sign in again, then retry (RFC 9470).
    case insufficientAuthentication(maxAge: Int)
    /// The configuration or the server's setup does not fit (unknown client, a switched-off registration type).
    case invalidConfiguration(String)
    /// An argument or the server's answer was malformed.
    case invalidInput(String)
    /// The server is temporarily unavailable; retry later.
    case serviceUnavailable
    /// The request did not reach the server or its answer was lost.
    case network(underlying: any Error)
    /// A PIN authenticator's proof failed (a wrong PIN), or it is cooling down or locked out: the server's count
    /// says which, how many tries remain and how long to wait.
    case pinAttemptFailed(FidoPinStatus)
    /// A new PIN does not meet the server's PIN policy; ask the user for another (recoverable).
    case pinRefused(PinEnroller.Refusal)
    /// An issuer login (or adding issuer tokens) was refused because of one token: `tokenIndex` is its 0-based
    /// position in the tokens given (also ``tokenIndex``), `message` the server's explanation.
    case issuerTokenRejected(tokenIndex: Int, message: String?)
    /// A custom registration cannot go on: start it again (a new transaction). `status` is the hook's unrecoverable
    /// status (5000–5999) and `data` what it sent to show the user; both are nil when Latch ended the transaction
    /// itself (its lifetime ran out, or it was cancelled, failed or completed already).
    case registrationRestartRequired(status: Int?, data: JSONValue?)
    /// The ``CustomRegistrationHandler`` answered ``CustomRegistrationAnswer/cancel``: the custom registration was
    /// stopped (its transaction cancelled on the server).
    case customRegistrationCancelled
    /// A browser sign-in came back with an error (RFC 6749 §4.1.2.1): `code` is the server's `error` —
    /// `access_denied` (the user or the upstream identity provider refused), `login_required` (after `prompt=none`),
    /// `invalid_request`, `invalid_scope`, … — and `description` its `error_description`.
    case federatedSignInFailed(code: String, description: String?)
    /// The browser's answer is not for the browser sign-in this client is waiting on: its `state` differs, none is
    /// pending (never started, answered already — a replayed URL —, or started too long ago). Nothing was changed.
    case federatedSignInStateMismatch
    /// The browser's answer names another issuer than the server the sign-in went to (RFC 9207: a mix-up attack, or
    /// a misconfigured redirect). The pending sign-in is ended.
    case federatedSignInIssuerMismatch
    /// The user closed the browser (or it timed out) before the sign-in or sign-out finished.
    case federatedSignInCancelled
    /// Any other error the server reported, with its stable code.
    case server(code: String, message: String?)

    public var description: String {
        switch self {
        case .notRegistered: "not registered"
        case .alreadyRegistered: "already registered"
        case .notSignedIn: "not signed in"
        case .notAuthorized: "not authorized"
        case .insufficientAuthentication(let maxAge): "a sign-in within the last \(maxAge) s is required"
        case .invalidConfiguration(let detail): "invalid configuration: \(detail)"
        case .invalidInput(let detail): "invalid input: \(detail)"
        case .serviceUnavailable: "service unavailable"
        case .network(let underlying): "network error: \(underlying)"
        case .pinAttemptFailed(let status):
            status.state == FidoPinStatus.lockedOut
                ? "PIN authenticator locked out"
                : "wrong PIN: \(status.remainingTries) tries remain" + (status.coolDown > 0 ? ", wait \(status.coolDown) s" : "")
        case .pinRefused(let refusal): "PIN refused: \(refusal)"
        case .issuerTokenRejected(let index, let message): "issuer token \(index) refused" + (message.map { ": \($0)" } ?? "")
        case .registrationRestartRequired(let status, let data):
            "the registration must start again"
                + (status.map { " (hook status \($0))" } ?? " (the transaction ended)")
                + (data.map { ": " + String(decoding: $0.serialized(), as: UTF8.self) } ?? "")
        case .customRegistrationCancelled: "custom registration cancelled"
        case .federatedSignInFailed(let code, let description): "browser sign-in failed: \(code)" + (description.map { ": \($0)" } ?? "")
        case .federatedSignInStateMismatch: "the browser's answer is not for the pending sign-in (state)"
        case .federatedSignInIssuerMismatch: "the browser's answer comes from another issuer"
        case .federatedSignInCancelled: "browser sign-in cancelled"
        case .server(let code, let message): "server error \(code)" + (message.map { ": \($0)" } ?? "")
        }
    }

    /// Maps a server error answer to a case, by its code.
    static func from(status: Int, body: Data, headers: [String: String]) -> UserClientError {
        guard let answer = try? JSONDecoder().decode(ErrorResponse.self, from: body) else {
            return status >= 500 ? .serviceUnavailable : .server(code: "http_\(status)", message: nil)
        }
        if let status = answer.pinStatus { return .pinAttemptFailed(status) }
        switch answer.error {
        case .invalidToken: return .notSignedIn
        case .insufficientUserAuthentication:
            return .insufficientAuthentication(maxAge: Self.maxAge(headers["www-authenticate"]) ?? 300)
        case .invalidGrant, .invalidProof, .unauthorized: return .notAuthorized
        case .alreadyRegistered, .registrationConflict: return .alreadyRegistered
        case .invalidClient, .unsupportedGrantType, .unsupportedChallengeType, .challengeTypeDisabled, .invalidScope:
            return .invalidConfiguration("\(answer.error.rawValue): \(answer.errorDescription ?? "")")
        case .invalidRequest, .invalidJSON, .invalidInput, .invalidPublicKey, .requestTooLarge:
            return .invalidInput("\(answer.error.rawValue): \(answer.errorDescription ?? "")")
        case .temporarilyUnavailable: return .serviceUnavailable
        // Custom registration: the app's or the deployment's setup does not fit…
        case .customProviderUnknown, .customProviderDisabled, .customFlowMismatch, .customTransactionClientMismatch, .hookAddressRefused:
            return .invalidConfiguration("\(answer.error.rawValue): \(answer.errorDescription ?? "")")
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
    /// Cases compare by kind and their stable values; `network` errors compare equal to each other.
    public static func == (lhs: UserClientError, rhs: UserClientError) -> Bool {
        switch (lhs, rhs) {
        case (.notRegistered, .notRegistered), (.alreadyRegistered, .alreadyRegistered), (.notSignedIn, .notSignedIn),
            (.notAuthorized, .notAuthorized), (.serviceUnavailable, .serviceUnavailable), (.network, .network),
            (.invalidConfiguration, .invalidConfiguration), (.invalidInput, .invalidInput):
            true
        case (.insufficientAuthentication(let a), .insufficientAuthentication(let b)): a == b
        case (.pinAttemptFailed(let a), .pinAttemptFailed(let b)): a.state == b.state
        case (.pinRefused(let a), .pinRefused(let b)): a == b
        case (.issuerTokenRejected(let a, _), .issuerTokenRejected(let b, _)): a == b
        case (.registrationRestartRequired(let a, _), .registrationRestartRequired(let b, _)): a == b
        case (.customRegistrationCancelled, .customRegistrationCancelled), (.federatedSignInStateMismatch, .federatedSignInStateMismatch),
            (.federatedSignInIssuerMismatch, .federatedSignInIssuerMismatch), (.federatedSignInCancelled, .federatedSignInCancelled):
            true
        case (.federatedSignInFailed(let a, _), .federatedSignInFailed(let b, _)): a == b
        case (.server(let a, _), .server(let b, _)): a == b
        default: false
        }
    }
}
