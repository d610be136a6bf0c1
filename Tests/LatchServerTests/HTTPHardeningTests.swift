import Foundation
import HTTPTypes
import LatchApp
import LatchJOSE
import LatchModel
@testable import LatchServer
import LatchTesting
import Testing

/// What a hostile client tries at the HTTP layer: methods the routes do not answer, forged forwarding headers,
/// guessing admin tokens.
@Suite("HTTP hardening")
struct HTTPHardeningTests {
    @Test("HEAD works wherever GET does (RFC 9110 §9.3.2): same status and content type, no content", arguments: [
        "/.well-known/jwks.json", "/.well-known/openid-configuration", "/.well-known/oauth-authorization-server", "/health/live", "/health/ready",
    ])
    func head(path: String) async throws {
        try await Deployment.make().run { client in
            let get = try await client.get(path)
            let head = try await client.send(.head, path)
            #expect(get.status == .ok && head.status == .ok)
            #expect(head.body.isEmpty)
            #expect(head.headers[.contentType] == get.headers[.contentType])
            #expect(head.headers[.cacheControl] == get.headers[.cacheControl])
        }
    }

    @Test("A known path asked with a method it does not answer — TRACE included — is 405 with Allow; an unknown path stays 404")
    func methodNotAllowed() async throws {
        try await Deployment.make().run { client in
            let trace = try await client.send(.trace, "/health/live")
            #expect(trace.status == .methodNotAllowed && trace.code == "method_not_allowed")
            #expect(trace.headers[.allow] == "GET, HEAD")
            let delete = try await client.send(.delete, "/oauth2/token")
            #expect(delete.status == .methodNotAllowed && delete.headers[.allow] == "POST")
            let user = try await client.send(.put, "/admin/v1/users/some-id")
            #expect(user.status == .methodNotAllowed && user.headers[.allow] == "DELETE, GET, HEAD")
            #expect(try await client.send(.trace, "/nowhere").status == .notFound)
            #expect(try await client.send(.get, "/health/live/extra").status == .notFound)
        }
    }

    /// The token endpoint with the form a refused refresh sends (400 until limited).
    static func refresh(_ client: Client, forwardedFor: [String]) async throws -> Int {
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        for value in forwardedFor { headers.append(HTTPField(name: .init("X-Forwarded-For")!, value: value)) }
        return Int(try await client.send(.post, "/oauth2/token", headers: headers, body: "grant_type=refresh_token&refresh_token=lrt_x").status.code)
    }

    @Test("X-Forwarded-For: the address the trusted proxy appended is the key, not the leftmost one the client writes")
    func forwardedForRightmost() async throws {
        // 12 a minute: bursts of 2.
        try await Deployment.make({ $0.rateLimitPerMinute = 12; $0.trustForwardedFor = true }).run { client in
            var statuses: [Int] = []
            for index in 0..<15 { statuses.append(try await Self.refresh(client, forwardedFor: ["10.9.\(index).1, 203.0.113.7"])) }
            #expect(statuses.prefix(2) == [400, 400] && statuses.dropFirst(2).allSatisfy { $0 == 429 }, "\(statuses)")
            // Several field lines combine in order: the last entry of the last line counts.
            #expect(try await Self.refresh(client, forwardedFor: ["198.51.100.9", "10.1.1.1, 203.0.113.7"]) == 429)
            #expect(try await Self.refresh(client, forwardedFor: ["203.0.113.7", "198.51.100.10"]) == 400)
        }
    }

    @Test("X-Forwarded-For with two trusted hops: the second from the right; too short or junk falls back to the peer")
    func forwardedForHops() async throws {
        try await Deployment.make({ $0.rateLimitPerMinute = 12; $0.trustForwardedFor = true; $0.trustedHops = 2 }).run { client in
            for index in 0..<4 {
                // The client forges the leftmost entries; the outer proxy saw 203.0.113.<index>.
                #expect(try await Self.refresh(client, forwardedFor: ["6.6.6.6, 203.0.113.\(index), 10.0.0.2"]) == 400)
            }
            var peer: [Int] = []
            for value in ["10.0.0.2", "not-an-address, 10.0.0.2", "203.0.113.200 evil, 10.0.0.2"] {
                peer.append(try await Self.refresh(client, forwardedFor: [value]))
            }
            // All three fall back to the one peer address: its burst of 2 is spent by the third.
            #expect(peer == [400, 400, 429], "\(peer)")
        }
        #expect(ForwardedForMiddleware.client(["2001:db8::1, 10.0.0.1"], hops: 2) == "2001:db8::1")
        #expect(ForwardedForMiddleware.client(["unknown"], hops: 1) == nil)
        #expect(ForwardedForMiddleware.client([String(repeating: "1.1.1.1,", count: 2000)], hops: 1) == nil)
    }

    @Test("Failed admin authentication is throttled per address; a valid token from another address is not")
    func adminFailures() async throws {
        // 30 a minute: bursts of 5.
        try await Deployment.make({ $0.trustForwardedFor = true }).run { client in
            func attempt(_ token: String, from address: String) async throws -> Reply {
                try await client.send(.get, "/admin/v1/users", headers: [.authorization: "Bearer \(token)", .init("X-Forwarded-For")!: address])
            }
            var statuses: [Int] = []
            for index in 0..<20 { statuses.append(Int(try await attempt("wrong-token-\(index)-0123456789", from: "203.0.113.7").status.code)) }
            #expect(statuses.prefix(5).allSatisfy { $0 == 401 } && statuses.dropFirst(5).allSatisfy { $0 == 429 }, "\(statuses)")
            let limited = try await attempt(Deployment.adminToken, from: "203.0.113.7")
            #expect(limited.status == .tooManyRequests && limited.code == "rate_limited" && limited.headers[.retryAfter] != nil)
            #expect(try await attempt(Deployment.adminToken, from: "198.51.100.1").status == .ok)
            // The budget refills with time (the deployment's clock).
            client.deployment.clock.advance(by: 12)
            #expect(try await attempt(Deployment.adminToken, from: "203.0.113.7").status == .ok)
            // Successes spend nothing.
            for _ in 0..<10 { #expect(try await attempt(Deployment.adminToken, from: "198.51.100.2").status == .ok) }
        }
    }

    @Test("The sign-in challenge takes the same time for registered and unknown usernames (fastest answers within 1.5× or 100 µs)")
    func challengeTiming() async throws {
        try await Deployment.make({ $0.rateLimitPerMinute = 0 }).run { client in
            _ = try await client.registerWithTestKey(username: "bob", deviceKey: TestKeys.p256)
            let clock = ContinuousClock()
            // Timing noise on a shared machine only adds, so the fastest answers show the work done. Under the whole
            // suite on 2 cores even the 10th percentile once doubled for one side; so up to three measurements, and
            // the difference must show in every one of them to fail (a database write on one path, which the
            // registered path once did, shows in all).
            var verdicts: [String] = []
            var close = false
            for attempt in 0..<3 where !close {
                var known: [Duration] = []
                var unknown: [Duration] = []
                // Bounded: 300 rounds of two requests, interleaved so drift hits both alike.
                for round in 0..<300 {
                    for (username, samples) in [("bob", 0), ("ghost-\(attempt)-\(round)", 1)] {
                        let started = clock.now
                        let reply = try await client.postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: username))
                        let elapsed = clock.now - started
                        #expect(reply.status == .ok)
                        if samples == 0 { known.append(elapsed) } else { unknown.append(elapsed) }
                    }
                }
                // The mean of the fastest 10 %.
                func low(_ values: [Duration]) -> Double {
                    let fastest = values.sorted().prefix(values.count / 10)
                    return fastest.reduce(0) { $0 + Double($1.components.seconds) + Double($1.components.attoseconds) / 1e18 } / Double(fastest.count)
                }
                let registeredTime = low(known)
                let unknownTime = low(unknown)
                verdicts.append("registered \(Int(registeredTime * 1e6)) µs, unknown \(Int(unknownTime * 1e6)) µs")
                // Equal within 1.5×, or within 100 µs (a database write costs more).
                close = (1 / 1.5...1.5).contains(registeredTime / unknownTime) || abs(registeredTime - unknownTime) < 100e-6
            }
            #expect(close, "\(verdicts)")
        }
    }
}
