import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchJOSE
import LatchModel
import LatchResourceServer
import LatchTesting
import NIOCore
import Testing

/// A live stand-in for Latch on 127.0.0.1: its JWKS at `/.well-known/jwks.json` (what the test publishes; fetches are
/// counted and can be made to fail) and RFC 7662 introspection at `/oauth2/introspect` (HTTP Basic `rs-1` / `s3cret/+`;
/// a token is active unless its `jti` was revoked).
final class LatchStandIn: Sendable {
    struct State {
        var keys: [JSONWebKey] = []
        var fetches = 0
        var fail = false
        var introspections = 0
        var revoked: Set<String> = []
    }

    static let introspectionClientID = "rs-1"
    static let introspectionSecret = "s3cret/+"

    private let state = Locked(State())

    func publish(_ keys: [JSONWebKey]) { state.withLock { $0.keys = keys } }
    var fetches: Int { state.withLock { $0.fetches } }
    var introspections: Int { state.withLock { $0.introspections } }
    var fail: Bool {
        get { state.withLock { $0.fail } }
        set { state.withLock { $0.fail = newValue } }
    }
    func revoke(jti: String) { _ = state.withLock { $0.revoked.insert(jti) } }

    var router: Router<BasicRequestContext> {
        let router = Router()
        router.get(".well-known/jwks.json") { _, _ -> Response in
            let (keys, fail) = self.state.withLock { state in
                state.fetches += 1
                return (state.keys, state.fail)
            }
            if fail { return Response(status: .internalServerError) }
            let body = try JSONEncoder().encode(JSONWebKeySet(keys: keys))
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        // Answers after 3 s: for fetch timeouts.
        router.get("slow/jwks.json") { _, _ -> Response in
            try await Task.sleep(for: .seconds(3))
            let keys = self.state.withLock { $0.keys }
            let body = try JSONEncoder().encode(JSONWebKeySet(keys: keys))
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
        }
        router.post("oauth2/introspect") { request, _ -> Response in
            // RFC 6749 §2.3.1: the id and secret form-encoded, joined by ":", base64.
            let expected = "Basic " + Data("rs-1:s3cret%2F%2B".utf8).base64EncodedString()
            guard request.headers[.authorization] == expected else { return Response(status: .unauthorized) }
            let body = String(buffer: try await request.body.collect(upTo: 64 * 1024))
            guard body.hasPrefix("token="), let token = String(body.dropFirst(6)).removingPercentEncoding,
                let parsed = try? ParsedJWS(token), case .string(let jti)? = parsed.claims["jti"]
            else { return Response(status: .badRequest) }
            let revoked = self.state.withLock { state in
                state.introspections += 1
                return state.revoked.contains(jti)
            }
            var answer: [String: JSONValue] = ["active": .bool(!revoked)]
            if !revoked {
                answer["sub"] = parsed.claims["sub"]
                answer["jti"] = .string(jti)
            }
            return Response(
                status: .ok, headers: [.contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(answer).serialized())))
        }
        return router
    }

    /// Runs `body` with a stand-in listening on 127.0.0.1 (a free port): the stand-in and its base URL.
    static func run<Value: Sendable>(_ body: @escaping @Sendable (LatchStandIn, String) async throws -> Value) async throws -> Value {
        let standIn = LatchStandIn()
        let app = Application(router: standIn.router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        return try await app.test(.live) { client in
            try await body(standIn, "http://127.0.0.1:\(try #require(client.port))")
        }
    }
}

/// Latch-shaped access tokens for tests.
struct Tokens: Sendable {
    static let issuer = "https://latch.test"
    static let audience = "https://api.test"
    /// The URL clients call the resource server at (the verifier's external base URL).
    static let externalBaseURL = "https://api.test"

    let key: PrivateKey
    let kid: String

    static func make(_ algorithm: JWSAlgorithm = .ES256, kid: String = "k1") throws -> Tokens {
        Tokens(key: try PrivateKey.generate(algorithm), kid: kid)
    }

    var jwk: JSONWebKey { key.publicKey.jwk(kid: kid) }

    /// Latch's claims at `now`: issued now, expiring in 300 s, signed in 10 s ago.
    static func claims(now: Int64) -> [String: JSONValue] {
        [
            "iss": .string(issuer), "sub": "user-1", "aud": .string(audience), "client_id": "app-1", "iat": .int(now),
            "exp": .int(now + 300), "jti": .string(UUID().uuidString), "scope": "openid orders:read", "sid": "session-1",
            "auth_time": .int(now - 10),
        ]
    }

    /// A token at `now`, with `changes` made to Latch's claims and `removing` removed, signed as `type`.
    func mint(
        now: Int64, _ changes: [String: JSONValue] = [:], removing: [String] = [], type: String = "at+jwt", kid: String? = nil,
        key: PrivateKey? = nil
    ) throws -> String {
        var claims = Self.claims(now: now).merging(changes) { _, new in new }
        for name in removing { claims[name] = nil }
        return try JWSSigner(key: key ?? self.key, keyID: kid ?? self.kid).sign(claims: claims, type: type)
    }

    /// A token bound to `dpopKey` (`cnf.jkt`).
    func bound(to dpopKey: PrivateKey, now: Int64, _ changes: [String: JSONValue] = [:]) throws -> String {
        try mint(now: now, changes.merging(["cnf": .object(["jkt": .string(dpopKey.publicKey.thumbprint)])]) { _, new in new })
    }

    /// A JWS with any header, signed by `key` (or with `signature` as given).
    static func raw(header: [String: JSONValue], claims: [String: JSONValue], key: PrivateKey?, signature: [UInt8] = [1, 2, 3]) throws -> String {
        let input = Base64URL.encode(JSONValue.object(header).serialized()) + "." + Base64URL.encode(JSONValue.object(claims).serialized())
        let signed = try key.map { try $0.signature(for: Array(input.utf8)) } ?? Data(signature)
        return input + "." + Base64URL.encode(signed)
    }
}

/// A verifier for ``Tokens`` whose keys are at `base` (a ``LatchStandIn``), on `clock`.
func makeVerifier(
    _ base: String, clock: TestClock, introspector: (any TokenIntrospecting)? = nil,
    _ configure: (inout ResourceServerConfiguration) -> Void = { _ in }
) throws -> AccessTokenVerifier {
    var configuration = ResourceServerConfiguration(issuer: Tokens.issuer, audience: Tokens.audience)
    configuration.jwksURL = base + "/.well-known/jwks.json"
    configuration.externalBaseURL = Tokens.externalBaseURL
    // The stand-in answers at once; the default 5 s was overrun under a whole-suite run on two cores, where this
    // fetch waits for a turn on the cooperative pool behind every other test (tests of the timeout set their own).
    configuration.jwksFetchTimeout = .seconds(30)
    configure(&configuration)
    return try AccessTokenVerifier(configuration: configuration, introspector: introspector, clock: { clock.now })
}

func bearer(_ token: String, path: String = "/hello") -> ResourceRequest {
    ResourceRequest(method: "GET", path: path, authorization: ["Bearer \(token)"])
}

func dpop(_ token: String, proofs: [String], method: String = "GET", path: String = "/hello") -> ResourceRequest {
    ResourceRequest(method: method, path: path, authorization: ["DPoP \(token)"], dpop: proofs)
}

/// A proof for `GET https://api.test/hello` (by default) with `key`, carrying `token`'s hash.
func proof(
    _ key: PrivateKey, token: String?, clock: TestClock, method: String = "GET", url: String = Tokens.externalBaseURL + "/hello",
    nonce: String? = nil, age: Int64 = 0
) throws -> String {
    try DPoP.proof(
        key: key, method: method, url: url, accessToken: token, nonce: nonce, jti: UUID().uuidString, issuedAt: clock.seconds - age)
}

/// The error `request` is refused with (a test failure when it is accepted).
func refusal(
    _ verifier: AccessTokenVerifier, _ request: ResourceRequest, requiredScopes: Set<String> = [],
    sourceLocation: SourceLocation = #_sourceLocation
) async -> ResourceServerError? {
    do {
        let token = try await verifier.authenticate(request, requiredScopes: requiredScopes)
        Issue.record("accepted, for \(token.subject)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error
    }
}
