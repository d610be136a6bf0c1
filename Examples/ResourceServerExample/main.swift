// A backend (resource server) whose routes need a Latch access token: Bearer, or DPoP-bound with a proof.
//
//   LATCH_ISSUER=http://localhost:8080 swift run ResourceServerExample
//
// Environment: LATCH_ISSUER (required: Latch's issuer), LATCH_AUDIENCE (Latch's access-token audience, default the issuer
// like Latch's own default), LATCH_JWKS_URL
// (default <issuer>/.well-known/jwks.json), LATCH_JWKS_TIMEOUT (seconds one key-set fetch may take, default 5), PORT (default 8090; 0 picks a free one), HOST (default 127.0.0.1),
// EXTERNAL_BASE_URL (the URL clients call, for DPoP proofs' htu; default http://HOST:PORT when PORT is not 0),
// DPOP_NONCES=1 (require server nonces in DPoP proofs), LATCH_INTROSPECTION_CLIENT_ID and
// LATCH_INTROSPECTION_CLIENT_SECRET (check every token with Latch's introspection, so revocation applies at once).
// The first line on stdout is `listening on <port>`.
//
//   GET /health          → 200 "ok", no token needed
//   GET /hello           → 200 {"subject", "clientId", "scopes", "dpop"} with a valid access token; 401 otherwise
//   GET /hello/recent    → the same, but only within 300 s of the user's sign-in (RFC 9470 step-up: 401
//                          insufficient_user_authentication, max_age=300, otherwise)

import Foundation
import Hummingbird
import LatchResourceServer
import LatchResourceServerHummingbird
import Logging
import NIOCore

let environment = ProcessInfo.processInfo.environment

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("resource-server-example: \(message)\n".utf8))
    exit(2)
}

guard let issuer = environment["LATCH_ISSUER"], !issuer.isEmpty else { fail("set LATCH_ISSUER to Latch's issuer URL") }
let audience = environment["LATCH_AUDIENCE"] ?? issuer
guard !audience.isEmpty else { fail("LATCH_AUDIENCE is empty") }
guard let port = Int(environment["PORT"] ?? "8090"), (0...65535).contains(port) else { fail("PORT is not a port number") }
let host = environment["HOST"] ?? "127.0.0.1"

var configuration = ResourceServerConfiguration(issuer: issuer, audience: audience)
if let jwksURL = environment["LATCH_JWKS_URL"] { configuration.jwksURL = jwksURL }
if let text = environment["LATCH_JWKS_TIMEOUT"] {
    guard let seconds = Int(text), (1...300).contains(seconds) else { fail("LATCH_JWKS_TIMEOUT is not a number of seconds from 1 to 300") }
    configuration.jwksFetchTimeout = .seconds(seconds)
}
configuration.externalBaseURL = environment["EXTERNAL_BASE_URL"] ?? (port == 0 ? nil : "http://\(host):\(port)")
if environment["DPOP_NONCES"] == "1" { configuration.dpop.nonces = DPoPNonceOptions() }
if let clientID = environment["LATCH_INTROSPECTION_CLIENT_ID"], let secret = environment["LATCH_INTROSPECTION_CLIENT_SECRET"] {
    configuration.introspection = IntrospectionOptions(issuer: issuer, clientID: clientID, clientSecret: secret)
}

var logger = Logger(label: "resource-server-example")
logger.logLevel = .warning
let verifier: AccessTokenVerifier
do {
    verifier = try AccessTokenVerifier(configuration: configuration, logger: logger)
} catch {
    fail(error.description)
}

/// What `/hello` answers.
struct Hello: ResponseEncodable {
    var subject: String
    var clientId: String
    var scopes: [String]
    var dpop: Bool

    init(_ token: VerifiedAccessToken) {
        subject = token.subject
        clientId = token.clientId
        scopes = token.scopes.sorted()
        dpop = token.isDPoPBound
    }
}

let router = Router(context: LatchResourceRequestContext.self)
router.get("health") { _, _ in "ok" }
let protected = router.group("hello").add(middleware: LatchAccessTokenMiddleware(verifier: verifier))
protected.get { _, context in Hello(try context.requireLatchAccessToken()) }
protected.get("recent") { _, context in
    let token = try context.requireLatchAccessToken()
    try token.requireRecentAuthentication(maxAge: .seconds(300))
    return Hello(token)
}

let startupLogger = logger
let app = Application(
    router: router,
    configuration: .init(address: .hostname(host, port: port), serverName: "ResourceServerExample"),
    onServerRunning: { channel in
        FileHandle.standardOutput.write(Data("listening on \(channel.localAddress?.port ?? port)\n".utf8))
        if verifier.configuration.externalBaseURL == nil {
            startupLogger.warning("no EXTERNAL_BASE_URL: DPoP-bound tokens are refused (their proofs name the URL clients call)")
        }
    },
    logger: logger)
try await app.runService()
