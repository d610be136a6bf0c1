import Foundation
import LatchModel

// The app's side of a custom registration (OneWelcome's "custom identity providers"): the operator's own service,
// called by Latch as an HTTP hook, decides whether a registration succeeds; the app collects what that service asks
// for (a phone number, then the code sent to it; an invitation code) through a ``CustomRegistrationHandler``.

/// How a custom identity provider registers a user.
public enum CustomRegistrationFlow: String, Sendable, Hashable, Codable, CaseIterable {
    /// One hook call: `complete` with what the user entered (an invitation code, say).
    case oneStep = "one_step"
    /// Two hook calls: `init` (the hook sends a code, say) then `complete` (the user enters it).
    case twoStep = "two_step"
}

/// An enabled custom identity provider, as ``UserClient/customProviders()`` lists it.
public struct CustomIdentityProvider: Sendable, Hashable {
    /// What ``UserClient/registerWithCustomProvider(_:flow:handler:registrationId:)`` takes.
    public let id: String
    /// Shown to people.
    public let name: String
    public let flow: CustomRegistrationFlow

    public init(id: String, name: String, flow: CustomRegistrationFlow) {
        self.id = id
        self.name = name
        self.flow = flow
    }
}

/// Where a custom registration stands when the ``CustomRegistrationHandler`` is asked for data.
public struct CustomRegistrationInfo: Sendable, Hashable {
    /// The custom identity provider's id.
    public let providerId: String
    public let flow: CustomRegistrationFlow
    /// The server's transaction, once there is one: nil for the first `init` of a two-step provider and the first
    /// `complete` of a one-step provider; known after a successful `init` or any retryable (4xxx) answer.
    public let transactionId: String?
    /// The hook's status of the previous successful step (2000–2999): `init`'s, when asked for `complete` of a
    /// two-step provider; nil before any step succeeded.
    public let status: Int?
    /// The hook's `data` of the previous successful step (`init`'s, when asked for `complete`): what to show the user,
    /// e.g. `{"message": "code sent", "phoneHint": "…34"}`. Nil before any step succeeded or when the hook sent none.
    public let data: JSONValue?

    public init(providerId: String, flow: CustomRegistrationFlow, transactionId: String?, status: Int?, data: JSONValue?) {
        self.providerId = providerId
        self.flow = flow
        self.transactionId = transactionId
        self.status = status
        self.data = data
    }
}

/// The hook answered a step with a recoverable status (4000–4999): the same step is asked again on the same
/// transaction (a wrong code: ask the user again, showing `data`).
public struct CustomRegistrationRetry: Sendable, Hashable {
    /// The hook's status (4000–4999).
    public let status: Int
    /// The hook's `data`, for the app to show (e.g. `{"message": "wrong code", "remainingAttempts": 2}`).
    public let data: JSONValue?
    /// The server's explanation (not the hook's; may change between releases).
    public let message: String?
    /// The transaction the step is repeated on.
    public let transactionId: String

    public init(status: Int, data: JSONValue?, message: String?, transactionId: String) {
        self.status = status
        self.data = data
        self.message = message
        self.transactionId = transactionId
    }
}

/// What the app answers a step of a custom registration with.
public enum CustomRegistrationAnswer: Sendable, Hashable {
    /// Send this `data` to the hook (passed to it as is; at most 16 KiB as JSON). Nil sends none.
    case respond(JSONValue?)
    /// Stop: the server's transaction, if there is one, is cancelled, and
    /// ``UserClient/registerWithCustomProvider(_:flow:handler:registrationId:)`` throws
    /// ``UserClientError/customRegistrationCancelled``.
    case cancel
}

/// Collects the data each hook call of a custom registration needs — typically by asking the user.
///
/// ``UserClient/registerWithCustomProvider(_:flow:handler:registrationId:)`` calls
/// - for a two-step provider, ``initChallenge(_:previousError:)`` first (again, with `previousError`, as long as the
///   hook answers `init` with 4000–4999), then ``finishChallenge(_:previousError:)``;
/// - for a one-step provider, only ``finishChallenge(_:previousError:)``;
///
/// and ``finishChallenge(_:previousError:)`` again, with `previousError`, as long as the hook answers `complete` with
/// 4000–4999. Calls are made one at a time. Answer ``CustomRegistrationAnswer/cancel`` to stop.
///
/// ```swift
/// struct SMSRegistration: CustomRegistrationHandler {
///     let ui: RegistrationScreens
///     func initChallenge(_ info: CustomRegistrationInfo, previousError: CustomRegistrationRetry?) async -> CustomRegistrationAnswer {
///         guard let phone = await ui.askPhoneNumber(problem: previousError?.data?["message"]?.stringValue) else { return .cancel }
///         return .respond(["phone": .string(phone)])
///     }
///     func finishChallenge(_ info: CustomRegistrationInfo, previousError: CustomRegistrationRetry?) async -> CustomRegistrationAnswer {
///         let hint = info.data?["phoneHint"]?.stringValue ?? ""
///         guard let code = await ui.askCode(sentTo: hint, problem: previousError?.data?["message"]?.stringValue) else { return .cancel }
///         return .respond(["code": .string(code)])
///     }
/// }
/// ```
public protocol CustomRegistrationHandler: Sendable {
    /// The data for `init` (two-step providers only). `info` has no `data` yet; `previousError` is the hook's
    /// retryable answer to the previous `init` on `info.transactionId` (nil the first time).
    ///
    /// The default implementation answers `.respond(nil)`: an `init` without data.
    func initChallenge(_ info: CustomRegistrationInfo, previousError: CustomRegistrationRetry?) async -> CustomRegistrationAnswer

    /// The data for `complete`. `info.data` is what `init` answered (two-step providers); `previousError` is the
    /// hook's retryable answer to the previous `complete` on `info.transactionId` (nil the first time).
    func finishChallenge(_ info: CustomRegistrationInfo, previousError: CustomRegistrationRetry?) async -> CustomRegistrationAnswer
}

extension CustomRegistrationHandler {
    public func initChallenge(_ info: CustomRegistrationInfo, previousError: CustomRegistrationRetry?) async -> CustomRegistrationAnswer {
        .respond(nil)
    }
}

/// A successful custom registration: the user exists and this device holds its sign-in key.
public struct CustomRegistrationResult: Sendable, Hashable {
    /// The user's stable id (the `sub` of its tokens).
    public let userId: String
    /// The username, which ``UserClient/signInWithKey()`` signs in.
    public let username: String
    /// The hook's status of the successful `complete` (2000–2999).
    public let status: Int
    /// The hook's `data` of the successful `complete`, if it sent any.
    public let data: JSONValue?

    public init(userId: String, username: String, status: Int, data: JSONValue?) {
        self.userId = userId
        self.username = username
        self.status = status
        self.data = data
    }
}
