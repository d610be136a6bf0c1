import Crypto
import LatchJOSE
import NIOCore

/// What an ``AccessTokenVerifier`` accepts: whose tokens, for which audience, and how keys, clocks, DPoP proofs and
/// introspection are handled.
///
/// Only ``issuer`` and ``audience`` are required; everything else has a default that suits a backend behind one Latch
/// deployment:
///
/// ```swift
/// var configuration = ResourceServerConfiguration(issuer: "https://id.example.com", audience: "https://api.example.com")
/// configuration.externalBaseURL = "https://api.example.com"   // for DPoP-bound tokens (the `htu` of proofs)
/// let verifier = try AccessTokenVerifier(configuration: configuration)
/// ```
public struct ResourceServerConfiguration: Sendable {
    /// Latch's issuer, compared exactly with the token's `iss` (Latch's `issuer` setting, e.g. `https://id.example.com`).
    public var issuer: String
    /// The audience this backend accepts: Latch's configured access-token audience. The token's `aud` must be it, or an
    /// array holding it.
    public var audience: String
    /// Where Latch publishes its signing keys. Default: `<issuer>/.well-known/jwks.json` (the `jwks_uri` of Latch's
    /// discovery document).
    public var jwksURL: String
    /// How long fetched keys are used before they are fetched again. Default 300 s.
    public var jwksCacheLifetime: Duration = .seconds(300)
    /// Least time between two fetches of the key set. A token naming a `kid` the cache does not hold fetches the keys
    /// again at once, but never sooner than this after the last fetch, so tokens with made-up `kid`s cannot make this
    /// backend hammer Latch. Default 10 s.
    public var jwksRefetchInterval: Duration = .seconds(10)
    /// The longest one fetch of the key set may take (connecting included). Default 5 s.
    public var jwksFetchTimeout: Duration = .seconds(5)
    /// Tolerance for clocks that disagree, applied to `exp`, `iat` and `nbf` (and to a DPoP proof's `iat` in the future).
    /// Default 60 s.
    public var clockSkew: Duration = .seconds(60)
    /// Longest token accepted, bytes. Default 8 KiB.
    public var maximumTokenBytes: Int = 8 * 1024
    /// Algorithms a token may be signed with. `none`, HMAC and anything else are never accepted. Default ES256, RS256
    /// and ES384.
    public var algorithms: Set<JWSAlgorithm> = [.ES256, .RS256, .ES384]
    /// The URL clients call this backend at (scheme, host, port and any path prefix a proxy removes), e.g.
    /// `https://api.example.com`. DPoP proofs name the URL the client called (`htu`), which behind a proxy or load
    /// balancer is not the address this process sees; a request's URL is this base followed by the request's path.
    ///
    /// Without it, DPoP-bound tokens are refused (`invalid_dpop_proof`) unless the request gives its URL itself
    /// (``ResourceRequest/init(method:url:authorization:dpop:)``).
    public var externalBaseURL: String?
    /// The `realm` of `WWW-Authenticate` challenges, when set.
    public var realm: String?
    /// DPoP (RFC 9449) settings for tokens bound to a key (`cnf.jkt`).
    public var dpop = DPoPOptions()
    /// Ask Latch (RFC 7662) whether each token is still active, so a revoked token or ended session is refused at once;
    /// nil (the default) checks tokens offline only.
    public var introspection: IntrospectionOptions?

    /// A configuration for tokens of `issuer` for `audience`; the JWKS URL is derived from the issuer.
    public init(issuer: String, audience: String) {
        self.issuer = issuer
        self.audience = audience
        jwksURL = Self.trimmingTrailingSlashes(issuer) + "/.well-known/jwks.json"
    }

    static func trimmingTrailingSlashes(_ text: String) -> String {
        var text = Substring(text)
        while text.last == "/" { text = text.dropLast() }
        return String(text)
    }
}

/// DPoP (RFC 9449) settings.
public struct DPoPOptions: Sendable {
    /// How old (by its `iat`) a proof may be. Default 60 s; a proof's `jti` is remembered this long (plus the clock
    /// skew), so a replay inside the window is refused.
    public var maximumProofAge: Duration = .seconds(60)
    /// Algorithms a proof may be signed with. Default ES256, ES384 and RS256.
    public var algorithms: Set<JWSAlgorithm> = Set(DPoP.algorithms)
    /// Most proof `jti`s remembered at once. When every entry is still live, requests with DPoP-bound tokens are refused
    /// (503 `temporarily_unavailable`) rather than risk a replay. A `jti` is kept for the proof age plus the clock skew
    /// (120 s by default), so size it to your DPoP request rate × 120 with room to spare: the default 500 000 (about
    /// 50 MB at most) holds about 4,000 DPoP requests/s sustained per process.
    public var replayCacheCapacity: Int = 500_000
    /// Server nonces (RFC 9449 §9): when set, every proof must carry a current nonce of this server; a client without
    /// one is answered `use_dpop_nonce` with a `DPoP-Nonce` header, and successful answers carry the current nonce.
    /// Default nil (no nonces).
    public var nonces: DPoPNonceOptions?

    public init() {}
}

/// Time-window server nonces for DPoP proofs: a nonce is a MAC of the current window's number, so it needs no storage
/// and is valid for the window it was made in and the next one (between one and two ``window``s).
public struct DPoPNonceOptions: Sendable {
    /// How long one nonce is handed out. Default 60 s.
    public var window: Duration = .seconds(60)
    /// The MAC key. Give every replica behind one URL the same key (32 random bytes) so that they accept each other's
    /// nonces; nil draws a random key at start.
    public var secret: SymmetricKey?

    public init(window: Duration = .seconds(60), secret: SymmetricKey? = nil) {
        self.window = window
        self.secret = secret
    }
}

/// RFC 7662 introspection settings: Latch's `/oauth2/introspect` with a resource-server credential
/// (`POST /admin/v1/resource-servers`, or `latch admin resource-servers create --name …`).
public struct IntrospectionOptions: Sendable {
    /// The introspection endpoint. Default `<issuer>/oauth2/introspect`.
    public var url: String
    /// The resource server's client id (`lrs_…`).
    public var clientID: String
    /// The resource server's secret (`lrss_…`).
    public var clientSecret: String
    /// How long an `active` answer is reused for the same token, at most until the token expires. Zero (the default)
    /// asks Latch on every request; a few seconds trades that much revocation delay for fewer calls.
    public var cacheLifetime: Duration = .zero
    /// Most answers cached at once. Default 10 000.
    public var cacheCapacity: Int = 10_000
    /// The longest an introspection call may take. Default 5 s.
    public var timeout: Duration = .seconds(5)

    /// Introspection at `<issuer>/oauth2/introspect` with the given credential.
    public init(issuer: String, clientID: String, clientSecret: String) {
        url = ResourceServerConfiguration.trimmingTrailingSlashes(issuer) + "/oauth2/introspect"
        self.clientID = clientID
        self.clientSecret = clientSecret
    }

    /// Introspection at `url` with the given credential.
    public init(url: String, clientID: String, clientSecret: String) {
        self.url = url
        self.clientID = clientID
        self.clientSecret = clientSecret
    }
}

/// Why a configuration was refused by ``AccessTokenVerifier/init(configuration:fetcher:introspector:clock:logger:)``.
public struct ResourceServerConfigurationError: Error, Sendable, CustomStringConvertible {
    public let description: String
}

extension Duration {
    /// Whole seconds (rounded down, at least 0 for non-negative durations).
    var wholeSeconds: Int64 { components.seconds }

    /// As a NIO time amount in whole milliseconds, at least 1 ms.
    var timeAmount: TimeAmount {
        .milliseconds(max(1, components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000))
    }
}
