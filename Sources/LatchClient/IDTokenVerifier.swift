import Foundation
import LatchJOSE
import LatchModel

/// Verifies Latch's ID tokens against the JWKS the server publishes: signature (with the key's one algorithm),
/// `iss` (from discovery), `aud` (this client), `exp`. Keys are fetched once and again when a token names an
/// unknown `kid` (at most once a minute).
actor IDTokenVerifier {
    private let serverURL: URL
    private let transport: any HTTPTransport
    private var issuer: String?
    private var keys: [String: PublicKey] = [:]
    private var fetchedAt: Date?

    init(serverURL: URL, transport: any HTTPTransport) {
        self.serverURL = serverURL
        self.transport = transport
    }

    func verify(_ token: String, clientID: String, now: Date) async throws(UserClientError) -> [String: JSONValue] {
        guard let parsed = try? ParsedJWS(token), let kid = parsed.keyID else { throw .notAuthorized }
        if keys[kid] == nil, fetchedAt.map({ now.timeIntervalSince($0) > 60 }) ?? true {
            try await refreshKeys(now: now)
        }
        guard let key = keys[kid], let verified = try? parsed.verify(with: key) else { throw .notAuthorized }
        let claims = verified.claims
        guard claims["iss"]?.stringValue == issuer,
            claims["aud"]?.stringValue == clientID || claims["aud"]?.arrayValue?.contains(.string(clientID)) == true,
            let exp = claims["exp"]?.doubleValue, exp > now.timeIntervalSince1970
        else { throw .notAuthorized }
        return claims
    }

    private func refreshKeys(now: Date) async throws(UserClientError) {
        fetchedAt = now
        let metadata = try await fetchJSON(serverURL.appendingPathComponent(".well-known/openid-configuration"))
        guard let issuer = metadata["issuer"]?.stringValue, let jwksURI = metadata["jwks_uri"]?.stringValue,
            let jwksURL = URL(string: jwksURI)
        else { throw .invalidInput("the server's discovery document is incomplete") }
        let jwks = try await fetchJSON(jwksURL)
        var keys: [String: PublicKey] = [:]
        for entry in jwks["keys"]?.arrayValue ?? [] {
            guard let data = try? JSONEncoder().encode(entry), let jwk = try? JSONDecoder().decode(JSONWebKey.self, from: data),
                let kid = jwk.kid, jwk.alg != nil, let key = try? PublicKey(jwk: jwk)
            else { continue }
            keys[kid] = key
        }
        self.issuer = issuer
        self.keys = keys
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
