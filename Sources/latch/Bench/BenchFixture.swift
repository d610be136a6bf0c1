import ArgumentParser
import Foundation
import LatchJOSE
import LatchModel

/// The data a benchmark run needs, made through the public API before measuring: issuers, users, device keys,
/// pre-signed assertions and one signed-in session per connection.
final class BenchFixture: @unchecked Sendable {
    let port: Int
    let esIssuerKey = try! PrivateKey.generate(.ES256)
    let rsIssuerKey = try! PrivateKey.generate(.RS256)
    let deviceKey = try! PrivateKey.generate(.ES256)
    /// Pre-built token-request bodies carrying pre-signed assertions, one array per connection.
    var esAssertions: [[[UInt8]]] = []
    var rsAssertions: [[[UInt8]]] = []
    /// Per connection: a session's tokens (refresh token is replaced as it rotates).
    var refreshTokens: [String] = []
    var accessTokens: [String] = []
    /// The attestation scenarios' material (set after preparation).
    var attestation: BenchAttestation?
    /// The FIDO scenarios' material.
    var fido: BenchFido?
    /// The out-of-band scenarios' users (set after preparation).
    var oob: BenchOutOfBand?
    /// The issuer-login scenarios' tokens.
    var issuerLogin: BenchIssuerLogin?
    /// The custom-registration scenarios' hooks and providers.
    var customRegistration: BenchCustomRegistration?
    /// The DPoP scenarios' sessions, keys and proofs.
    var dpop: BenchDPoP?

    init(port: Int) { self.port = port }

    static func prepare(port: Int, adminToken: String, connections: Int, scenarios: [String], maxAssertions: Int, duration: Double) throws -> BenchFixture {
        let fixture = BenchFixture(port: port)
        let admin = try BenchConnection(host: "127.0.0.1", port: port)
        func post(_ path: String, _ value: some Encodable, bearer: String? = adminToken) throws -> [UInt8] {
            var headers = [("Content-Type", "application/json")]
            if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
            let (status, body) = try admin.send("POST", path, headers: headers, body: Array(try JSONEncoder().encode(value)))
            guard (200..<300).contains(status) else {
                throw ValidationError("setup \(path) failed: \(status) \(String(decoding: body, as: UTF8.self))")
            }
            return body
        }
        _ = try post("/admin/v1/issuers", AdminSignOnIssuerRequest(name: "bench-es", keyId: "es", publicKey: fixture.esIssuerKey.publicKey.pemRepresentation))
        _ = try post("/admin/v1/issuers", AdminSignOnIssuerRequest(name: "bench-rs", keyId: "rs", publicKey: fixture.rsIssuerKey.publicKey.pemRepresentation))
        let now = Int64(Date().timeIntervalSince1970)
        // One federated user per connection and issuer.
        for worker in 0..<connections {
            for (issuer, kid, key, prefix) in [("bench-es", "es", fixture.esIssuerKey, "es"), ("bench-rs", "rs", fixture.rsIssuerKey, "rs")] {
                let answer = try fixture.assertion(issuer: issuer, kid: kid, key: key, subject: "\(prefix)-user-\(worker)", now: now)
                _ = try post("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: answer), bearer: nil)
            }
        }
        if scenarios.contains("key-sign-in") {
            let created = try JSONDecoder().decode(AdminTestKeyCreated.self, from: Data(try post("/admin/v1/test-keys", AdminTestKeyRequest(algorithm: "ES256"))))
            let testKey = try PrivateKey(pem: created.privateKey)
            for worker in 0..<connections {
                let answer = try JWSSigner(key: testKey, keyID: created.keyId).sign(claims: [
                    "iss": "testRegisterIssuer", "aud": "testRegisterAudience", "sub": .string("device-user-\(worker)"),
                    "jti": .string(UUID().uuidString), "iat": .int(now), "exp": .int(now + 600),
                ])
                _ = try post(
                    "/v1/registrations",
                    RegistrationRequest(challengeType: .test, answer: answer, publicKey: RegistrationPublicKey(keyId: "bench", algorithm: "ES256", publicKey: fixture.deviceKey.publicKey.pemRepresentation)),
                    bearer: nil)
            }
        }
        // Pre-signed assertions, split across connections; signing runs on every core before the clock starts.
        func presign(_ issuer: String, _ kid: String, _ key: PrivateKey, _ prefix: String, total: Int) -> [[[UInt8]]] {
            let perWorker = max(1, total / connections)
            let slots = Slots<[[UInt8]]>(count: connections, initial: [])
            DispatchQueue.concurrentPerform(iterations: connections) { worker in
                slots.set(worker, (0..<perWorker).map { _ in
                    let assertion = (try? fixture.assertion(issuer: issuer, kid: kid, key: key, subject: "\(prefix)-user-\(worker)", now: now, lifetime: 3600)) ?? ""
                    return formBody([("grant_type", GrantType.jwtBearer), ("assertion", assertion)])
                })
            }
            return slots.values
        }
        if scenarios.contains("fsso-es256") {
            fixture.esAssertions = presign("bench-es", "es", fixture.esIssuerKey, "es", total: min(maxAssertions, Int(duration * 20_000)))
        }
        if scenarios.contains("fsso-rs256") {
            fixture.rsAssertions = presign("bench-rs", "rs", fixture.rsIssuerKey, "rs", total: min(maxAssertions / 8, Int(duration * 4_000)))
        }
        // One session per connection for refresh and userinfo.
        for worker in 0..<connections {
            let assertion = try fixture.assertion(issuer: "bench-es", kid: "es", key: fixture.esIssuerKey, subject: "es-user-\(worker)", now: now)
            let (status, body) = try admin.send(
                "POST", "/oauth2/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: formBody([("grant_type", GrantType.jwtBearer), ("assertion", assertion)]))
            guard status == 200, let tokens = try? JSONDecoder().decode(TokenResponse.self, from: Data(body)) else {
                throw ValidationError("setup sign-in failed: \(status)")
            }
            fixture.refreshTokens.append(tokens.refreshToken)
            fixture.accessTokens.append(tokens.accessToken)
        }
        return fixture
    }

    func assertion(issuer: String, kid: String, key: PrivateKey, subject: String, now: Int64, lifetime: Int64 = 300) throws -> String {
        try JWSSigner(key: key, keyID: kid).sign(claims: [
            "iss": .string(issuer), "sub": .string(subject), "aud": "identity-service", "jti": .string(UUID().uuidString),
            "iat": .int(now), "exp": .int(now + lifetime),
        ])
    }

    static let formHeaders = [("Content-Type", "application/x-www-form-urlencoded")]

    /// The value of a string member in a small JSON answer, without decoding the whole document.
    static func member(_ name: String, in body: [UInt8]) -> String? {
        let key = Array("\"\(name)\":\"".utf8)
        guard let range = body.firstRange(of: key) else { return nil }
        let start = range.upperBound
        guard let end = body[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return String(decoding: body[start..<end], as: UTF8.self)
    }

    /// One request's outcome: success is a 200.
    static func ok(_ status: Int, _ body: [UInt8]) -> (Int, Bool, String?) {
        (1, status == 200, status == 200 ? nil : "\(status) \(String(decoding: body.prefix(200), as: UTF8.self))")
    }

    func run(_ name: String, duration: Double, connections: Int, server: ServerProcess) -> ScenarioResult {
        let fixture = self
        switch name {
        case "jwks", "discovery":
            let path = name == "jwks" ? "/.well-known/jwks.json" : "/.well-known/openid-configuration"
            return LoadRunner.run(name: name, port: port, connections: connections, duration: duration, server: server) { connection, _, _ in
                let (status, body) = try connection.send("GET", path)
                return Self.ok(status, body)
            }
        case "fsso-es256", "fsso-rs256":
            let pool = name == "fsso-es256" ? esAssertions : rsAssertions
            return LoadRunner.run(
                name: name, port: port, connections: connections, duration: duration, maximumIterations: pool.first?.count ?? 0, server: server
            ) { connection, worker, iteration in
                let (status, body) = try connection.send("POST", "/oauth2/token", headers: Self.formHeaders, body: pool[worker][iteration])
                return Self.ok(status, body)
            }
        case "key-sign-in":
            return LoadRunner.run(name: name, port: port, connections: connections, duration: duration, server: server) { connection, worker, _ in
                let username = "device-user-\(worker)"
                let (status, body) = try connection.send(
                    "POST", "/v1/sign-in/challenge", headers: [("Content-Type", "application/json")], body: Array(#"{"username":"\#(username)"}"#.utf8))
                guard status == 200, let nonce = Self.member("nonce", in: body) else { return (1, false, "challenge \(status)") }
                let now = Int64(Date().timeIntervalSince1970)
                let assertion = try JWSSigner(key: fixture.deviceKey, keyID: "bench").sign(claims: [
                    "iss": .string(username), "sub": .string(username), "aud": "identity-service", "jti": .string(nonce),
                    "iat": .int(now), "exp": .int(now + 300),
                ])
                let (tokenStatus, tokenBody) = try connection.send(
                    "POST", "/oauth2/token", headers: Self.formHeaders, body: formBody([("grant_type", GrantType.jwtBearer), ("assertion", assertion)]))
                let result = Self.ok(tokenStatus, tokenBody)
                return (2, result.1, result.2)
            }
        case "refresh", "refresh@1000":
            let current = Slots<String>(count: connections, initial: "")
            for (index, token) in refreshTokens.prefix(connections).enumerated() { current.set(index, token) }
            let result = LoadRunner.run(
                name: name, port: port, connections: connections, duration: duration, rate: name == "refresh@1000" ? 1000 : nil, server: server
            ) { connection, worker, _ in
                let token = current.value(worker)
                let (status, body) = try connection.send(
                    "POST", "/oauth2/token", headers: Self.formHeaders, body: formBody([("grant_type", "refresh_token"), ("refresh_token", token)]))
                if status == 200, let next = Self.member("refresh_token", in: body) { current.set(worker, next) }
                return Self.ok(status, body)
            }
            refreshTokens = current.values
            return result
        case "userinfo":
            let tokens = accessTokens
            return LoadRunner.run(name: name, port: port, connections: connections, duration: duration, server: server) { connection, worker, _ in
                let (status, body) = try connection.send("GET", "/oauth2/userinfo", headers: [("Authorization", "Bearer \(tokens[worker])")])
                return Self.ok(status, body)
            }
        default:
            if let fido, BenchFido.scenarios.contains(name) {
                return fido.run(name, port: port, duration: duration, connections: connections, server: server)
            }
            if let issuerLogin, BenchIssuerLogin.scenarios.contains(name) {
                return issuerLogin.run(name, port: port, duration: duration, connections: connections, server: server)
            }
            if let customRegistration, BenchCustomRegistration.scenarios.contains(name) {
                return customRegistration.run(name, port: port, duration: duration, connections: connections, server: server)
            }
            if let dpop, BenchDPoP.scenarios.contains(name) {
                return dpop.run(name, port: port, duration: duration, connections: connections, server: server)
            }
            if let oob, BenchOutOfBand.scenarios.contains(name) {
                return oob.run(name, port: port, duration: duration, connections: connections, server: server)
            }
            if let attestation, BenchAttestation.scenarios.contains(name) {
                return attestation.run(name, port: port, duration: duration, connections: connections, server: server)
            }
            return ScenarioResult(name: name, requests: 0, errors: 1, seconds: 0, latencies: [], firstError: "unknown scenario")
        }
    }
}
