import Foundation
import LatchJOSE
import LatchModel

/// Verifies Latch's ID tokens against the JWKS the server publishes: signature (with the key's one algorithm),
/// `iss` (from discovery), `aud` (this client), `exp`. Discovery is read once; the keys are LatchJOSE's ``JWKSCache``
/// (fetched at first use, again for an unknown `kid` at most once a minute, kept an hour; a failed fetch keeps them).
actor IDTokenVerifier {
    private let serverURL: URL
    private let transport: any HTTPTransport
    private let clock: @Sendable () -> Date
    /// The issuer discovery names, and its keys.
    private var discovered: (issuer: String, keys: JWKSCache)?

    init(serverURL: URL, transport: any HTTPTransport, clock: @escaping @Sendable () -> Date) {
        self.serverURL = serverURL
        self.transport = transport
        self.clock = clock
    }

    func verify(_ token: String, clientID: String, now: Date) async throws(UserClientError) -> [String: JSONValue] {
        guard let parsed = try? ParsedJWS(token), let kid = parsed.keyID else { throw .notAuthorized }
        let (issuer, keys) = try await discovery()
        let key: PublicKey
        switch await keys.key(kid) {
        case .key(let found): key = found
        case .unknownKeyID: throw .notAuthorized
        case .unavailable: throw (keys.lastFailure as? UserClientError) ?? .serviceUnavailable
        }
        guard let verified = try? parsed.verify(with: key) else { throw .notAuthorized }
        let claims = verified.claims
        guard claims["iss"]?.stringValue == issuer,
            claims["aud"]?.stringValue == clientID || claims["aud"]?.arrayValue?.contains(.string(clientID)) == true,
            let exp = claims["exp"]?.doubleValue, exp > now.timeIntervalSince1970
        else { throw .notAuthorized }
        return claims
    }

    /// The issuer and the key cache of its `jwks_uri`, from the discovery document (read again after a failure).
    private func discovery() async throws(UserClientError) -> (issuer: String, keys: JWKSCache) {
        if let discovered { return discovered }
        let metadata = try await fetchJSON(serverURL.appendingPathComponent(".well-known/openid-configuration"))
        guard let issuer = metadata["issuer"]?.stringValue, let jwksURI = metadata["jwks_uri"]?.stringValue, URL(string: jwksURI) != nil else {
            throw .invalidInput("the server's discovery document is incomplete")
        }
        let clock = self.clock
        let found = (
            issuer: issuer,
            keys: JWKSCache(
                url: jwksURI, fetcher: TransportJWKSFetcher(transport: transport), lifetime: 3600, refetchInterval: 60,
                clock: { Int64(clock().timeIntervalSince1970) })
        )
        discovered = found
        return found
    }

    private func fetchJSON(_ url: URL) async throws(UserClientError) -> JSONValue {
        let response: HTTPResponseData
        do {
            response = try await transport.send(HTTPRequestData(method: "GET", url: url))
        } catch {
            throw .network(underlying: error)
        }
        guard response.status == 200, let value = try? JSONValue.parse(response.body) else {
            throw UserClientError.from(status: response.status, body: response.body, headers: response.headers)
        }
        return value
    }
}

/// The server's JWK Set through the client's ``HTTPTransport``; failures are ``UserClientError``s.
struct TransportJWKSFetcher: JWKSFetching {
    let transport: any HTTPTransport

    func fetchJWKS(from url: String) async throws -> [UInt8] {
        guard let url = URL(string: url) else { throw UserClientError.invalidInput("the server's jwks_uri is not a URL") }
        let response: HTTPResponseData
        do {
            response = try await transport.send(HTTPRequestData(method: "GET", url: url))
        } catch {
            throw UserClientError.network(underlying: error)
        }
        guard response.status == 200 else {
            throw UserClientError.from(status: response.status, body: response.body, headers: response.headers)
        }
        return [UInt8](response.body)
    }
}
