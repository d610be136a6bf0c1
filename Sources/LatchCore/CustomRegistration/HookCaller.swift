import Foundation

/// One answer of a hook over HTTP.
public struct HookAnswer: Sendable, Equatable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// Why a hook call produced no usable answer.
public enum HookCallError: Error, Sendable, Equatable {
    /// No connection, a reset, a TLS failure: worth another attempt.
    case network(String)
    /// No answer within the provider's timeout: worth another attempt.
    case timeout
    /// The hook redirected (3xx): refused, never followed.
    case redirect(Int)
    /// The answer's body is larger than the cap.
    case tooLarge
    /// The URL or an address its host resolves to is not allowed (``HookAddressPolicy``).
    case refused(String)
}

/// POSTs a signed JSON body to a hook. The deployment's implementation is async-http-client with the address policy
/// applied to every address the host resolves to, no redirects, a response cap and the given timeout.
public protocol HookCaller: Sendable {
    func post(url: String, body: [UInt8], headers: [(String, String)], timeoutSeconds: Int64) async -> Result<HookAnswer, HookCallError>
}

/// When a hook call is tried again: after a network error or timeout, or an HTTP 5xx or 429 answer — at most
/// `retries` more times, waiting 100 ms, 200 ms, 400 ms … (capped at 2 s) between attempts. Every other answer is final.
public enum HookRetryPolicy {
    /// Whether this outcome is worth another attempt.
    public static func shouldRetry(_ outcome: Result<HookAnswer, HookCallError>) -> Bool {
        switch outcome {
        case .success(let answer): answer.status == 429 || (500...599).contains(answer.status)
        case .failure(.network), .failure(.timeout): true
        case .failure: false
        }
    }

    /// Milliseconds to wait before attempt `attempt` (1 is the first retry).
    public static func delayMilliseconds(beforeRetry attempt: Int) -> Int {
        min(2_000, 100 << min(max(attempt - 1, 0), 5))
    }
}
