import ArgumentParser
import Foundation
import LatchJOSE
import LatchModel

/// The issuer-login scenarios of `latch bench`: `issuer-login-1` — a login with one ES256 issuer token — and
/// `issuer-login-3` — one login with three tokens of three issuers (one request each). Tokens are signed before the
/// clock starts, on every core; each connection logs in its own consumers (their principal exists after the first).
final class BenchIssuerLogin: @unchecked Sendable {
    static let scenarios: Set<String> = ["issuer-login-1", "issuer-login-3"]
    static let issuers = ["bench-bank", "bench-card", "bench-wallet"]

    let adminToken: String
    let keys: [PrivateKey]
    /// Per scenario, per connection: pre-built request bodies.
    var bodies: [String: [[[UInt8]]]] = [:]

    init(adminToken: String) throws {
        self.adminToken = adminToken
        keys = try Self.issuers.map { _ in try PrivateKey.generate(.ES256) }
    }

    func audience(_ issuer: String) -> String { "https://bench.latch.test/" + issuer }

    func prepare(port: Int, connections: Int, scenarios: [String], duration: Double, maxTokens: Int) throws {
        let connection = try BenchConnection(host: "127.0.0.1", port: port)
        let headers = [("Content-Type", "application/json"), ("Authorization", "Bearer \(adminToken)")]
        for (index, issuer) in Self.issuers.enumerated() {
            let request = AdminLoginIssuerRequest(
                issuerId: issuer, audience: audience(issuer),
                keys: [LoginIssuerKey(kid: "k", algorithm: "ES256", publicKey: keys[index].publicKey.pemRepresentation)])
            let (status, body) = try connection.send("POST", "/admin/v1/login-issuers", headers: headers, body: Array(try JSONEncoder().encode(request)))
            guard status == 201 else { throw ValidationError("setup login issuer failed: \(status) \(String(decoding: body.prefix(200), as: UTF8.self))") }
        }
        let now = Int64(Date().timeIntervalSince1970)
        for scenario in scenarios where Self.scenarios.contains(scenario) {
            let tokensPerLogin = scenario == "issuer-login-1" ? 1 : 3
            let logins = min(maxTokens / tokensPerLogin, Int(duration * (tokensPerLogin == 1 ? 12_000 : 6_000)))
            let perWorker = max(1, logins / connections)
            let slots = Slots<[[UInt8]]>(count: connections, initial: [])
            DispatchQueue.concurrentPerform(iterations: connections) { worker in
                slots.set(worker, (0..<perWorker).map { _ in
                    var form = [("grant_type", GrantType.issuerLogin)]
                    for index in 0..<tokensPerLogin {
                        form.append(("issuer_token", self.token(index, consumer: "\(scenario)-c\(worker)", now: now)))
                    }
                    return formBody(form)
                })
            }
            bodies[scenario] = slots.values
        }
    }

    func token(_ index: Int, consumer: String, now: Int64) -> String {
        let issuer = Self.issuers[index]
        return (try? JWSSigner(key: keys[index], keyID: "k").sign(claims: [
            "iss": .string(issuer), "sub": .string(consumer), "aud": .string(audience(issuer)), "jti": .string(UUID().uuidString),
            "iat": .int(now), "exp": .int(now + 300),
        ])) ?? ""
    }

    func run(_ name: String, port: Int, duration: Double, connections: Int, server: ServerProcess) -> ScenarioResult {
        let pool = bodies[name] ?? []
        return LoadRunner.run(
            name: name, port: port, connections: connections, duration: duration, maximumIterations: pool.first?.count ?? 0, server: server
        ) { connection, worker, iteration in
            let (status, body) = try connection.send("POST", "/oauth2/token", headers: BenchFixture.formHeaders, body: pool[worker][iteration])
            return BenchFixture.ok(status, body)
        }
    }
}
