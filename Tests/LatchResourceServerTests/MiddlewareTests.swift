import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchJOSE
import LatchModel
import LatchResourceServer
import LatchResourceServerHummingbird
import LatchTesting
import NIOCore
import Testing

@Suite("The Hummingbird middleware")
struct MiddlewareTests {
    /// An app whose `/hello` needs a token, `/orders` the `orders:write` scope, and `/recent` a sign-in of the last 300 s.
    static func app(_ verifier: AccessTokenVerifier) -> some ApplicationProtocol {
        let router = Router(context: LatchResourceRequestContext.self)
        router.get("open") { _, _ in "open" }
        router.group("hello").add(middleware: LatchAccessTokenMiddleware(verifier: verifier))
            .get { _, context in try context.requireLatchAccessToken().subject }
        router.group("orders").add(middleware: LatchAccessTokenMiddleware(verifier: verifier, requiredScopes: ["orders:write"]))
            .get { _, context in try context.requireLatchAccessToken().subject }
        router.group("recent").add(middleware: LatchAccessTokenMiddleware(verifier: verifier))
            .get { _, context -> String in
                let token = try context.requireLatchAccessToken()
                try token.requireRecentAuthentication(maxAge: .seconds(300))
                return token.subject
            }
        return Application(router: router)
    }

    static func json(_ response: TestResponse) -> JSONValue? { try? JSONValue.parse(Array(response.body.readableBytesView)) }

    @Test("401 with the right WWW-Authenticate, 403 for a scope, step-up from a handler, and the token in the context")
    func answers() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let verifier = try makeVerifier(base, clock: clock) { $0.realm = "orders" }
            try await Self.app(verifier).test(.router) { client in
                try await client.execute(uri: "/open", method: .get) { #expect($0.status == .ok) }
                // No token: both schemes offered, no error code in the challenges.
                try await client.execute(uri: "/hello", method: .get) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[values: .wwwAuthenticate] == ["Bearer realm=\"orders\"", "DPoP realm=\"orders\", algs=\"ES256 RS256 ES384\""])
                    #expect(response.headers[.cacheControl] == "no-store")
                    #expect(response.headers[.contentType] == "application/json")
                    #expect(Self.json(response) == ["error": "invalid_token", "error_description": "an access token is required"])
                }
                // A valid token: the handler sees it.
                let raw = try tokens.mint(now: clock.seconds)
                try await client.execute(uri: "/hello", method: .get, headers: [.authorization: "Bearer \(raw)"]) { response in
                    #expect(response.status == .ok)
                    #expect(String(buffer: response.body) == "user-1")
                    #expect(response.headers[.dpopNonceForTests] == nil)
                }
                // Expired.
                let expired = try tokens.mint(now: clock.seconds - 1000)
                try await client.execute(uri: "/hello", method: .get, headers: [.authorization: "Bearer \(expired)"]) { response in
                    #expect(response.status == .unauthorized)
                    #expect(
                        response.headers[values: .wwwAuthenticate]
                            == ["Bearer realm=\"orders\", error=\"invalid_token\", error_description=\"the token has expired\""])
                    #expect(Self.json(response)?["error"] == "invalid_token")
                }
                // A missing scope: 403.
                try await client.execute(uri: "/orders", method: .get, headers: [.authorization: "Bearer \(raw)"]) { response in
                    #expect(response.status == .forbidden)
                    #expect(response.headers[.wwwAuthenticate]?.contains("error=\"insufficient_scope\"") == true)
                    #expect(response.headers[.wwwAuthenticate]?.hasSuffix("scope=\"orders:write\"") == true)
                }
                // Step-up thrown by the handler.
                let old = try tokens.mint(now: clock.seconds, ["auth_time": .int(clock.seconds - 3600)])
                try await client.execute(uri: "/recent", method: .get, headers: [.authorization: "Bearer \(old)"]) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[.wwwAuthenticate]?.hasPrefix("Bearer realm=\"orders\", error=\"insufficient_user_authentication\"") == true)
                    #expect(response.headers[.wwwAuthenticate]?.hasSuffix("max_age=300") == true)
                    #expect(Self.json(response)?["error"] == "insufficient_user_authentication")
                }
                try await client.execute(uri: "/recent", method: .get, headers: [.authorization: "Bearer \(raw)"]) { #expect($0.status == .ok) }
                // Two Authorization headers: 400.
                var twice = HTTPFields()
                twice.append(HTTPField(name: .authorization, value: "Bearer \(raw)"))
                twice.append(HTTPField(name: .authorization, value: "Bearer \(raw)"))
                try await client.execute(uri: "/hello", method: .get, headers: twice) { #expect($0.status == .badRequest) }
            }
        }
    }

    @Test("DPoP through the middleware: the nonce round trip, DPoP-Nonce on success, a bound token as Bearer refused")
    func dpopNonceRoundTrip() async throws {
        try await LatchStandIn.run { standIn, base in
            let clock = TestClock()
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let verifier = try makeVerifier(base, clock: clock) { $0.dpop.nonces = DPoPNonceOptions() }
            let dpopKey = try PrivateKey.generate(.ES256)
            let token = try tokens.bound(to: dpopKey, now: clock.seconds)
            try await Self.app(verifier).test(.router) { client in
                func headers(nonce: String?) throws -> HTTPFields {
                    [.authorization: "DPoP \(token)", .dpopForTests: try proof(dpopKey, token: token, clock: clock, nonce: nonce)]
                }
                let nonce = try await client.execute(uri: "/hello", method: .get, headers: try headers(nonce: nil)) { response -> String? in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[.wwwAuthenticate]?.hasPrefix("DPoP error=\"use_dpop_nonce\"") == true)
                    return response.headers[.dpopNonceForTests]
                }
                let issued = try #require(nonce)
                try await client.execute(uri: "/hello", method: .get, headers: try headers(nonce: issued)) { response in
                    #expect(response.status == .ok)
                    #expect(String(buffer: response.body) == "user-1")
                    #expect(response.headers[.dpopNonceForTests] == issued)
                }
                // The proof of another path.
                let elsewhere: HTTPFields = [
                    .authorization: "DPoP \(token)",
                    .dpopForTests: try proof(dpopKey, token: token, clock: clock, url: "https://api.test/orders", nonce: issued),
                ]
                try await client.execute(uri: "/hello", method: .get, headers: elsewhere) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[.wwwAuthenticate]?.hasPrefix("DPoP error=\"invalid_dpop_proof\"") == true)
                    #expect(response.headers[.dpopNonceForTests] == issued)
                }
                try await client.execute(uri: "/hello", method: .get, headers: [.authorization: "Bearer \(token)"]) { response in
                    #expect(response.status == .unauthorized)
                    #expect(response.headers[.wwwAuthenticate]?.hasPrefix("DPoP error=\"invalid_token\"") == true)
                }
            }
        }
    }
}

extension HTTPField.Name {
    static let dpopForTests = HTTPField.Name("DPoP")!
    static let dpopNonceForTests = HTTPField.Name("DPoP-Nonce")!
}
