import ArgumentParser
import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import LatchResourceServer

/// The DPoP scenarios of `latch bench` (issue 18):
///
/// - `refresh-dpop`: the `refresh` scenario with DPoP-bound sessions. One session per connection, opened with a proof
///   of that connection's own P-256 key (so the session is bound to it); every refresh carries a fresh proof of that
///   key (`htm` POST, `htu` the server's issuer + `/oauth2/token`, `iat` now, a unique `jti`) and must answer 200 with
///   `token_type` `DPoP`. The proofs do not depend on the refresh token (no `ath` at the token endpoint), so they are
///   **signed right before the scenario starts**, on every core, with `iat` the time signing began: the load generator
///   spends no CPU on signatures while the clock runs (as in `refresh`), and every proof is at most the signing time +
///   the scenario's duration (≤ 30 s) old when sent, inside the server's 60 s window. Each proof is sent once.
/// - `dpop-verify`: no server. `LatchResourceServer`'s `AccessTokenVerifier.authenticate` in this process, on one
///   thread (one task, calls one after another), over pre-made requests: DPoP-bound access tokens minted like Latch's
///   (`at+jwt`, ES256, Latch's claims with `cnf.jkt`; the JWK Set served by an in-memory fetcher) and a proof of its own
///   per request (unique `jti`, so the replay cache admits each once). Then the same proofs through `DPoP.verify`
///   alone, so that the line after the table shows where the time goes.
final class BenchDPoP: @unchecked Sendable {
    static let scenarios: Set<String> = ["refresh-dpop", "dpop-verify"]
    /// Most proofs signed per scenario at this rate × the duration (and at most `--max-assertions`).
    static let refreshProofsPerSecond = 20_000.0
    static let verifyRequestsPerSecond = 25_000.0
    /// Resource the `dpop-verify` requests name.
    static let resourceBase = "https://api.bench.latch.test"
    static let resourcePath = "/v1/orders"

    /// The server's issuer (from its discovery document): proofs' `htu` is `issuer + /oauth2/token`.
    private(set) var issuer = ""
    /// Per connection: the session's DPoP key and its current refresh token.
    private(set) var keys: [PrivateKey] = []
    private(set) var refreshTokens: [String] = []
    let maxProofs: Int
    /// `DPoP.verify` alone over `dpop-verify`'s proofs, when that scenario ran.
    private(set) var proofOnly: ScenarioResult?

    init(maxProofs: Int) { self.maxProofs = maxProofs }

    var tokenURL: String { issuer + "/oauth2/token" }

    /// Opens one DPoP-bound session per connection (a custom federated sign-in of the connection's user, with a proof).
    func prepare(port: Int, connections: Int, fixture: BenchFixture) throws {
        let connection = try BenchConnection(host: "127.0.0.1", port: port)
        let (discoveryStatus, discovery) = try connection.send("GET", "/.well-known/openid-configuration")
        guard discoveryStatus == 200, let issuer = (try? JSONValue.parse(discovery))?["issuer"]?.stringValue, !issuer.isEmpty else {
            throw ValidationError("setup: no issuer in the discovery document (\(discoveryStatus))")
        }
        self.issuer = issuer
        let now = Int64(Date().timeIntervalSince1970)
        for worker in 0..<connections {
            let key = try PrivateKey.generate(.ES256)
            let assertion = try fixture.assertion(issuer: "bench-es", kid: "es", key: fixture.esIssuerKey, subject: "es-user-\(worker)", now: now)
            let proof = try DPoP.proof(key: key, method: "POST", url: tokenURL, jti: UUID().uuidString, issuedAt: now)
            let (status, body) = try connection.send(
                "POST", "/oauth2/token", headers: BenchFixture.formHeaders + [(DPoP.headerName, proof)],
                body: formBody([("grant_type", GrantType.jwtBearer), ("assertion", assertion)]))
            guard status == 200, BenchFixture.member("token_type", in: body) == "DPoP", let refreshToken = BenchFixture.member("refresh_token", in: body) else {
                throw ValidationError("setup DPoP sign-in failed: \(status) \(String(decoding: body.prefix(200), as: UTF8.self))")
            }
            keys.append(key)
            refreshTokens.append(refreshToken)
        }
    }

    func run(_ name: String, port: Int, duration: Double, connections: Int, server: ServerProcess) -> ScenarioResult {
        name == "refresh-dpop" ? refresh(port: port, duration: duration, connections: connections, server: server) : verify(duration: duration)
    }

    // MARK: refresh-dpop

    func refresh(port: Int, duration: Double, connections: Int, server: ServerProcess) -> ScenarioResult {
        let workers = min(connections, keys.count)
        guard workers > 0 else {
            return ScenarioResult(name: "refresh-dpop", requests: 0, errors: 1, seconds: 0, latencies: [], firstError: "no DPoP sessions were prepared")
        }
        // Fresh proofs, signed now on every core: each worker's own key, one per request it may send.
        let perWorker = max(1, min(maxProofs, Int(duration * Self.refreshProofsPerSecond)) / workers)
        let signingStarted = LoadRunner.now()
        let issuedAt = Int64(Date().timeIntervalSince1970)
        let url = tokenURL
        let keys = keys
        let slots = Slots<[String]>(count: workers, initial: [])
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            slots.set(worker, (0..<perWorker).map { _ in
                (try? DPoP.proof(key: keys[worker], method: "POST", url: url, jti: UUID().uuidString, issuedAt: issuedAt)) ?? ""
            })
        }
        let proofs = slots.values
        let signing = LoadRunner.now() - signingStarted
        // The last proof goes out at most `signing + duration` after its iat: keep that well inside the server's 60 s.
        guard signing + duration < 50 else {
            return ScenarioResult(
                name: "refresh-dpop", requests: 0, errors: 1, seconds: 0, latencies: [],
                firstError: String(format: "signing the proofs took %.1f s: they would be too old by the end", signing))
        }
        let current = Slots<String>(count: workers, initial: "")
        for (index, token) in refreshTokens.prefix(workers).enumerated() { current.set(index, token) }
        let result = LoadRunner.run(
            name: "refresh-dpop", port: port, connections: workers, duration: duration, maximumIterations: perWorker, server: server
        ) { connection, worker, iteration in
            let (status, body) = try connection.send(
                "POST", "/oauth2/token", headers: BenchFixture.formHeaders + [(DPoP.headerName, proofs[worker][iteration])],
                body: formBody([("grant_type", "refresh_token"), ("refresh_token", current.value(worker))]))
            guard status == 200 else { return BenchFixture.ok(status, body) }
            if let next = BenchFixture.member("refresh_token", in: body) { current.set(worker, next) }
            guard BenchFixture.member("token_type", in: body) == "DPoP" else {
                return (1, false, "200 without token_type DPoP: \(String(decoding: body.prefix(200), as: UTF8.self))")
            }
            return (1, true, nil)
        }
        refreshTokens = current.values
        return result
    }

    // MARK: dpop-verify

    /// Serves a fixed JWK Set to the verifier.
    struct InMemoryJWKS: JWKSFetching {
        let body: [UInt8]
        func fetchJWKS(from url: String) async throws -> [UInt8] { body }
    }

    struct JWKSet: Encodable {
        let keys: [JSONWebKey]
    }

    /// Outcome of one timed loop.
    struct Loop: Sendable {
        var latencies: [UInt32] = []
        var errors = 0
        var firstError: String?
        var seconds = 0.0
    }

    func verify(duration: Double) -> ScenarioResult {
        let name = "dpop-verify"
        func failed(_ message: String) -> ScenarioResult {
            ScenarioResult(name: name, requests: 0, errors: 1, seconds: 0, latencies: [], firstError: message)
        }
        let total = max(2, min(maxProofs, Int(duration * Self.verifyRequestsPerSecond)))
        let clients = 32
        let now = Int64(Date().timeIntervalSince1970)
        let url = Self.resourceBase + Self.resourcePath
        let signingKey: PrivateKey
        let clientKeys: [PrivateKey]
        let authorizations: [[String]]
        let tokens: [String]
        let verifier: AccessTokenVerifier
        do {
            signingKey = try PrivateKey.generate(.ES256)
            clientKeys = try (0..<clients).map { _ in try PrivateKey.generate(.ES256) }
            // Latch's access tokens: its claims writer, its signer, `at+jwt`.
            let signer = JWSSigner(key: signingKey, keyID: "bench-at")
            tokens = try clientKeys.enumerated().map { index, key in
                var claims = AccessTokenClaims(
                    issuer: "https://id.bench.latch.test", subject: "bench-user-\(index)", audience: Self.resourceBase, clientID: "default",
                    issuedAt: now, expiresAt: now + 900, jwtID: UUID().uuidString, scope: "openid orders:read", sessionID: UUID().uuidString,
                    authTime: now)
                claims.confirmationKey = key.publicKey.thumbprint
                return try signer.sign(claimsJSON: claims.json, type: "at+jwt")
            }
            authorizations = tokens.map { ["DPoP " + $0] }
            var configuration = ResourceServerConfiguration(issuer: "https://id.bench.latch.test", audience: Self.resourceBase)
            configuration.externalBaseURL = Self.resourceBase
            // Every proof of the run stays live in the cache (120 s): room for all of them, and the warm-up's.
            configuration.dpop.replayCacheCapacity = total + 16
            let jwks = try JSONEncoder().encode(JWKSet(keys: [signingKey.publicKey.jwk(kid: "bench-at")]))
            verifier = try AccessTokenVerifier(configuration: configuration, fetcher: InMemoryJWKS(body: Array(jwks)))
        } catch {
            return failed("setup: \(error)")
        }
        // One proof per request (and one for the warm-up), signed on every core before the clock starts.
        let chunks = ProcessInfo.processInfo.activeProcessorCount * 4
        let slots = Slots<[(request: ResourceRequest, client: Int)]>(count: chunks, initial: [])
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            let range = stride(from: chunk, to: total + 1, by: chunks)
            slots.set(chunk, range.map { index in
                let client = index % clients
                let proof = (try? DPoP.proof(
                    key: clientKeys[client], method: "GET", url: url, accessToken: tokens[client], jti: UUID().uuidString, issuedAt: now)) ?? ""
                return (ResourceRequest(method: "GET", path: Self.resourcePath, authorization: authorizations[client], dpop: [proof]), client)
            })
        }
        var made = slots.values.flatMap { $0 }
        let warmUp = made.removeLast().request
        let requests = made.map(\.request)
        // Whose token each request carries (the proof-only loop checks `ath` against it).
        let owners = made.map(\.client)
        let deadline = duration
        // One task: every call after the previous one, so one thread works at a time.
        let loops: [Loop]
        do {
            loops = try Bench.blocking {
                // The first call fetches the JWK Set; not timed.
                _ = try? await verifier.authenticate(warmUp)
                var loop = Loop()
                loop.latencies.reserveCapacity(requests.count)
                let started = LoadRunner.now()
                for request in requests {
                    let begin = LoadRunner.now()
                    if begin - started >= deadline { break }
                    do {
                        let token = try await verifier.authenticate(request)
                        if token.jkt == nil {
                            loop.errors += 1
                            loop.firstError = loop.firstError ?? "the token was accepted without its binding"
                        }
                    } catch {
                        loop.errors += 1
                        loop.firstError = loop.firstError ?? "\(error)"
                    }
                    loop.latencies.append(UInt32(min((LoadRunner.now() - begin) * 1_000_000, Double(UInt32.max))))
                }
                loop.seconds = LoadRunner.now() - started
                // The proof alone: the same proofs, the same expectations, no token and no replay cache (a few seconds).
                let proofSeconds = min(deadline, 3)
                var proofLoop = Loop()
                proofLoop.latencies.reserveCapacity(requests.count)
                let proofStarted = LoadRunner.now()
                for (index, request) in requests.enumerated() {
                    let begin = LoadRunner.now()
                    if begin - proofStarted >= proofSeconds { break }
                    let expected = DPoP.Expectations(
                        method: request.method, url: url, accessToken: tokens[owners[index]], now: Int64(Date().timeIntervalSince1970))
                    do {
                        _ = try DPoP.verify(request.dpop[0], expected)
                    } catch {
                        proofLoop.errors += 1
                        proofLoop.firstError = proofLoop.firstError ?? "\(error)"
                    }
                    proofLoop.latencies.append(UInt32(min((LoadRunner.now() - begin) * 1_000_000, Double(UInt32.max))))
                }
                proofLoop.seconds = LoadRunner.now() - proofStarted
                return [loop, proofLoop]
            }
        } catch {
            return failed("\(error)")
        }
        proofOnly = ScenarioResult(
            name: "DPoP.verify", requests: loops[1].latencies.count, errors: loops[1].errors, seconds: loops[1].seconds,
            latencies: loops[1].latencies.sorted(), firstError: loops[1].firstError)
        return ScenarioResult(
            name: name, requests: loops[0].latencies.count, errors: loops[0].errors, seconds: loops[0].seconds,
            latencies: loops[0].latencies.sorted(), firstError: loops[0].firstError)
    }

    // MARK: Summary

    /// Lines after the table: refresh with DPoP against refresh of the same run, and where `dpop-verify`'s time goes.
    func summary(_ results: [ScenarioResult], crypto: CryptoCeiling) -> [String] {
        func rate(_ result: ScenarioResult) -> Double { Double(result.latencies.count) / max(result.seconds, 0.001) }
        var lines: [String] = []
        if let plain = results.first(where: { $0.name == "refresh" }), let bound = results.first(where: { $0.name == "refresh-dpop" }),
            !plain.latencies.isEmpty
        {
            lines.append(String(
                format: "refresh with DPoP: %.0f/s = %.0f %% of refresh (target ≥ 70 %%); proofs signed before the scenario, on every core "
                    + "(the load generator signs nothing while the clock runs)",
                rate(bound), 100 * rate(bound) / rate(plain)))
        }
        if let full = results.first(where: { $0.name == "dpop-verify" }), let proofOnly, !full.latencies.isEmpty, !proofOnly.latencies.isEmpty {
            let fullMicros = 1e6 / rate(full), proofMicros = 1e6 / rate(proofOnly)
            lines.append(String(
                format: "dpop-verify, one thread: AccessTokenVerifier.authenticate %.0f/s (%.1f µs each, p50 %.3f ms, p99 %.3f ms; target ≥ 15,000/s); "
                    + "DPoP.verify alone %.0f/s (%.1f µs, p50 %.3f ms, p99 %.3f ms, %d errors); the rest — the token's JWS and claims, the key "
                    + "lookup, the replay cache — %.1f µs; one ES256 verify %.1f µs",
                rate(full), fullMicros, full.percentile(0.5), full.percentile(0.99), rate(proofOnly), proofMicros, proofOnly.percentile(0.5),
                proofOnly.percentile(0.99), proofOnly.errors, fullMicros - proofMicros, 1e6 / max(crypto.es256Verify, 1)))
            if let error = proofOnly.firstError { lines.append("    DPoP.verify alone, first error: \(error.prefix(200))") }
        }
        return lines
    }
}
