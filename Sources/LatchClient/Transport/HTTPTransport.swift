import Foundation
import LatchModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP request as the SDK makes it. It carries `User-Agent: latch-swift/<version>` (``LatchVersion``) unless
/// `headers` names one, so that whatever transport sends it, the server's audit log shows which SDK release asked.
public struct HTTPRequestData: Sendable, Hashable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: Data?

    public init(method: String, url: URL, headers: [String: String] = [:], body: Data? = nil) {
        self.method = method
        self.url = url
        self.headers = headers
        if !headers.keys.contains(where: { $0.caseInsensitiveCompare("User-Agent") == .orderedSame }) {
            self.headers["User-Agent"] = LatchVersion.sdkUserAgent
        }
        self.body = body
    }
}

/// One HTTP answer.
public struct HTTPResponseData: Sendable, Hashable {
    public var status: Int
    /// Header names lower-cased.
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// How the SDK reaches the network. `URLSessionTransport` by default; apps and tests may supply their own
/// (certificate pinning, a proxy, a recording transport).
public protocol HTTPTransport: Sendable {
    /// Sends `request`; throws only for transport failures (an HTTP error status is a normal answer).
    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData
}

/// `URLSession` (FoundationNetworking on Linux).
///
/// Every request also has a deadline of its own, `deadline` after it was sent (75 s by default, past `URLRequest`'s
/// 60 s idle timeout): it then fails with `URLError(.timedOut)` and the call is abandoned. FoundationNetworking's
/// `URLSession` has been known to lose a completion now and then (swift-corelibs-foundation #3876); an app must get
/// an error, not a sign-in that never returns.
public struct URLSessionTransport: HTTPTransport {
    private let session: URLSession
    /// The longest a request may take, its whole answer included.
    public let deadline: Duration

    public init(session: URLSession = .shared, deadline: Duration = .seconds(75)) {
        self.session = session
        self.deadline = deadline
    }

    public func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        urlRequest.httpBody = request.body
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        let session = self.session
        let sent = urlRequest
        let (data, response) = try await withAbandoningDeadline(deadline, timeoutError: { URLError(.timedOut) }) {
            try await session.data(for: sent)
        }
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return HTTPResponseData(status: http.statusCode, headers: headers, body: data)
    }
}
