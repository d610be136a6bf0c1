import AsyncHTTPClient
import Foundation
import LatchJOSE
import LatchModel
import LatchTesting
import NIOCore
import NIOHTTP1
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `Examples/ResourceServerExample` running as a child process on 127.0.0.1, on a port of its choosing (built by
/// `swift build --build-tests`).
final class ExampleBackend: Sendable {
    let example: ExampleProcess
    var port: Int { example.port }
    var output: String { example.output }

    /// Starts it with `HOST=127.0.0.1`, `PORT=0` and `environment`.
    init(environment: [String: String], output: String) async throws {
        example = try await ExampleProcess(
            "ResourceServerExample", environment: environment.merging(["PORT": "0", "HOST": "127.0.0.1"]) { _, new in new }, output: output)
    }

    /// SIGTERM, then (bounded) SIGKILL: the exit status.
    func stop() async -> Int32? { await example.stop() }

    /// `GET http://127.0.0.1:<port><path>` with `headers`: the status, the headers and the body.
    func get(_ path: String, headers: [(String, String)] = []) async throws -> (status: Int, headers: [String: [String]], body: String) {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 64 * 1024)
        var fields: [String: [String]] = [:]
        for field in response.headers { fields[field.name.lowercased(), default: []].append(field.value) }
        return (Int(response.status.code), fields, String(buffer: body))
    }
}

@Suite("Examples/ResourceServerExample")
struct ExampleBackendTests {
    @Test("The example backend, started as a process, verifies Latch tokens on GET /hello")
    func exampleBackend() async throws {
        try await LatchStandIn.run { standIn, base in
            let tokens = try Tokens.make()
            standIn.publish([tokens.jwk])
            let folder = TemporaryDirectory(prefix: "latch-rs-example")
            defer { folder.remove() }
            let backend = try await ExampleBackend(
                environment: [
                    "LATCH_ISSUER": Tokens.issuer, "LATCH_AUDIENCE": Tokens.audience, "LATCH_JWKS_URL": base + "/.well-known/jwks.json",
                    // As if behind a proxy: clients call https://api.test, the process listens on 127.0.0.1.
                    "EXTERNAL_BASE_URL": Tokens.externalBaseURL, "DPOP_NONCES": "1",
                    // A fresh-clone CI run, with every suite running at once, once took over the default 5 s to answer
                    // the first key-set fetch (the stand-in runs in this busy test process): 503 temporarily_unavailable.
                    "LATCH_JWKS_TIMEOUT": "60",
                ],
                output: folder.path + "/example.log")
            do {
                #expect(try await backend.get("/health").status == 200)
                let now = Int64(Date().timeIntervalSince1970)
                let hello = try await backend.get("/hello", headers: [("Authorization", "Bearer \(try tokens.mint(now: now))")])
                #expect(hello.status == 200, "\(hello.body); the backend's output: \((try? String(contentsOfFile: backend.output, encoding: .utf8)) ?? "")")
                let answer = try JSONValue.parse(Array(hello.body.utf8))
                #expect(answer["subject"] == "user-1" && answer["clientId"] == "app-1" && answer["dpop"] == .bool(false))
                #expect(standIn.fetches == 1)

                let missing = try await backend.get("/hello")
                #expect(missing.status == 401)
                #expect(missing.headers["www-authenticate"]?.first == "Bearer")
                let wrongAudience = try await backend.get(
                    "/hello", headers: [("Authorization", "Bearer \(try tokens.mint(now: now, ["aud": "https://other.test"]))")])
                #expect(wrongAudience.status == 401)
                #expect(wrongAudience.headers["www-authenticate"]?.first?.hasPrefix("Bearer error=\"invalid_token\"") == true)
                let stale = try await backend.get(
                    "/hello/recent", headers: [("Authorization", "Bearer \(try tokens.mint(now: now, ["auth_time": .int(now - 3600)]))")])
                #expect(stale.status == 401)
                #expect(stale.headers["www-authenticate"]?.first?.hasSuffix("max_age=300") == true)

                // A DPoP-bound token: the nonce round trip, then accepted.
                let clock = TestClock(start: Date(timeIntervalSince1970: Double(now)))
                let dpopKey = try PrivateKey.generate(.ES256)
                let bound = try tokens.bound(to: dpopKey, now: now)
                let first = try await backend.get(
                    "/hello", headers: [("Authorization", "DPoP \(bound)"), ("DPoP", try proof(dpopKey, token: bound, clock: clock))])
                #expect(first.status == 401)
                #expect(first.headers["www-authenticate"]?.first?.hasPrefix("DPoP error=\"use_dpop_nonce\"") == true)
                let nonce = try #require(first.headers["dpop-nonce"]?.first)
                let second = try await backend.get(
                    "/hello", headers: [("Authorization", "DPoP \(bound)"), ("DPoP", try proof(dpopKey, token: bound, clock: clock, nonce: nonce))])
                #expect(second.status == 200, "\(second.body)")
                #expect(try JSONValue.parse(Array(second.body.utf8))["dpop"] == .bool(true))
                #expect(second.headers["dpop-nonce"]?.first != nil)
                let asBearer = try await backend.get("/hello", headers: [("Authorization", "Bearer \(bound)")])
                #expect(asBearer.status == 401)
            } catch {
                Issue.record("\(error); the backend's output: \((try? String(contentsOfFile: backend.output, encoding: .utf8)) ?? "")")
            }
            #expect(await backend.stop() != nil)
        }
    }
}
