import Foundation
import HTTPTypes
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
@testable import LatchServer
import Testing

/// `GET /metrics`: the Prometheus exposition of what the deployment answered.
@Suite("Metrics")
struct MetricsTests {
    /// The value of the series `name{labels}` in `text`, or nil.
    static func value(_ text: String, _ series: String) -> Double? {
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    @Test("Requests by route template, method and status with a latency histogram; token answers by grant type and outcome; process gauges; admin token required")
    func exposition() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated(subject: "alice")
            let tokens = try await client.signInFederated(subject: "alice")
            let first = try await client.refresh(tokens.refreshToken)
            #expect(first.status == .ok)
            #expect(try await client.refresh(try first.decode(TokenResponse.self).refreshToken).status == .ok)
            // The first token again, after its successor was used: reuse, the family is revoked.
            #expect(try await client.refresh(tokens.refreshToken).code == "invalid_grant")
            #expect(try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: "not-a-jwt")).status == .badRequest)
            #expect(try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: RegistrationMethod(rawValue: "MADE_UP"), answer: "x")).status == .badRequest)
            #expect(try await client.postForm("/oauth2/token", [("grant_type", "made-up")]).code == "unsupported_grant_type")
            // A device-key sign-in, one by another key (refused by the device-key method) and one that no method takes.
            let deviceKey = try PrivateKey.generate(.ES256)
            _ = try await client.registerWithTestKey(username: "dora", deviceKey: deviceKey)
            #expect(try await client.signInWithKey(username: "dora", deviceKey: deviceKey).status == .ok)
            #expect(try await client.signInWithKey(username: "dora", deviceKey: try PrivateKey.generate(.ES256)).code == "invalid_grant")
            #expect(try await client.token(assertion: "not-a-jwt").code == "invalid_grant")
            _ = try await client.get("/no/such/path")
            _ = try await client.admin(.get, "/admin/v1/users/u-1")
            _ = try await client.admin(.get, "/admin/v1/users/u-2")

            #expect(try await client.get("/metrics").status == .unauthorized)
            let reply = try await client.admin(.get, "/metrics")
            #expect(reply.status == .ok)
            #expect(reply.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
            let text = String(decoding: reply.body, as: UTF8.self)
            #expect(Self.value(text, #"latch_token_requests_total{grant_type="refresh_token",outcome="ok"}"#) == 2, "\(text.prefix(3000))")
            #expect(Self.value(text, #"latch_token_requests_total{grant_type="refresh_token",outcome="reuse_detected"}"#) == 1)
            #expect(Self.value(text, #"latch_registrations_total{proof_type="FSSO",outcome="ok"}"#) == 1)
            #expect(Self.value(text, #"latch_registrations_total{proof_type="FSSO",outcome="invalid_proof"}"#) == 1)
            #expect(Self.value(text, #"latch_registrations_total{proof_type="other",outcome="unsupported_challenge_type"}"#) == 1)
            #expect(!text.contains("MADE_UP"))
            #expect(Self.value(text, #"latch_token_requests_total{grant_type="other",outcome="unsupported_grant_type"}"#) == 1)
            #expect(Self.value(text, #"latch_token_requests_total{grant_type="urn:ietf:params:oauth:grant-type:jwt-bearer",outcome="ok"}"#) == 2)
            // Sign-ins by method: the JWT-bearer grant says which of its methods took the assertion.
            #expect(Self.value(text, #"latch_signins_total{method="federated",outcome="ok"}"#) == 1)
            #expect(Self.value(text, #"latch_signins_total{method="device_key",outcome="ok"}"#) == 1)
            #expect(Self.value(text, #"latch_signins_total{method="device_key",outcome="invalid_grant"}"#) == 1)
            #expect(Self.value(text, #"latch_signins_total{method="jwt_bearer",outcome="invalid_grant"}"#) == 1)
            #expect(!text.contains(#"latch_signins_total{method="refresh"#) && !text.contains(#"method="other""#))
            #expect(Self.value(text, #"latch_http_requests_total{route="/oauth2/token",method="POST",status="200"}"#) == 4)
            #expect(Self.value(text, #"latch_http_requests_total{route="/oauth2/token",method="POST",status="400"}"#) == 4)
            // One series for every user id: the route template, not the path.
            #expect(Self.value(text, #"latch_http_requests_total{route="/admin/v1/users/{id}",method="GET",status="404"}"#) == 2)
            #expect(Self.value(text, #"latch_http_requests_total{route="unmatched",method="GET",status="404"}"#) == 1, "\(text.split(separator: "\n").filter { $0.contains("404") })")
            #expect(!text.contains("u-1") && !text.contains("/no/such/path"))
            #expect(Self.value(text, #"latch_http_request_duration_seconds_count{route="/oauth2/token",method="POST"}"#) == 8)
            #expect(text.contains(#"latch_http_request_duration_seconds_bucket{route="/oauth2/token",method="POST",le="0.0005"}"#))
            #if os(Linux)
            #expect((Self.value(text, "process_resident_memory_bytes") ?? 0) > 1_000_000)
            #expect(Self.value(text, "process_cpu_seconds_total") != nil)
            #endif
            #expect(Self.value(text, "process_start_time_seconds") != nil)
            // The store's commits (SQLite group commits: how many writes each fsync carried).
            #expect((Self.value(text, "latch_store_commit_duration_seconds_count") ?? 0) >= 4)
            #expect((Self.value(text, "latch_store_read_duration_seconds_count") ?? 0) >= 1)
            #expect((Self.value(text, "latch_store_commit_units_sum") ?? 0) >= (Self.value(text, "latch_store_commit_units_count") ?? 1))
            #expect(text.contains(#"latch_store_commit_units_bucket{le="1.0"}"#) || text.contains(#"latch_store_commit_units_bucket{le="1"}"#), "\(text.split(separator: "\n").filter { $0.contains("commit_units") })")
        }
    }

    @Test("Sign-in methods: the JWT-bearer grant's reported method, else the grant's own; refreshes and unknown grants are not sign-ins")
    func signInMethods() {
        let report = SignInReport()
        SignInReport.$current.withValue(report) { SignInReport.record("device_key") }
        #expect(report.method == "device_key")
        SignInReport.record("federated")  // No report bound: nothing recorded anywhere.
        #expect(report.method == "device_key")
        #expect(OAuthController.signInMethod(GrantType.jwtBearer, report) == "device_key")
        #expect(OAuthController.signInMethod(GrantType.jwtBearer, SignInReport()) == "jwt_bearer")
        #expect(OAuthController.signInMethod(GrantType.webauthn, nil) == "webauthn")
        #expect(OAuthController.signInMethod(GrantType.appAttest, nil) == "app_attest")
        #expect(OAuthController.signInMethod(GrantType.issuerLogin, nil) == "issuer_login")
        #expect(OAuthController.signInMethod("authorization_code", nil) == "authorization_code")
        #expect(OAuthController.signInMethod(GrantType.refreshToken, report) == nil)
        #expect(OAuthController.signInMethod("other", nil) == nil)
    }

    @Test(
        "PostgreSQL pool use: the pool's size, connections in use and waiting, and the peak since the last scrape",
        .enabled(if: AdminRoleTests.postgresURL != nil, "LATCH_TEST_POSTGRES_URL is not set"))
    func postgresPool() async throws {
        try await AdminRoleTests.withHarness(.postgres) { harness in
            // Sixteen reads at once on a pool of four.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<16 { group.addTask { _ = try await harness.owner(.get, "/admin/v1/clients") } }
                try await group.waitForAll()
            }
            let text = String(decoding: try await harness.owner(.get, "/metrics").body, as: UTF8.self)
            #expect(Self.value(text, "latch_store_pool_size") == 4, "\(text.split(separator: "\n").filter { $0.contains("pool") })")
            // The scrape's own reads are done: nothing holds a connection while the exposition renders.
            #expect(Self.value(text, #"latch_store_pool_connections{state="in_use"}"#) != nil)
            #expect(Self.value(text, #"latch_store_pool_connections{state="waiting"}"#) == 0)
            #expect((Self.value(text, "latch_store_pool_peak_operations") ?? 0) >= 1)
            #expect(text.contains("# HELP latch_store_pool_peak_operations"))
        }
    }

    @Test("metrics.enabled=false: no /metrics route, nothing counted")
    func disabled() async throws {
        let deployment = try await Deployment.make { $0.metricsEnabled = false }
        #expect(deployment.services.metrics == nil)
        try await deployment.run { client in
            let reply = try await client.admin(.get, "/metrics")
            #expect(reply.status == .notFound)
        }
    }
}
