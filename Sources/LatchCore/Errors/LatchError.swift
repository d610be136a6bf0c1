import LatchModel

/// The one error type the engines throw toward the edge.
///
/// `code` is stable and public; `message` goes into `error_description`; `detail` is for logs only.
/// Equality compares the code, so tests and callers match on codes, never on text.
public struct LatchError: Error, Sendable, CustomStringConvertible {
    /// The stable code.
    public let code: ErrorCode
    /// A human-readable explanation sent to the client.
    public let message: String
    /// For `insufficient_user_authentication`: the `max_age` the operation needs (RFC 9470 §3).
    public let maxAge: Int?
    /// Extra context for logs; never sent, never contains secrets.
    public let detail: String?
    /// Members the error object carries besides `error` and `error_description` (e.g. a PIN's `pinStatus`).
    public let members: [String: JSONValue]
    /// Response headers the answer carries (e.g. `DPoP-Nonce`).
    public let headers: [String: String]
    /// Where an error is answered at a protected resource rather than at the token endpoint (RFC 9449 §7.1: DPoP
    /// errors are 401 with a `WWW-Authenticate: DPoP` challenge there, 400 at the token endpoint).
    public let atResource: Bool
    /// The user whose credential the refused request had verified before it was refused (a replayed `jti`, a
    /// counter that did not move, a user deleted meanwhile): the subject of the `signin.failed` record. Nil when
    /// nothing was verified, so that a forged request cannot write someone's name into the audit log. Never sent.
    public private(set) var verifiedSubject: String?

    public init(
        _ code: ErrorCode, _ message: String, maxAge: Int? = nil, detail: String? = nil, members: [String: JSONValue] = [:],
        headers: [String: String] = [:], atResource: Bool = false
    ) {
        self.code = code
        self.message = message
        self.maxAge = maxAge
        self.detail = detail
        self.members = members
        self.headers = headers
        self.atResource = atResource
    }

    public var description: String { "\(code.rawValue): \(message)" + (detail.map { " (\($0))" } ?? "") }

    /// This refusal of a request that had verified `userID`'s credential (``verifiedSubject``); an earlier
    /// subject is kept.
    public func afterVerifying(_ userID: String) -> LatchError {
        var error = self
        if error.verifiedSubject == nil { error.verifiedSubject = userID }
        return error
    }

    /// The `detail` of the refusal that detected refresh-token reuse (metrics count it apart from other refusals).
    public static let reuseDetectedDetail = "refresh token reuse detected"

    // MARK: Factories

    public static func invalidRequest(_ message: String) -> LatchError { .init(.invalidRequest, message) }
    public static func invalidGrant(_ message: String, detail: String? = nil) -> LatchError {
        .init(.invalidGrant, message, detail: detail)
    }
    public static func invalidClient(_ message: String) -> LatchError { .init(.invalidClient, message) }
    public static func invalidToken(_ message: String) -> LatchError { .init(.invalidToken, message) }
    public static func invalidInput(_ message: String) -> LatchError { .init(.invalidInput, message) }
    public static func invalidProof(_ message: String, detail: String? = nil) -> LatchError {
        .init(.invalidProof, message, detail: detail)
    }
    public static func notFound(_ message: String) -> LatchError { .init(.notFound, message) }
    public static func forbidden(_ message: String) -> LatchError { .init(.forbidden, message) }
    public static func insufficientUserAuthentication(maxAge: Int) -> LatchError {
        .init(
            .insufficientUserAuthentication,
            "this operation needs a sign-in within the last \(maxAge) seconds", maxAge: maxAge)
    }
}

extension LatchError: Equatable {
    public static func == (lhs: LatchError, rhs: LatchError) -> Bool { lhs.code == rhs.code }
}

/// A failure of the store itself (unreachable, busy past its retries, disk full). The edge answers 503.
public struct StoreUnavailableError: Error, Sendable, CustomStringConvertible {
    /// What failed, for logs.
    public let detail: String
    public init(_ detail: String) { self.detail = detail }
    public var description: String { "store unavailable: \(detail)" }
}
