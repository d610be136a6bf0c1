import Foundation
import LatchJOSE
import LatchModel
import Logging

/// An answer of an upstream identity provider.
public struct UpstreamResponse: Sendable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8]) {
        self.status = status
        self.body = body
    }
}

/// The HTTP calls Latch makes to upstream identity providers. Implemented over AsyncHTTPClient by the composition root:
/// no redirects followed, answers capped, each call bounded by `timeout` seconds. Throws on network failures and
/// timeouts.
public protocol UpstreamHTTPClient: Sendable {
    func get(_ url: String, bearer: String?, timeout: Int64) async throws -> UpstreamResponse
    func postForm(_ url: String, _ form: [(String, String)], basic: (user: String, password: String)?, timeout: Int64) async throws
        -> UpstreamResponse
}

/// The upstream's OpenID Provider metadata (OIDC Discovery 1.0 §3) that Latch uses.
public struct UpstreamMetadata: Sendable, Hashable {
    public var issuer: String
    public var authorizationEndpoint: String
    public var tokenEndpoint: String
    public var userinfoEndpoint: String?
    public var jwksURI: String
    public var endSessionEndpoint: String?
    /// RFC 9207: the upstream puts `iss` in its authorization responses, so a missing one is refused.
    public var issParameterSupported: Bool
}

/// What a validated upstream sign-in yields.
public struct UpstreamIdentity: Sendable {
    public var subject: String
    /// The ID token's claims, with UserInfo's over them when the upstream is so configured.
    public var claims: [String: JSONValue]
    public var authTime: Int64?
    /// The raw ID token (sent back as `id_token_hint` at sign-out).
    public var idToken: String
}

/// Latch as an OpenID Connect relying party of upstream identity providers: discovery and JWKS (cached; the JWKS
/// re-read when a token names an unknown `kid`), the code exchange with PKCE, ID-token validation (OIDC Core
/// §3.1.3.7) and UserInfo.
public final class UpstreamOpenIDClient: Sendable {
    struct Cached<Value: Sendable>: Sendable {
        var value: Value
        var fetchedAt: Int64
    }

    private let http: any UpstreamHTTPClient
    private let clock: LatchClock
    private let timeout: Int64
    let clockSkew: Int64
    private let metadataCache = Locked<[String: Cached<UpstreamMetadata>]>([:])
    /// Each upstream's signing keys, by JWKS URL.
    private let keyCaches = Locked<[String: JWKSCache]>([:])
    private let logger: Logger
    /// How long discovery documents and JWKS are kept.
    static let cacheLifetime: Int64 = 3600
    /// The shortest time between two JWKS reads for an unknown `kid` (a flood of forged kids is not a flood of calls).
    static let refetchInterval: Int64 = 5
    /// The largest ID token read.
    static let maximumTokenLength = 16 * 1024

    public init(http: any UpstreamHTTPClient, clock: LatchClock, timeout: Int64 = 10, clockSkew: Int64 = 60, logger: Logger = Logger(label: "latch.upstream")) {
        self.http = http
        self.clock = clock
        self.timeout = timeout
        self.clockSkew = clockSkew
        self.logger = logger
    }

    static func unavailable(_ message: String, detail: String? = nil) -> LatchError {
        LatchError(.upstreamUnavailable, message, detail: detail)
    }

    static func invalidToken(_ message: String) -> LatchError { LatchError(.upstreamInvalidIDToken, message) }

    /// An upstream URL is https, or http to a loopback address (development and tests).
    public static func isAcceptableURL(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty, url.user == nil,
            url.fragment == nil
        else { return false }
        if scheme == "https" { return true }
        return scheme == "http" && ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
    }

    // MARK: Discovery

    /// The upstream's metadata, from cache or its discovery document; its `issuer` must be the configured one exactly.
    public func metadata(issuer: String) async throws -> UpstreamMetadata {
        let now = clock.seconds()
        if let cached = metadataCache.withLock({ $0[issuer] }), now - cached.fetchedAt < Self.cacheLifetime { return cached.value }
        let discovery = issuer + "/.well-known/openid-configuration"
        let response: UpstreamResponse
        do {
            response = try await http.get(discovery, bearer: nil, timeout: timeout)
        } catch {
            throw Self.unavailable("the identity provider's discovery document could not be read", detail: "\(error)")
        }
        guard response.status == 200, case .object(let fields)? = try? JSONValue.parse(response.body) else {
            throw Self.unavailable("the identity provider's discovery document could not be read", detail: "HTTP \(response.status)")
        }
        func url(_ name: String) -> String? {
            guard let value = fields[name]?.stringValue, Self.isAcceptableURL(value) else { return nil }
            return value
        }
        guard fields["issuer"]?.stringValue == issuer else {
            throw Self.unavailable("the identity provider's discovery document names another issuer")
        }
        guard let authorization = url("authorization_endpoint"), let token = url("token_endpoint"), let jwks = url("jwks_uri") else {
            throw Self.unavailable("the identity provider's discovery document lacks an endpoint or names an insecure one")
        }
        let metadata = UpstreamMetadata(
            issuer: issuer, authorizationEndpoint: authorization, tokenEndpoint: token, userinfoEndpoint: url("userinfo_endpoint"), jwksURI: jwks,
            endSessionEndpoint: url("end_session_endpoint"),
            issParameterSupported: fields["authorization_response_iss_parameter_supported"] == .bool(true))
        metadataCache.withLock { $0[issuer] = Cached(value: metadata, fetchedAt: now) }
        return metadata
    }

    /// The upstream's signing key `kid`: from cache, or the JWKS read again when the kid is unknown (at most every
    /// ``refetchInterval`` seconds; a failed read keeps the keys read before). Nil when the upstream does not publish
    /// it; ``ErrorCode/upstreamUnavailable`` when its keys could never be read.
    func key(kid: String, metadata: UpstreamMetadata) async throws -> PublicKey? {
        let cache = keyCaches.withLock { caches -> JWKSCache in
            if let cache = caches[metadata.jwksURI] { return cache }
            let cache = JWKSCache(
                url: metadata.jwksURI, fetcher: UpstreamJWKSFetcher(http: http, timeout: timeout), lifetime: Self.cacheLifetime,
                refetchInterval: Self.refetchInterval, clock: { [clock] in clock.seconds() },
                events: { [logger] event in
                    if case .failed(let url, let error) = event {
                        logger.warning("identity provider JWKS read failed", metadata: ["url": "\(url)", "error": "\(error)"])
                    }
                })
            caches[metadata.jwksURI] = cache
            return cache
        }
        switch await cache.key(kid) {
        case .key(let key): return key
        case .unknownKeyID: return nil
        case .unavailable:
            throw Self.unavailable("the identity provider's keys could not be read", detail: cache.lastFailure.map { "\($0)" })
        }
    }

    // MARK: Code exchange

    /// Exchanges an authorization code (with its PKCE verifier) at the upstream's token endpoint and validates the ID
    /// token it answers; reads UserInfo when `idp` says so.
    public func signIn(
        code: String, verifier: String, nonce: String, redirectURI: String, idp: UpstreamIdP, clientSecret: String?,
        clientAssertion: @Sendable (_ audience: String) throws -> String, metadata: UpstreamMetadata
    ) async throws -> UpstreamIdentity {
        var form: [(String, String)] = [
            ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", redirectURI), ("code_verifier", verifier),
        ]
        var basic: (user: String, password: String)?
        switch idp.settings.clientAuthentication {
        case .clientSecretBasic:
            // RFC 6749 §2.3.1: both parts form-encoded before Basic.
            basic = (FormEncoding.encode(idp.settings.clientId), FormEncoding.encode(clientSecret ?? ""))
        case .clientSecretPost:
            form += [("client_id", idp.settings.clientId), ("client_secret", clientSecret ?? "")]
        case .privateKeyJWT:
            form += [
                ("client_id", idp.settings.clientId), ("client_assertion_type", "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"),
                ("client_assertion", try clientAssertion(metadata.tokenEndpoint)),
            ]
        }
        let response: UpstreamResponse
        do {
            response = try await http.postForm(metadata.tokenEndpoint, form, basic: basic, timeout: timeout)
        } catch {
            throw Self.unavailable("the identity provider did not answer the code exchange", detail: "\(error)")
        }
        guard response.status == 200, case .object(let fields)? = try? JSONValue.parse(response.body) else {
            let upstreamError = (try? JSONValue.parse(response.body))?.objectValue?["error"]?.stringValue
            throw Self.unavailable(
                "the identity provider refused the code exchange", detail: "HTTP \(response.status) \(upstreamError.map { String($0.prefix(64)) } ?? "")")
        }
        guard let idToken = fields["id_token"]?.stringValue else {
            throw Self.invalidToken("the identity provider answered without an ID token")
        }
        var identity = try await validate(idToken: idToken, nonce: nonce, idp: idp, metadata: metadata)
        if idp.settings.useUserinfo, let endpoint = metadata.userinfoEndpoint, let accessToken = fields["access_token"]?.stringValue {
            let userinfo: UpstreamResponse
            do {
                userinfo = try await http.get(endpoint, bearer: accessToken, timeout: timeout)
            } catch {
                throw Self.unavailable("the identity provider's UserInfo endpoint did not answer", detail: "\(error)")
            }
            guard userinfo.status == 200, case .object(let claims)? = try? JSONValue.parse(userinfo.body) else {
                throw Self.unavailable("the identity provider's UserInfo endpoint refused", detail: "HTTP \(userinfo.status)")
            }
            // OIDC Core §5.3.2: the UserInfo sub must be the ID token's.
            guard claims["sub"]?.stringValue == identity.subject else {
                throw Self.invalidToken("the UserInfo answer is for another subject")
            }
            identity.claims.merge(claims) { _, fresh in fresh }
        }
        return identity
    }

    /// ID-token validation (OIDC Core §3.1.3.7), each step refused with ``ErrorCode/upstreamInvalidIDToken``:
    ///
    /// - Step 1. A compact JWS of at most 16 KiB whose `alg` is on the upstream's allowlist (never `none` or HMAC).
    /// - Step 2. Signed by the upstream key `kid` names (the JWKS re-read once for an unknown kid).
    /// - Step 3. `iss` is the upstream's issuer exactly; `aud` contains the client id; with several audiences, `azp`
    ///   is the client id.
    /// - Step 4. `exp` is in the future and `iat` not in the future (each with the clock skew).
    /// - Step 5. `nonce` is the one sent with this sign-in (constant-time); `sub` is 1–255 bytes.
    public func validate(idToken: String, nonce: String, idp: UpstreamIdP, metadata: UpstreamMetadata) async throws -> UpstreamIdentity {
        // Step 1.
        guard let jws = try? ParsedJWS(idToken, maximumLength: Self.maximumTokenLength) else {
            throw Self.invalidToken("the ID token is not a compact JWS")
        }
        guard idp.settings.algorithms.contains(jws.algorithmName), (try? jws.algorithm()) != nil else {
            throw Self.invalidToken("the ID token's alg \(jws.algorithmName.prefix(16)) is not accepted from this identity provider")
        }
        // Step 2.
        guard let kid = jws.keyID ?? nil, let key = try await key(kid: kid, metadata: metadata) else {
            throw Self.invalidToken("the ID token is signed with a key the identity provider does not publish")
        }
        let claims: [String: JSONValue]
        do {
            claims = try jws.verify(with: key).claims
        } catch {
            throw Self.invalidToken("the ID token's signature does not verify")
        }
        // Step 3.
        guard claims["iss"]?.stringValue == metadata.issuer else { throw Self.invalidToken("the ID token's iss is not the identity provider") }
        let audiences: [String] =
            switch claims["aud"] {
            case .string(let single)?: [single]
            case .array(let values)?: values.compactMap(\.stringValue)
            default: []
            }
        guard audiences.contains(idp.settings.clientId) else { throw Self.invalidToken("the ID token is not for Latch's client id (aud)") }
        if audiences.count > 1 || claims["azp"] != nil {
            guard claims["azp"]?.stringValue == idp.settings.clientId else { throw Self.invalidToken("the ID token's azp is not Latch's client id") }
        }
        // Step 4.
        let now = clock.seconds()
        guard let expiresAt = claims["exp"]?.intValue, expiresAt + clockSkew > now else { throw Self.invalidToken("the ID token has expired") }
        guard let issuedAt = claims["iat"]?.intValue, issuedAt <= now + clockSkew else {
            throw Self.invalidToken("the ID token's iat is missing or in the future")
        }
        // Step 5.
        guard let tokenNonce = claims["nonce"]?.stringValue, Secrets.constantTimeEquals(tokenNonce, nonce) else {
            throw Self.invalidToken("the ID token's nonce is not this sign-in's")
        }
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty, subject.utf8.count <= 255 else {
            throw Self.invalidToken("the ID token's sub is missing or longer than 255 bytes")
        }
        return UpstreamIdentity(subject: subject, claims: claims, authTime: claims["auth_time"]?.intValue, idToken: idToken)
    }
}

/// `application/x-www-form-urlencoded` (the WHATWG URL standard's encoding).
public enum FormEncoding {
    static let unreserved: Set<UInt8> = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._*".utf8))

    public static func encode(_ value: String) -> String {
        var out = ""
        out.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            if unreserved.contains(byte) {
                out.unicodeScalars.append(UnicodeScalar(byte))
            } else if byte == UInt8(ascii: " ") {
                out += "+"
            } else {
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// `name=value&…`, each part encoded.
    public static func query(_ pairs: [(String, String)]) -> String {
        pairs.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
    }

    /// `url` with `pairs` added to its query (after `?`, or `&` when it has one already).
    public static func appending(_ pairs: [(String, String)], to url: String) -> String {
        guard !pairs.isEmpty else { return url }
        return url + (url.contains("?") ? "&" : "?") + query(pairs)
    }
}

/// An upstream's JWK Set through the deployment's ``UpstreamHTTPClient`` (bounded in time; any answer but 200 fails).
struct UpstreamJWKSFetcher: JWKSFetching {
    struct Refused: Error, CustomStringConvertible {
        let status: Int
        var description: String { "HTTP \(status)" }
    }

    let http: any UpstreamHTTPClient
    let timeout: Int64

    func fetchJWKS(from url: String) async throws -> [UInt8] {
        let response = try await http.get(url, bearer: nil, timeout: timeout)
        guard response.status == 200 else { throw Refused(status: response.status) }
        return response.body
    }
}
