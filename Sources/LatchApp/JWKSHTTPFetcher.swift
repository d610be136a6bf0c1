import AsyncHTTPClient
import LatchJOSE
import LatchCore
import NIOCore
import NIOHTTP1

/// Fetches login issuers' JWK Sets over HTTP(S): `GET`, at most `timeoutSeconds`, a body of at most 64 KiB, no redirects
/// (a 3xx is a failure, like any answer but 200), no cookies.
struct JWKSHTTPFetcher: JWKSFetching {
    var timeoutSeconds: Int64 = 5

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    func fetchJWKS(from url: String) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.method = .GET
        request.headers.add(name: "Accept", value: "application/jwk-set+json, application/json")
        let response = try await HTTPClient.noRedirects.traced(request, timeout: .seconds(timeoutSeconds), span: "jwks")
        guard response.status.code == 200 else { throw Failure(description: "the JWKS URL answered HTTP \(response.status.code)") }
        return Array(try await response.body.collect(upTo: 64 * 1024).readableBytesView)
    }
}

extension HTTPClient {
    /// The client for calls to URLs an admin configured (login issuers' JWKS, custom-registration hooks): it never
    /// follows redirects, so a 3xx cannot send Latch elsewhere, and does not retry a refused connection until the deadline
    /// (callers have their own retry policy: a hook that is down fails in milliseconds, not after its whole timeout).
    /// One for the process; it lives as long as the process.
    static let noRedirects: HTTPClient = {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()
}
