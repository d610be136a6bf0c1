import LatchJOSE
import LatchModel

/// Why a request's access token was refused, with everything the HTTP answer needs: the status, the
/// `WWW-Authenticate` challenges (RFC 6750 §3, RFC 9449 §7.1, RFC 9470 §3), a `DPoP-Nonce` when the client must use
/// one, and a JSON body `{"error", "error_description"}`.
///
/// Framework adapters turn it into a response with ``status``, ``headers`` and ``jsonBody``; the Hummingbird adapter
/// (`LatchResourceServerHummingbird`) does so for you.
public struct ResourceServerError: Error, Sendable, CustomStringConvertible {
    /// The error codes of RFC 6750 §3.1, RFC 9449 §7.1 and RFC 9470 §3, and `temporarily_unavailable` when the
    /// token cannot be checked right now.
    public enum Code: String, Sendable, Hashable {
        /// A malformed request: more than one `Authorization` header, or one that is not `<scheme> <token68>`. 400.
        case invalidRequest = "invalid_request"
        /// The token is missing, malformed, expired, revoked, not signed by Latch, or for another audience; or it is
        /// presented with the wrong scheme for its binding. 401.
        case invalidToken = "invalid_token"
        /// The token lacks a scope the resource needs (the challenge names them). 403.
        case insufficientScope = "insufficient_scope"
        /// The DPoP proof is missing, repeated, malformed, replayed, for another request, or of another key. 401.
        case invalidDPoPProof = "invalid_dpop_proof"
        /// The proof must carry this server's current nonce, given in the `DPoP-Nonce` header: retry with it. 401.
        case useDPoPNonce = "use_dpop_nonce"
        /// The user signed in too long ago for this operation: sign in again (`max_age` in the challenge). 401.
        case insufficientUserAuthentication = "insufficient_user_authentication"
        /// The token cannot be checked now (Latch's keys or introspection unreachable, replay cache full). 503.
        case temporarilyUnavailable = "temporarily_unavailable"
    }

    /// The authentication scheme a challenge is for.
    public enum Scheme: String, Sendable, Hashable {
        case bearer = "Bearer"
        case dpop = "DPoP"
    }

    /// The error code (the JSON body's `error`, and the challenge's `error` unless ``isMissingCredentials``).
    public let code: Code
    /// A human-readable reason (the JSON body's `error_description`); never contains the token.
    public let message: String
    /// True when the request carried no access token at all: the challenges then carry no `error` (RFC 6750 §3.1).
    public let isMissingCredentials: Bool
    /// The HTTP status: 400, 401, 403 or 503.
    public let status: Int
    /// The `WWW-Authenticate` challenges, one per scheme (`Bearer …`, `DPoP …`); empty for 503.
    public let challenges: [String]
    /// The `DPoP-Nonce` header value, for `use_dpop_nonce` (and other DPoP failures when nonces are on).
    public let dpopNonce: String?
    /// For ``Code/insufficientUserAuthentication``: the `max_age` the operation needs, seconds.
    public let maxAge: Int64?
    /// For ``Code/insufficientScope``: the scopes the resource needs.
    public let requiredScopes: [String]

    /// The challenges as one `WWW-Authenticate` value (challenges separated by `, `, RFC 9110 §11.6.1), or nil.
    public var wwwAuthenticate: String? { challenges.isEmpty ? nil : challenges.joined(separator: ", ") }

    /// The headers of the answer: `WWW-Authenticate` (one field per challenge), `DPoP-Nonce`, `Retry-After` for 503,
    /// and `Cache-Control: no-store`.
    public var headers: [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = challenges.map { ("WWW-Authenticate", $0) }
        if let dpopNonce { headers.append((DPoP.nonceHeaderName, dpopNonce)) }
        if code == .temporarilyUnavailable { headers.append(("Retry-After", "1")) }
        headers.append(("Cache-Control", "no-store"))
        return headers
    }

    /// The JSON body: `{"error": "<code>", "error_description": "<message>"}`.
    public var jsonBody: [UInt8] {
        var writer = JSONWriter(reservingCapacity: 64 + message.utf8.count)
        writer.beginObject()
        writer.member("error", code.rawValue)
        writer.member("error_description", message)
        writer.endObject()
        return writer.bytes
    }

    public var description: String { "\(code.rawValue): \(message)" }

    /// The answer to a request without an access token: 401, `invalid_token` in the body, and a `Bearer` and a `DPoP`
    /// challenge without an error code (RFC 6750 §3.1). ``AccessTokenVerifier`` throws it with its own realm; this is for
    /// code that finds no verified token where one was expected.
    public static func missingToken(realm: String? = nil, dpopAlgorithms: Set<JWSAlgorithm> = Set(DPoP.algorithms)) -> ResourceServerError {
        ResourceServerError(
            .invalidToken, "an access token is required", scheme: nil, challenge: ChallengeStyle(realm: realm, dpopAlgorithms: dpopAlgorithms),
            missingCredentials: true)
    }

    init(
        _ code: Code, _ message: String, scheme: Scheme?, challenge: ChallengeStyle, missingCredentials: Bool = false,
        dpopNonce: String? = nil, maxAge: Int64? = nil, requiredScopes: [String] = []
    ) {
        self.code = code
        self.message = message
        self.isMissingCredentials = missingCredentials
        self.dpopNonce = dpopNonce
        self.maxAge = maxAge
        self.requiredScopes = requiredScopes
        switch code {
        case .invalidRequest: status = 400
        case .insufficientScope: status = 403
        case .temporarilyUnavailable: status = 503
        case .invalidToken, .invalidDPoPProof, .useDPoPNonce, .insufficientUserAuthentication: status = 401
        }
        if code == .temporarilyUnavailable {
            challenges = []
        } else {
            var parameters: [(String, String)] = []
            if !missingCredentials {
                parameters.append(("error", code.rawValue))
                parameters.append(("error_description", message))
            }
            if !requiredScopes.isEmpty { parameters.append(("scope", requiredScopes.joined(separator: " "))) }
            let schemes: [Scheme] = scheme.map { [$0] } ?? [.bearer, .dpop]
            challenges = schemes.map { challenge.render($0, parameters, maxAge: maxAge) }
        }
    }
}

/// How this verifier writes its challenges: the realm, and the proof algorithms a DPoP challenge lists (`algs`).
struct ChallengeStyle: Sendable {
    var realm: String?
    /// `algs` of DPoP challenges (RFC 9449 §7.1), space-separated.
    var dpopAlgorithms: String

    init(realm: String?, dpopAlgorithms: Set<JWSAlgorithm>) {
        self.realm = realm
        self.dpopAlgorithms = JWSAlgorithm.allCases.filter(dpopAlgorithms.contains).map(\.rawValue).joined(separator: " ")
    }

    /// `<scheme> realm="…", error="…", error_description="…", scope="…", max_age=N, algs="…"`.
    func render(_ scheme: ResourceServerError.Scheme, _ parameters: [(String, String)], maxAge: Int64?) -> String {
        var challenge = scheme.rawValue
        var first = true
        func append(_ name: String, _ value: String, quoted: Bool = true) {
            challenge += first ? " " : ", "
            first = false
            challenge += name
            challenge += quoted ? "=\"\(Self.quotedStringContent(value))\"" : "=\(value)"
        }
        if let realm { append("realm", realm) }
        for (name, value) in parameters { append(name, value) }
        if let maxAge { append("max_age", String(maxAge), quoted: false) }
        if scheme == .dpop, !dpopAlgorithms.isEmpty { append("algs", dpopAlgorithms) }
        return challenge
    }

    /// RFC 6750 §3: `error_description` and `scope` values use %x20-21 / %x23-5B / %x5D-7E only — no quote, no
    /// backslash, no control or non-ASCII character.
    static func quotedStringContent(_ text: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in text.unicodeScalars.prefix(512) where (0x20...0x7E).contains(scalar.value) && scalar != "\"" && scalar != "\\" {
            scalars.append(scalar)
        }
        return String(scalars)
    }
}
