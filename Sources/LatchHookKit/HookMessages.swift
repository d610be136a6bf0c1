import Foundation
import LatchModel

/// What Latch POSTs to a hook: `{step, transactionId, identityProvider, clientId, data, initData?}`.
public struct HookRequest: Codable, Sendable, Hashable {
    /// The registration step.
    public enum Step: String, Codable, Sendable, Hashable {
        /// The first step of a two-step provider (e.g. send a code).
        case `init`
        /// The last (or only) step: answer with the user on success.
        case complete
    }

    public var step: Step
    /// Latch's transaction: the same for every step and attempt of one registration.
    public var transactionId: String
    /// The custom identity provider's id.
    public var identityProvider: String
    /// The OAuth client (app) that started the registration.
    public var clientId: String
    /// What the app sent for this step (`null` when it sent nothing).
    public var data: JSONValue
    /// On `complete` of a two-step provider: the `data` the hook answered to `init`.
    public var initData: JSONValue?

    public init(
        step: Step, transactionId: String, identityProvider: String, clientId: String, data: JSONValue = .null,
        initData: JSONValue? = nil
    ) {
        self.step = step
        self.transactionId = transactionId
        self.identityProvider = identityProvider
        self.clientId = clientId
        self.data = data
        self.initData = initData
    }

    private enum CodingKeys: String, CodingKey {
        case step, transactionId, identityProvider, clientId, data, initData
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        step = try container.decode(Step.self, forKey: .step)
        transactionId = try container.decode(String.self, forKey: .transactionId)
        identityProvider = try container.decode(String.self, forKey: .identityProvider)
        clientId = try container.decode(String.self, forKey: .clientId)
        data = try container.decodeIfPresent(JSONValue.self, forKey: .data) ?? .null
        initData = try container.decodeIfPresent(JSONValue.self, forKey: .initData)
    }
}

/// What a hook answers: `{status, data?, user?}`.
///
/// `status` 2000–2999 is success (on `complete`, with `user`); 4000–4999 recoverable (the app may try the same step
/// again on the same transaction, shown `data`); 5000–5999 unrecoverable (the transaction is dead; the flow
/// restarts). Anything else is an invalid answer.
public struct HookResponse: Codable, Sendable, Hashable {
    /// What a status means.
    public enum Outcome: Sendable, Hashable {
        case success, retry, restart, invalid
    }

    public var status: Int
    /// Shown to the app (e.g. `{"message": "wrong code", "remainingAttempts": 2}`).
    public var data: JSONValue?
    /// The user to create: on a successful `complete`.
    public var user: HookUser?

    public init(status: Int, data: JSONValue? = nil, user: HookUser? = nil) {
        self.status = status
        self.data = data
        self.user = user
    }

    public var outcome: Outcome {
        switch status {
        case 2000...2999: .success
        case 4000...4999: .retry
        case 5000...5999: .restart
        default: .invalid
        }
    }

    /// A 2000 answer.
    public static func success(user: HookUser? = nil, data: JSONValue? = nil) -> HookResponse {
        HookResponse(status: 2000, data: data, user: user)
    }

    /// A recoverable answer (`status` in 4000–4999): the same step may be tried again.
    public static func retry(_ status: Int = 4000, message: String, _ extra: [String: JSONValue] = [:]) -> HookResponse {
        HookResponse(status: status, data: .object(extra.merging(["message": .string(message)]) { _, new in new }))
    }

    /// An unrecoverable answer (`status` in 5000–5999): the transaction is dead.
    public static func restart(_ status: Int = 5000, message: String, _ extra: [String: JSONValue] = [:]) -> HookResponse {
        HookResponse(status: status, data: .object(extra.merging(["message": .string(message)]) { _, new in new }))
    }
}

/// The user a hook hands back: `{id?, username, attributes?, amr?}`.
public struct HookUser: Codable, Sendable, Hashable {
    /// The operator's own id for the user, when it has one.
    public var id: String?
    public var username: String
    /// Kept as claims, filtered by the provider's allowlist.
    public var attributes: [String: JSONValue]?
    /// Authentication methods the hook checked (e.g. `["sms"]`).
    public var amr: [String]?

    public init(id: String? = nil, username: String, attributes: [String: JSONValue]? = nil, amr: [String]? = nil) {
        self.id = id
        self.username = username
        self.attributes = attributes
        self.amr = amr
    }
}
