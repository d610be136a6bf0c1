import AsyncHTTPClient
import LatchJOSE
import NIOCore
import NIOHTTP1

/// Fetches Latch's JWK Set (RFC 7517 §5): LatchJOSE's protocol, shared by every JWKS cache in Latch.
/// ``HTTPJWKSFetcher`` makes the HTTP call; tests may count or fail fetches.
public typealias JWKSFetching = LatchJOSE.JWKSFetching

/// Latch's signing keys, cached in memory: LatchJOSE's ``LatchJOSE/JWKSCache`` (fetched at first use, kept
/// `lifetime` seconds, fetched again for an unknown `kid` at most once per `refetchInterval`, a failed fetch keeps the
/// keys it had, concurrent lookups share one fetch).
public typealias JWKSCache = LatchJOSE.JWKSCache

/// Fetches a JWK Set over HTTP(S) with AsyncHTTPClient: `GET`, bounded in time and size, no redirects.
public struct HTTPJWKSFetcher: JWKSFetching {
    /// Why a fetch failed.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    let client: HTTPClient
    let timeout: TimeAmount
    let maximumBytes: Int

    /// - Parameters:
    ///   - client: the client to use; nil uses one of this library's that never follows redirects (it lives as long as
    ///     the process).
    ///   - timeout: the longest a fetch may take.
    ///   - maximumBytes: the largest body read.
    public init(client: HTTPClient? = nil, timeout: TimeAmount = .seconds(5), maximumBytes: Int = LatchJOSE.JWKSCache.maximumJWKSBytes) {
        self.client = client ?? .latchResourceServer
        self.timeout = timeout
        self.maximumBytes = maximumBytes
    }

    public func fetchJWKS(from url: String) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        request.headers.add(name: "Accept", value: "application/jwk-set+json, application/json")
        let response = try await client.execute(request, timeout: timeout)
        guard response.status.code == 200 else { throw Failure(description: "the JWKS URL answered HTTP \(response.status.code)") }
        return Array(try await response.body.collect(upTo: maximumBytes).readableBytesView)
    }
}

extension HTTPClient {
    /// This library's client for Latch's JWKS and introspection: it never follows redirects (a 3xx is a failure) and
    /// does not retry a refused connection until the deadline. One for the process; it lives as long as the process.
    static let latchResourceServer: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()
}
