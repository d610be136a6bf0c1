import Crypto
import Foundation
import LatchModel

/// RFC 9449 DPoP proofs: checking one (Latch's token endpoint and resource endpoints, and `LatchResourceServer`) and
/// making one (the SDK, tests).
///
/// Replay (a `jti` seen before) and the server's nonce are the caller's: the check returns the `jti` and the time it
/// must be remembered until, and takes the nonce rule as ``Expectations/nonce``.
public enum DPoP {
    /// The `typ` of a proof (RFC 9449 §4.2).
    public static let type = "dpop+jwt"
    /// The `DPoP` and `DPoP-Nonce` header names.
    public static let headerName = "DPoP"
    public static let nonceHeaderName = "DPoP-Nonce"
    /// The algorithms a proof may use (all asymmetric; `none` and HMAC are never accepted).
    public static let algorithms: [JWSAlgorithm] = [.ES256, .ES384, .RS256]
    /// Longest proof accepted, bytes (an RSA-4096 `jwk` fits several times over).
    public static let maximumProofBytes = 8 * 1024
    /// Longest `jti` accepted, bytes.
    public static let maximumJTIBytes = 256
    /// Members of a private or symmetric JWK: a proof's `jwk` carrying any is refused (RFC 9449 §4.3 step 7).
    static let privateMembers = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]

    /// Why a proof was refused: `invalid_dpop_proof`, or `use_dpop_nonce` (the client must retry with the nonce the
    /// server sends in `DPoP-Nonce`).
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public enum Code: String, Sendable, Hashable {
            case invalidProof = "invalid_dpop_proof"
            case useNonce = "use_dpop_nonce"
        }

        public let code: Code
        public let message: String

        public init(_ code: Code, _ message: String) {
            self.code = code
            self.message = message
        }

        public var description: String { "\(code.rawValue): \(message)" }
        static func invalid(_ message: String) -> Failure { Failure(.invalidProof, message) }
    }

    /// What a proof must match.
    public struct Expectations: Sendable {
        /// The request's method (`htm`, compared exactly).
        public var method: String
        /// The request's URL (`htu`, compared after ``normalizedURL(_:)``: no query or fragment, scheme and host in
        /// lower case, no default port).
        public var url: String
        /// At a resource: the access token presented, whose hash the proof's `ath` must be.
        public var accessToken: String?
        /// The server's clock, Unix seconds.
        public var now: Int64
        /// How old (by `iat`) a proof may be, seconds.
        public var maximumAge: Int64 = 60
        /// How far in the future `iat` may be (clock skew), seconds.
        public var futureSkew: Int64 = 60
        /// Accepted algorithms.
        public var algorithms: Set<JWSAlgorithm> = Set(DPoP.algorithms)
        /// The server's nonce rule: `required` refuses a proof without `nonce`; a `nonce` present is passed to
        /// `isValid` (nil: any nonce is accepted). Either failure is `use_dpop_nonce`.
        public var nonce: NonceRule = .init(required: false, isValid: nil)

        public init(method: String, url: String, accessToken: String? = nil, now: Int64) {
            self.method = method
            self.url = url
            self.accessToken = accessToken
            self.now = now
        }
    }

    /// The server's nonce rule.
    public struct NonceRule: Sendable {
        public var required: Bool
        public var isValid: (@Sendable (String) -> Bool)?

        public init(required: Bool, isValid: (@Sendable (String) -> Bool)?) {
            self.required = required
            self.isValid = isValid
        }
    }

    /// A proof that passed every check but replay.
    public struct Proof: Sendable {
        /// The RFC 7638 thumbprint of the proof's key (`cnf.jkt` of the tokens bound to it).
        public let thumbprint: String
        /// The proof's key.
        public let key: PublicKey
        public let jti: String
        public let issuedAt: Int64
        /// Until when the `jti` must be remembered: past it, `iat` is too old anyway.
        public let rememberUntil: Int64
    }

    /// RFC 9449 §4.3, in its order:
    /// 1. one proof (the caller refuses a repeated header), 2. a well-formed JWT, 3. `typ` is `dpop+jwt`, 4. `alg` is
    /// an accepted asymmetric algorithm, 5. the signature verifies with the header's `jwk`, 6./7. the `jwk` is a
    /// public key (no private or symmetric members), then the claims: `jti` (a string), `htm`, `htu`, `iat` within the
    /// window, `nonce` when the server requires one, and `ath` when a token is presented. No `jku`, `x5u`, `x5c` nor
    /// `crit` header.
    public static func verify(_ proof: String, _ expected: Expectations) throws(Failure) -> Proof {
        // 2.
        let parsed: ParsedJWS
        do {
            parsed = try ParsedJWS(proof, maximumLength: maximumProofBytes)
        } catch {
            throw .invalid(error.reason == .tooLarge ? "the proof exceeds \(maximumProofBytes) bytes" : "the proof is not a JWT: \(error.detail)")
        }
        // 3.
        guard parsed.header["typ"]?.stringValue == type else { throw .invalid("the proof's typ must be dpop+jwt") }
        // 4.
        guard let algorithm = JWSAlgorithm(rawValue: parsed.algorithmName), expected.algorithms.contains(algorithm) else {
            throw .invalid("the proof's alg \(parsed.algorithmName.prefix(16)) is not accepted (\(expected.algorithms.map(\.rawValue).sorted().joined(separator: ", ")))")
        }
        for name in ["jku", "x5u", "x5c", "crit"] where parsed.header[name] != nil {
            throw .invalid("the proof's \(name) header is not accepted")
        }
        // 6., 7.
        guard case .object(let members)? = parsed.header["jwk"] else { throw .invalid("the proof has no jwk header") }
        if let secret = privateMembers.first(where: { members[$0] != nil }) {
            throw .invalid("the proof's jwk holds a private key member (\(secret))")
        }
        guard case .string(let kty)? = members["kty"] else { throw .invalid("the proof's jwk has no kty") }
        func member(_ name: String) throws(Failure) -> String? {
            switch members[name] {
            case nil: return nil
            case .string(let value)?: return value
            default: throw .invalid("the proof's jwk member \(name) must be a string")
            }
        }
        let jwk = JSONWebKey(
            kty: kty, kid: nil, alg: try member("alg"), use: nil, crv: try member("crv"), x: try member("x"), y: try member("y"), n: try member("n"),
            e: try member("e"))
        let key: PublicKey
        do {
            key = try PublicKey(jwk: jwk)
        } catch {
            throw .invalid("the proof's jwk is not an accepted public key")
        }
        guard key.algorithm == algorithm else { throw .invalid("the proof's alg is not its jwk's algorithm") }
        // 5.
        guard key.isValidSignature(parsed.signature, for: parsed.signingInput) else {
            throw .invalid("the proof's signature does not verify with its jwk")
        }
        // 8. The claims.
        guard case .string(let jti)? = parsed.claims["jti"], !jti.isEmpty, jti.utf8.count <= maximumJTIBytes else {
            throw .invalid("the proof's jti must be a string of 1–\(maximumJTIBytes) bytes")
        }
        guard case .string(let htm)? = parsed.claims["htm"], htm == expected.method else {
            throw .invalid("the proof's htm is not the request's method \(expected.method)")
        }
        // The common case — the client wrote the URL exactly as the server knows it — needs no parsing.
        guard case .string(let htu)? = parsed.claims["htu"],
            htu == expected.url || normalizedURL(htu).map({ $0 == normalizedURL(expected.url) }) == true
        else {
            // Naming the URL expected (built from the issuer: not a secret) tells a client on another host name why.
            throw .invalid("the proof's htu is not this request's URL, \(expected.url) (the server's issuer decides its scheme, host and port)")
        }
        guard case .int(let issuedAt)? = parsed.claims["iat"] else { throw .invalid("the proof's iat must be an integer (seconds)") }
        guard issuedAt <= expected.now + expected.futureSkew else { throw .invalid("the proof's iat is in the future") }
        guard issuedAt >= expected.now - expected.maximumAge else { throw .invalid("the proof is older than \(expected.maximumAge) seconds") }
        switch parsed.claims["nonce"] {
        case nil:
            if expected.nonce.required { throw Failure(.useNonce, "the proof must carry the server's nonce (DPoP-Nonce)") }
        case .string(let nonce)?:
            if let isValid = expected.nonce.isValid, !isValid(nonce) {
                throw Failure(.useNonce, "the proof's nonce is not a current one of this server")
            }
        default:
            throw .invalid("the proof's nonce must be a string")
        }
        if let token = expected.accessToken {
            guard case .string(let ath)? = parsed.claims["ath"], ath == accessTokenHash(token) else {
                throw .invalid("the proof's ath is not the hash of the access token presented")
            }
        }
        return Proof(
            thumbprint: key.thumbprint, key: key, jti: jti, issuedAt: issuedAt,
            rememberUntil: issuedAt + expected.maximumAge + expected.futureSkew)
    }

    /// `htu` comparison form (RFC 9449 §4.3 step 9, RFC 3986 §6.2.2–6.2.3): scheme and host in lower case, the default
    /// port dropped, an empty path as `/`, no query and no fragment; nil for a URL without http(s) scheme or host.
    public static func normalizedURL(_ text: String) -> String? {
        guard text.utf8.count <= 4096, var components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "https" || scheme == "http", let host = components.host?.lowercased(), !host.isEmpty
        else { return nil }
        components.scheme = scheme
        components.host = host
        if (scheme == "https" && components.port == 443) || (scheme == "http" && components.port == 80) { components.port = nil }
        components.query = nil
        components.fragment = nil
        components.user = nil
        components.password = nil
        if components.path.isEmpty { components.path = "/" }
        return components.string
    }

    /// `ath`: base64url SHA-256 of the access token's ASCII bytes.
    public static func accessTokenHash(_ token: String) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Data(token.utf8))))
    }

    /// The public JWK of a proof's header: the RFC 7638 required members only.
    static func headerJWK(_ key: PublicKey) -> JSONValue {
        let jwk = key.jwk(kid: "")
        if jwk.kty == "RSA" {
            return .object(["kty": "RSA", "n": .string(jwk.n ?? ""), "e": .string(jwk.e ?? "")])
        }
        return .object(["kty": "EC", "crv": .string(jwk.crv ?? ""), "x": .string(jwk.x ?? ""), "y": .string(jwk.y ?? "")])
    }

    /// A proof for a request: `typ: dpop+jwt`, `alg` of the key, the public `jwk`; `jti`, `htm`, `htu` (normalised),
    /// `iat`, and `nonce` / `ath` when given.
    public static func proof(
        key: some JWSSigningKey, method: String, url: String, accessToken: String? = nil, nonce: String? = nil, jti: String, issuedAt: Int64
    ) throws -> String {
        let header: JSONValue = ["typ": .string(type), "alg": .string(key.algorithm.rawValue), "jwk": headerJWK(key.publicKey)]
        var claims: [String: JSONValue] = [
            "jti": .string(jti), "htm": .string(method), "htu": .string(normalizedURL(url) ?? url), "iat": .int(issuedAt),
        ]
        if let nonce { claims["nonce"] = .string(nonce) }
        if let accessToken { claims["ath"] = .string(accessTokenHash(accessToken)) }
        return try JWSSigner.compact(encodedHeader: Base64URL.encode(header.serialized()), claimsJSON: JSONValue.object(claims).serialized()) {
            try key.signature(for: $0)
        }
    }
}
