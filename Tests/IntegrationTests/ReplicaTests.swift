import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// PostgreSQL for these tests: the clusters of scripts/with-postgres.sh (skipped without them).
enum TestPostgres {
    static let adminURL = ProcessInfo.processInfo.environment["LATCH_TEST_POSTGRES_URL"]
    /// A cluster of the outage test's own, which it stops and starts (the shared one must keep serving the others).
    static let outageURL = ProcessInfo.processInfo.environment["LATCH_TEST_OUTAGE_POSTGRES_URL"]
    static let pgctl = ProcessInfo.processInfo.environment["LATCH_TEST_PG_CTL"]
    static var isConfigured: Bool { adminURL != nil }

    /// A new empty database on the shared test cluster (or on `cluster`); its URL.
    static func freshDatabase(on cluster: String? = nil) async throws -> String {
        let admin = try #require(cluster ?? adminURL)
        let name = "latch_it_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        let (status, output) = try await run("/usr/bin/env", ["psql", admin, "-q", "-c", "CREATE DATABASE \(name)"])
        guard status == 0 else { throw ProcessFailure("createdb failed: \(output)") }
        var components = URLComponents(string: admin)!
        components.path = "/" + name
        return components.string!
    }
}

/// Status counts and each worker's last acknowledged token, shared by load tasks.
final class Tally: Sendable {
    let counts = Locked<[Int: Int]>([:])
    let acknowledged = Locked<[Int: String]>([:])
    /// Error codes seen, for races whose losers must all say the same thing.
    let codes = Locked<Set<String>>([])
    func add(_ status: Int) { counts.withLock { $0[status, default: 0] += 1 } }
    subscript(status: Int) -> Int { counts.withLock { $0[status] ?? 0 } }
    var statuses: Set<Int> { counts.withLock { Set($0.keys) } }
}

@Suite("Replicas on PostgreSQL", .serialized, .enabled(if: TestPostgres.isConfigured, "LATCH_TEST_POSTGRES_URL is not set: replica tests skipped"))
struct ReplicaTests {
    static let adminToken = "replica-test-admin-token-0123456"
    static let keyEncryptionKey = Data((0..<32).map { UInt8($0) }).base64EncodedString()

    func replica(_ directory: TemporaryDirectory, _ name: String, database: String, extra: [String: String] = [:]) throws -> LatchServer {
        let server = try LatchServer(
            dataDirectory: directory.path + "/" + name, port: try freePort(),
            environment: [
                "LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH_DATABASE_URL": database, "LATCH_KEYS_ENCRYPTION_KEY": Self.keyEncryptionKey,
                "LATCH_ISSUER": "https://id.replicas.test", "LATCH_LOG_LEVEL": "warning", "LATCH_RATE_LIMIT_PER_MINUTE": "0",
            ].merging(extra) { _, new in new })
        return server
    }

    /// Replicas `a` and `b` of one deployment on a fresh database, both listening (the tests terminate them).
    func startTwoReplicas(_ directory: TemporaryDirectory, extra: [String: String] = [:]) async throws -> (LatchServer, LatchServer) {
        let database = try await TestPostgres.freshDatabase()
        let a = try replica(directory, "a", database: database, extra: extra)
        let b = try replica(directory, "b", database: database, extra: extra)
        try await a.waitUntilListening()
        try await b.waitUntilListening()
        return (a, b)
    }

    static func assertion(subject: String, jti: String = UUID().uuidString) throws -> String {
        try Assertions.federated(issuer: "acme", keyID: "k1", subject: subject, now: Int64(Date().timeIntervalSince1970), jti: jti).sign(with: TestKeys.rsa)
    }

    static func token(_ base: String, _ form: [String: String]) async throws -> (Int, JSONValue) {
        try await http("POST", base + "/oauth2/token", form: form)
    }

    static func signIn(_ base: String, _ subject: String) async throws -> (Int, JSONValue) {
        try await token(base, ["grant_type": GrantType.jwtBearer, "assertion": try assertion(subject: subject)])
    }

    static func setUp(_ base: String, users: [String]) async throws {
        var request = URLRequest(url: URL(string: base + "/admin/v1/issuers")!)
        request.httpMethod = "POST"
        request.setValue("Bearer \(adminToken)", forHTTPHeaderField: "Authorization")
        request.httpBody = try JSONEncoder().encode(AdminSignOnIssuerRequest(name: "acme", keyId: "k1", publicKey: TestKeys.rsa.publicKey.pemRepresentation))
        _ = try await URLSession.shared.data(for: request)
        for user in users {
            var registration = URLRequest(url: URL(string: base + "/v1/registrations")!)
            registration.httpMethod = "POST"
            registration.httpBody = try JSONEncoder().encode(RegistrationRequest(challengeType: .fsso, answer: try assertion(subject: user)))
            let (_, response) = try await URLSession.shared.data(for: registration)
            #expect((response as? HTTPURLResponse)?.statusCode == 201)
        }
    }

    /// The generation a refresh token carries.
    static func generation(_ token: String) -> Int64? {
        let parts = token.dropFirst(4).split(separator: ".")
        return parts.count == 3 ? Int64(parts[1]) : nil
    }

    @Test("Two replicas share users, sessions and revocations; races on one refresh token or one jti keep their invariants")
    func twoReplicas() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (a, b) = try await startTwoReplicas(directory)
        try await Self.setUp(a.base, users: ["alice"] + (0..<10).map { "racer\($0)" })

        // Registered on A, signed in on B, refreshed on A.
        let (signInStatus, onB) = try await Self.signIn(b.base, "alice")
        #expect(signInStatus == 200)
        let (refreshStatus, onA) = try await Self.token(a.base, ["grant_type": "refresh_token", "refresh_token": onB["refresh_token"]!.stringValue!])
        #expect(refreshStatus == 200)
        let access = try #require(onA["access_token"]?.stringValue)
        #expect(try await http("GET", a.base + "/oauth2/userinfo", bearer: access).0 == 200)
        // Global sign-out on B: A refuses the session at once.
        #expect(try await http("POST", b.base + "/v1/me/global-sign-out", bearer: access).0 == 200)
        #expect(try await http("GET", a.base + "/oauth2/userinfo", bearer: access).0 == 401)
        #expect(try await http("GET", b.base + "/oauth2/userinfo", bearer: access).0 == 401)

        // The same refresh token at both replicas at once, 10 families: never two live successors.
        for index in 0..<10 {
            let (_, signedIn) = try await Self.signIn(a.base, "racer\(index)")
            let refreshToken = try #require(signedIn["refresh_token"]?.stringValue)
            async let onA = Self.token(a.base, ["grant_type": "refresh_token", "refresh_token": refreshToken])
            async let onB = Self.token(b.base, ["grant_type": "refresh_token", "refresh_token": refreshToken])
            let answers = try await [onA, onB]
            #expect(answers.allSatisfy { $0.0 == 200 || ($0.0 == 400 && $0.1["error"] == "invalid_grant") }, "\(answers)")
            let issued = answers.compactMap { $0.1["refresh_token"]?.stringValue }.sorted { Self.generation($0)! < Self.generation($1)! }
            #expect(!issued.isEmpty)
            #expect(Set(issued.compactMap(Self.generation)).count == issued.count, "two answers carried the same generation")
            if issued.count == 2 {
                // The older successor is dead: presenting it is reuse (and ends the family, by design).
                let stale = try await Self.token(b.base, ["grant_type": "refresh_token", "refresh_token": issued[0]])
                #expect(stale.0 == 400)
            } else {
                #expect(try await Self.token(b.base, ["grant_type": "refresh_token", "refresh_token": issued[0]]).0 == 200)
            }
        }

        // The same assertion (one jti) at both replicas at once, 10 times: exactly one sign-in.
        for index in 0..<10 {
            let assertion = try Self.assertion(subject: "racer\(index)")
            async let onA = Self.token(a.base, ["grant_type": GrantType.jwtBearer, "assertion": assertion])
            async let onB = Self.token(b.base, ["grant_type": GrantType.jwtBearer, "assertion": assertion])
            let statuses = try await [onA.0, onB.0].sorted()
            #expect(statuses == [200, 400], "jti race \(index): \(statuses)")
        }
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }

    @Test("The audit log on two replicas: sign-ins on both are sealed by their sealers within seconds, once each; with one replica stopped, the other seals alone")
    func auditSealers() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (a, b) = try await startTwoReplicas(directory)
        try await Self.setUp(a.base, users: ["ann", "ben"])
        // Records on the audit page (newest first, sealed or not), waiting (at most 15 s) until every one is sealed.
        func sealedRecords(_ base: String, expecting count: Int) async throws -> [JSONValue] {
            let deadline = Date().addingTimeInterval(15)
            while true {
                let (status, page) = try await http("GET", base + "/admin/v1/audit?limit=500", bearer: Self.adminToken)
                #expect(status == 200)
                let records = page["records"]?.arrayValue ?? []
                if records.count >= count, records.allSatisfy({ $0["position"]?.intValue != nil }) || Date() > deadline { return records }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        for round in 0..<10 {
            #expect(try await Self.signIn(round.isMultiple(of: 2) ? a.base : b.base, round < 5 ? "ann" : "ben").0 == 200)
        }
        // An issuer, two registrations, ten sign-ins: sealed by the background sealers (no verify call seals them).
        let first = try await sealedRecords(b.base, expecting: 13)
        #expect(first.count == 13 && first.allSatisfy { $0["position"]?.intValue != nil && $0["mac"]?.stringValue?.count == 64 })
        #expect(Set(first.compactMap { $0["position"]?.intValue }) == Set((1...13).map { Int64($0) }))
        // A stops; B's sealer carries on alone.
        #expect(try await a.terminate() == 0)
        for _ in 0..<5 { #expect(try await Self.signIn(b.base, "ann").0 == 200) }
        let second = try await sealedRecords(b.base, expecting: 18)
        #expect(second.count == 18 && second.allSatisfy { $0["position"]?.intValue != nil })
        let (status, verified) = try await http("GET", b.base + "/admin/v1/audit/verify", bearer: Self.adminToken)
        #expect(status == 200 && verified["verified"] == .bool(true) && verified["checked"]?.intValue == 18 && verified["unsealed"]?.intValue == 0)
    }

    @Test("PostgreSQL stops mid-load: 503s (never 500, never a hang); it comes back and Latch recovers; nothing acknowledged is lost")
    func databaseOutage() async throws {
        let pgctl = try #require(TestPostgres.pgctl, "LATCH_TEST_PG_CTL is needed to stop and start the cluster")
        let cluster = try #require(TestPostgres.outageURL, "LATCH_TEST_OUTAGE_POSTGRES_URL names the cluster this test may stop")
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let database = try await TestPostgres.freshDatabase(on: cluster)
        // A long grace window: a refresh that committed while its answer was lost (503) can be retried.
        let server = try replica(directory, "a", database: database, extra: ["LATCH_TOKENS_REFRESH_GRACE": "600", "LATCH_DATABASE_TIMEOUT": "1"])
        try await server.waitUntilListening()
        let workers = 4
        try await Self.setUp(server.base, users: (0..<workers).map { "worker\($0)" })

        let tally = Tally()
        let stopAt = Date().addingTimeInterval(1.5)
        let restartAt = Date().addingTimeInterval(4)
        let endAt = Date().addingTimeInterval(6)
        let controller = Task {
            try await Task.sleep(for: .seconds(stopAt.timeIntervalSinceNow))
            _ = try await run(pgctl, ["stop"], timeout: 30)
            try await Task.sleep(for: .seconds(max(0, restartAt.timeIntervalSinceNow)))
            _ = try await run(pgctl, ["start"], timeout: 30)
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var latest: String?
                    var rounds = 0
                    while Date() < endAt, rounds < 2000 {
                        rounds += 1
                        let (status, body): (Int, JSONValue)
                        if let token = latest {
                            (status, body) = try await Self.token(server.base, ["grant_type": "refresh_token", "refresh_token": token])
                        } else {
                            (status, body) = try await Self.signIn(server.base, "worker\(worker)")
                        }
                        tally.add(status)
                        if status == 200, let next = body["refresh_token"]?.stringValue {
                            latest = next
                            tally.acknowledged.withLock { $0[worker] = next }
                        } else if status != 503 {
                            Issue.record("worker \(worker): unexpected \(status) \(body)")
                        } else {
                            try await Task.sleep(for: .milliseconds(50))
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        try await controller.value
        #expect(tally[503] > 0, "the outage was not observed")
        #expect(tally[200] > 0)
        #expect(tally.statuses.isSubset(of: [200, 503]), "\(tally.statuses)")
        #expect(server.process.isRunning, "latch must survive the outage")

        // Recovery without restarting Latch.
        var ready = false
        for _ in 0..<100 where !ready {
            ready = (try? await http("GET", server.base + "/health/ready").0) == 200
            if !ready { try await Task.sleep(for: .milliseconds(200)) }
        }
        #expect(ready, "latch did not recover after PostgreSQL came back")
        // Every worker's last acknowledged refresh token is still good.
        for (worker, token) in tally.acknowledged.withLock({ $0 }) {
            let (status, body) = try await Self.token(server.base, ["grant_type": "refresh_token", "refresh_token": token])
            #expect(status == 200, "worker \(worker): acknowledged token refused after recovery: \(body)")
        }
        #expect(try await server.terminate() == 0)
    }

    @Test("Across two replicas: one registration challenge registers one device; one App Attest counter value signs in once")
    func attestationRaces() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let authority = try TestAttestationAuthority.create(now: Date())
        let rootFile = directory.path + "/root.pem"
        try authority.rootPEM.write(toFile: rootFile, atomically: true, encoding: .utf8)
        let database = try await TestPostgres.freshDatabase()
        let a = try replica(directory, "a", database: database, extra: ["LATCH_ATTESTATION_TEST_ROOT": rootFile])
        try await a.waitUntilListening()
        let b = try replica(directory, "b", database: database, extra: ["LATCH_ATTESTATION_TEST_ROOT": rootFile])
        try await b.waitUntilListening()
        let appID = "ABCDE12345.com.example.race"
        let (patched, _) = try await jsonRequest(
            "PATCH", a.base + "/admin/v1/clients/default", body: AdminClientPatch(ios: AdminIOSEvidence(appIds: [appID])), bearer: Self.adminToken)
        #expect(patched == 200)

        // 1. Ten registrations with one challenge, at once, split across the replicas: one user.
        let key = P256.Signing.PrivateKey()
        let keyID = Data(SHA256.hash(data: key.publicKey.x963Representation)).base64EncodedString()
        let (_, challengeAnswer) = try await jsonRequest(
            "POST", a.base + "/v1/registrations/challenge", body: RegistrationChallengeRequest(challengeType: .appAttest))
        let challenge = try #require(challengeAnswer["challenge"]?.stringValue)
        let attestation = try authority.appAttestAttestation(
            deviceKey: key.publicKey, appID: appID, environment: .production, clientDataHash: Array(SHA256.hash(data: Array(challenge.utf8))),
            now: Date())
        let registrations = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    let request = RegistrationRequest(
                        challengeType: .appAttest, answer: Data(attestation).base64EncodedString(), registrationId: UUID().uuidString,
                        challenge: challenge, keyId: keyID)
                    guard let (status, answer) = try? await jsonRequest("POST", base + "/v1/registrations", body: request) else { return }
                    registrations.add(status)
                    if status == 201 { registrations.acknowledged.withLock { $0[0] = answer["username"]?.stringValue } }
                    if status != 201 { #expect(answer["error"]?.stringValue == "invalid_challenge", "\(answer)") }
                }
            }
        }
        #expect(registrations[201] == 1 && registrations[400] == 9, "\(registrations.counts.withLock { $0 })")
        let username = try #require(registrations.acknowledged.withLock { $0[0] })

        // 2. Ten sign-ins asserting counter 1, each with its own nonce, split across the replicas: one session.
        let signIns = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let (_, nonceAnswer) = try? await jsonRequest("POST", base + "/v1/sign-in/challenge", body: SignInChallengeRequest(username: username)),
                        let nonce = nonceAnswer["nonce"]?.stringValue
                    else { return }
                    let clientData = Array(#"{"challenge":"\#(nonce)"}"#.utf8)
                    guard let assertion = try? TestAttestationAuthority.appAttestAssertion(deviceKey: key, appID: appID, counter: 1, clientData: clientData),
                        let (status, _) = try? await Self.token(
                            base,
                            [
                                "grant_type": GrantType.appAttest, "key_id": keyID, "assertion": Base64URL.encode(Data(assertion)),
                                "client_data": Base64URL.encode(Data(clientData)),
                            ])
                    else { return }
                    signIns.add(status)
                }
            }
        }
        #expect(signIns[200] == 1 && signIns[400] == 9, "\(signIns.counts.withLock { $0 })")
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }
}

/// A JSON request; its status and JSON answer.
func jsonRequest(_ method: String, _ url: String, body: some Encodable, bearer: String? = nil) async throws -> (Int, JSONValue) {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    request.setValue("application/json", forHTTPHeaderField: "Content-Type")
    if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
    request.httpBody = try JSONEncoder().encode(body)
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as! HTTPURLResponse).statusCode, (try? JSONValue.parse(data)) ?? .null)
}
