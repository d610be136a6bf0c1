import Foundation
import LatchJOSE
import LatchModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// DPoP (RFC 9449): the client binds its sessions to a key it holds and proves that key on every request that uses
// them. Which key: the device sign-in key when the user has one (so an app whose client asks for attested DPoP gets
// tokens bound to the key attestation vouched for), else a P-256 key of the client's own, made once and kept in the
// key store. Every token request carries a fresh proof (a new `jti`, `iat` now, `htm` POST, `htu` the token endpoint);
// every call with a bound access token goes as `Authorization: DPoP` with a proof over it (`ath`). The server's latest
// `DPoP-Nonce` (per server) goes into the next proofs; a `use_dpop_nonce` answer is retried once with the nonce it
// brings.

/// How the stored session's tokens are bound, for display and diagnostics (``UserClient/tokenBinding()``).
public struct TokenBinding: Sendable, Hashable {
    /// The server's `token_type`: `DPoP` (bound to a key of this device) or `Bearer`.
    public var tokenType: String
    /// For a bound session: the RFC 7638 thumbprint of the key the tokens are bound to (the access token's
    /// `cnf.jkt`).
    public var thumbprint: String?
    /// Whether that key is the device sign-in key (what an app with attested DPoP needs); `false` for the client's
    /// own DPoP key and for bearer tokens.
    public var isDeviceKey: Bool

    public init(tokenType: String, thumbprint: String?, isDeviceKey: Bool) {
        self.tokenType = tokenType
        self.thumbprint = thumbprint
        self.isDeviceKey = isDeviceKey
    }

    /// Whether the tokens are DPoP-bound.
    public var isDPoPBound: Bool { thumbprint != nil }
}

/// What signs a request's DPoP proof: the key, and the access token the request presents (its hash is the proof's
/// `ath`), if any.
struct DPoPProofSpec: Sendable {
    var key: any JWSSigningKey
    var accessToken: String?

    init(key: any JWSSigningKey, accessToken: String? = nil) {
        self.key = key
        self.accessToken = accessToken
    }
}

extension UserClient {
    /// A refused proof whose server `Date` is further than this from the proof's `iat` is retried once with the
    /// server's time (a device clock that is off by minutes would otherwise make every proof fail).
    static let clockSkewTolerance: TimeInterval = 30

    // MARK: Public API

    /// How the stored tokens are bound (nil when no tokens are held). No server round trip.
    public func tokenBinding() -> TokenBinding? {
        guard let tokens = load(AuthenticationTokens.self, Item.tokens) else { return nil }
        let thumbprint = tokens.isDPoPBound ? (Self.confirmationThumbprint(tokens.accessToken) ?? tokens.dpopKeyThumbprint) : nil
        let device = deviceSigningKey()?.publicKey.thumbprint
        return TokenBinding(
            tokenType: tokens.tokenType ?? "Bearer", thumbprint: thumbprint, isDeviceKey: thumbprint != nil && thumbprint == device)
    }

    /// The RFC 7638 thumbprint of the key the next sign-in binds its tokens to: the device sign-in key, else the
    /// client's own DPoP key once it exists; nil when ``LatchClientConfiguration/dpop`` is off.
    public func dpopKeyThumbprint() -> String? {
        guard configuration.dpop else { return nil }
        if let device = deviceSigningKey() { return device.publicKey.thumbprint }
        return (try? dedicatedDPoPKey(create: false))?.publicKey.thumbprint
    }

    /// The headers that authorize a request to `url` with the current access token — for the app's own backends
    /// (resource servers, e.g. on `LatchResourceServer`). For a DPoP-bound session: `Authorization: DPoP <token>` and
    /// `DPoP: <proof>` (for `method` and `url`, with `ath`, and the nonce last remembered for the URL's server); for a
    /// bearer token: `Authorization: Bearer <token>`. The access token is refreshed first when it expires within 60 s.
    ///
    /// A proof is good for one request: ask again for every request, and for its retry. When the backend answers 401
    /// with `use_dpop_nonce`, give its `DPoP-Nonce` to ``rememberDPoPNonce(_:for:)`` and ask again (or use
    /// ``authorizedData(for:session:)``, which does that).
    ///
    /// - Parameters:
    ///   - method: the request's method, as sent (`GET`, `POST`, …).
    ///   - url: the request's URL (the proof's `htu` is it without query and fragment).
    /// - Throws: ``UserClientError/notSignedIn`` without a session.
    public func authorizationHeaders(method: String, url: URL) async throws(UserClientError) -> [String: String] {
        let tokens = try await validTokens()
        let (authorization, proof) = try self.authorization(tokens)
        var headers = ["Authorization": authorization]
        if let proof { headers[DPoP.headerName] = try dpopProof(proof, method: method, url: url) }
        return headers
    }

    /// `request` with the headers of ``authorizationHeaders(method:url:)`` set (its method, `GET` when unset).
    public func authorizedRequest(_ request: URLRequest) async throws(UserClientError) -> URLRequest {
        guard let url = request.url else { throw .invalidInput("the request has no URL") }
        var authorized = request
        for (name, value) in try await authorizationHeaders(method: request.httpMethod ?? "GET", url: url) {
            authorized.setValue(value, forHTTPHeaderField: name)
        }
        return authorized
    }

    /// Remembers a server's `DPoP-Nonce` for the next proofs to `url`'s server (scheme, host and port). Calls to Latch
    /// remember them by themselves; pass the nonces of the app's own backends.
    public func rememberDPoPNonce(_ nonce: String, for url: URL) {
        guard !nonce.isEmpty, let origin = Self.origin(url) else { return }
        dpopNonces[origin] = nonce
    }

    /// Remembers the `DPoP-Nonce` of a backend's answer, if it carries one.
    public func rememberDPoPNonce(from response: HTTPURLResponse) {
        guard let url = response.url, let nonce = response.value(forHTTPHeaderField: DPoP.nonceHeaderName) else { return }
        rememberDPoPNonce(nonce, for: url)
    }

    /// Sends `request` to an app's backend, authorized as ``authorizedRequest(_:)`` does; a 401 answer asking for a
    /// DPoP nonce (`use_dpop_nonce`) is retried once with the nonce it carries. Every `DPoP-Nonce` answered is
    /// remembered. Answers are returned whatever their status.
    ///
    /// - Throws: ``UserClientError/notSignedIn`` without a session; ``UserClientError/network(underlying:)`` when the
    ///   request fails.
    public func authorizedData(for request: URLRequest, session: URLSession = .shared) async throws(UserClientError) -> (Data, HTTPURLResponse) {
        var retried = false
        while true {
            let authorized = try await authorizedRequest(request)
            let data: Data
            let http: HTTPURLResponse
            do {
                let (body, response) = try await session.data(for: authorized)
                guard let response = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
                (data, http) = (body, response)
            } catch {
                throw .network(underlying: error)
            }
            rememberDPoPNonce(from: http)
            let challenge = http.value(forHTTPHeaderField: "WWW-Authenticate")
            if !retried, http.statusCode == 401, http.value(forHTTPHeaderField: DPoP.nonceHeaderName) != nil,
                Self.dpopErrorCode(body: data, challenge: challenge) == .useDPoPNonce
            {
                retried = true
                continue
            }
            return (data, http)
        }
    }

    // MARK: Keys

    /// The registered device sign-in key, when this device holds one (test, Android key attestation, Play Integrity,
    /// DeviceCheck and custom registrations; App Attest keys sign only assertions). Nil when it cannot be used here.
    func deviceSigningKey() -> (any DeviceSigningKey)? {
        guard let stored = load(Registration.self, Item.registration)?.deviceKey else { return nil }
        return try? keyProvider.restoreKey(stored)
    }

    /// The client's own DPoP key; made (P-256) and stored when absent and `create`. A key store that cannot be read is
    /// an error, never a reason to replace the key (a bound session would lose it).
    func dedicatedDPoPKey(create: Bool) throws(UserClientError) -> (any DeviceSigningKey)? {
        let stored: Data?
        do {
            stored = try keyStore.value(for: Item.dpopKey)
        } catch {
            throw Self.keyStoreError(error, "the key store cannot be read")
        }
        if let stored {
            do {
                return try keyProvider.restoreKey(String(decoding: stored, as: UTF8.self))
            } catch {
                // Another device's enclave key (a restored backup): a session bound to it is lost anyway (see
                // `boundKey`), and a new key binds the next one. A damaged key stays an error.
                guard error.code == .deviceKeyLost else { throw error }
            }
        }
        guard create else { return nil }
        let key = try keyProvider.makeKey(.ES256)
        do {
            try keyStore.set(Data(key.storedRepresentation.utf8), for: Item.dpopKey)
        } catch {
            throw Self.keyStoreError(error, "the key store cannot be written")
        }
        return key
    }

    /// The key a new session is bound to: the device sign-in key when there is one (attested DPoP needs it), else the
    /// client's own; nil when ``LatchClientConfiguration/dpop`` is off.
    func newSessionKey() throws(UserClientError) -> (any DeviceSigningKey)? {
        guard configuration.dpop else { return nil }
        if let device = deviceSigningKey() { return device }
        return try dedicatedDPoPKey(create: true)
    }

    /// The key a token request on the stored session proves: the key a bound session is bound to (whatever
    /// ``LatchClientConfiguration/dpop`` says); for an unbound session, ``newSessionKey()`` (the new access token is
    /// then bound; the session stays as it is).
    func sessionKey(for tokens: AuthenticationTokens) throws(UserClientError) -> (any DeviceSigningKey)? {
        guard tokens.isDPoPBound else { return try newSessionKey() }
        return try boundKey(tokens)
    }

    /// The key a bound session is bound to. When this device no longer holds it, the session cannot be used from
    /// here: the tokens are forgotten and the client is signed out.
    func boundKey(_ tokens: AuthenticationTokens) throws(UserClientError) -> any DeviceSigningKey {
        let thumbprint = tokens.dpopKeyThumbprint
        if let device = deviceSigningKey(), device.publicKey.thumbprint == thumbprint { return device }
        if let own = try dedicatedDPoPKey(create: false), own.publicKey.thumbprint == thumbprint { return own }
        remove(Item.tokens)
        setStatus(.notSignedIn(.sessionEnded))
        throw .notSignedIn
    }

    /// The `Authorization` value for a call with the stored access token, and the proof a bound one needs.
    func authorization(_ tokens: AuthenticationTokens) throws(UserClientError) -> (String, DPoPProofSpec?) {
        guard tokens.isDPoPBound else { return ("Bearer " + tokens.accessToken, nil) }
        return ("DPoP " + tokens.accessToken, DPoPProofSpec(key: try boundKey(tokens), accessToken: tokens.accessToken))
    }

    // MARK: Proofs and requests

    /// A fresh proof for `method` `url`: a new `jti`, `iat` now (on the server's clock, when it was learned), the
    /// server's latest nonce, `ath` when a token goes with it.
    func dpopProof(_ spec: DPoPProofSpec, method: String, url: URL) throws(UserClientError) -> String {
        let issuedAt = Int64((clock().timeIntervalSince1970 + serverClockOffset).rounded(.down))
        do {
            return try DPoP.proof(
                key: spec.key, method: method, url: url.absoluteString, accessToken: spec.accessToken,
                nonce: Self.origin(url).flatMap { dpopNonces[$0] }, jti: UUID().uuidString.lowercased(), issuedAt: issuedAt)
        } catch {
            throw .invalidConfiguration("the DPoP key cannot sign: \(error)")
        }
    }

    /// Sends `request`, with a fresh proof when `proof` is given. Remembers any `DPoP-Nonce` answered. A proof refused
    /// with `use_dpop_nonce` is made again with the nonce the answer carries and sent once more; a proof refused as
    /// `invalid_dpop_proof` while the server's `Date` is minutes from this device's clock is made again on the
    /// server's time and sent once more.
    func perform(_ request: HTTPRequestData, proof: DPoPProofSpec?) async throws(UserClientError) -> HTTPResponseData {
        var nonceRetried = false
        var clockRetried = false
        while true {
            var attempt = request
            if let proof { attempt.headers[DPoP.headerName] = try dpopProof(proof, method: request.method, url: request.url) }
            let response: HTTPResponseData
            do {
                response = try await transport.send(attempt)
            } catch {
                throw .network(underlying: error)
            }
            if let nonce = Self.header(response, DPoP.nonceHeaderName) { rememberDPoPNonce(nonce, for: request.url) }
            guard proof != nil, response.status == 400 || response.status == 401,
                let code = Self.dpopErrorCode(body: response.body, challenge: Self.header(response, "WWW-Authenticate"))
            else { return response }
            if code == .useDPoPNonce, !nonceRetried, Self.header(response, DPoP.nonceHeaderName) != nil {
                nonceRetried = true
                continue
            }
            if code == .invalidDPoPProof, !clockRetried, learnServerClock(response) {
                clockRetried = true
                continue
            }
            return response
        }
    }

    /// After a refused proof: when the answer's `Date` is more than ``clockSkewTolerance`` from the proofs' clock, the
    /// proofs follow the server's clock from now on. Returns whether the offset changed.
    private func learnServerClock(_ response: HTTPResponseData) -> Bool {
        guard let text = Self.header(response, "Date"), let serverNow = Self.httpDate(text) else { return false }
        let skew = serverNow.timeIntervalSince(clock()) - serverClockOffset
        guard abs(skew) > Self.clockSkewTolerance else { return false }
        serverClockOffset += skew
        return true
    }

    // MARK: Helpers

    /// `invalid_dpop_proof` or `use_dpop_nonce`, from a JSON error body or a `DPoP` challenge; nil for anything else.
    static func dpopErrorCode(body: Data, challenge: String?) -> ErrorCode? {
        if let answer = try? JSONDecoder().decode(ErrorResponse.self, from: body) {
            return answer.error == .invalidDPoPProof || answer.error == .useDPoPNonce ? answer.error : nil
        }
        guard let challenge, challenge.lowercased().hasPrefix("dpop ") else { return nil }
        if challenge.contains("error=\"\(ErrorCode.useDPoPNonce.rawValue)\"") { return .useDPoPNonce }
        if challenge.contains("error=\"\(ErrorCode.invalidDPoPProof.rawValue)\"") { return .invalidDPoPProof }
        return nil
    }

    /// A header of an answer, by name in any case (transports are asked to lower-case names; not all do).
    static func header(_ response: HTTPResponseData, _ name: String) -> String? {
        let lowered = name.lowercased()
        if let value = response.headers[lowered] { return value }
        return response.headers.first { $0.key.lowercased() == lowered }?.value
    }

    /// The server a nonce belongs to: scheme, host and port (the default one left out), lower case.
    static func origin(_ url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased() else { return nil }
        if let port = url.port, !(scheme == "https" && port == 443), !(scheme == "http" && port == 80) {
            return "\(scheme)://\(host):\(port)"
        }
        return "\(scheme)://\(host)"
    }

    /// `cnf.jkt` of an access token, read without verification (for display; the binding the client relies on is the
    /// server's `token_type` and the key it proved).
    static func confirmationThumbprint(_ accessToken: String) -> String? {
        (try? ParsedJWS(accessToken))?.claims["cnf"]?["jkt"]?.stringValue
    }

    /// An HTTP date (RFC 9110 §5.6.7, IMF-fixdate).
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: text.trimmingCharacters(in: .whitespaces))
    }
}
