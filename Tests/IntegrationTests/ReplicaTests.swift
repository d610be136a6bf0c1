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
        request.httpBody = try JSONEncoder().encode(AdminIssuerRequest(name: "acme", keyId: "k1", publicKey: TestKeys.rsa.publicKey.pemRepresentation))
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
        let database = try await TestPostgres.freshDatabase()
        let a = try replica(directory, "a", database: database)
        let b = try replica(directory, "b", database: database)
        try await a.waitUntilListening()
        try await b.waitUntilListening()
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
        let database = try await TestPostgres.freshDatabase()
        let a = try replica(directory, "a", database: database)
        let b = try replica(directory, "b", database: database)
        try await a.waitUntilListening()
        try await b.waitUntilListening()
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

extension ReplicaTests {
    @Test("Across two replicas: one FIDO ceremony signs in once; a stranger's assertions (no or a forged PIN binding) count nothing; ten wrong PINs at once count to exactly the lockout; one sign-up ceremony creates one user; one out-of-band token is redeemed once")
    func fidoRaces() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let database = try await TestPostgres.freshDatabase()
        let fido = ["LATCH_FIDO_PIN_COOL_DOWNS": "0"]
        let a = try replica(directory, "a", database: database, extra: fido)
        let b = try replica(directory, "b", database: database, extra: fido)
        try await a.waitUntilListening()
        try await b.waitUntilListening()
        try await Self.setUp(a.base, users: ["fido"])
        let (_, signedIn) = try await Self.signIn(b.base, "fido")
        let access = try #require(signedIn["access_token"]?.stringValue)
        let (_, me) = try await http("GET", a.base + "/oauth2/userinfo", bearer: access)
        let userID = try #require(me["sub"]?.stringValue)
        let userHandle = Base64URL.encode(Data(userID.utf8))
        // The relying party is the issuer's host (https://id.replicas.test).
        let authenticator = TestWebAuthnAuthenticator(
            rpID: "id.replicas.test", origin: "https://id.replicas.test", aaguid: LatchAuthenticatorModel.pin.aaguid)
        // Bound to its device, as the SDK registers it: only its own wrong PINs count (docs/fido.md, "PIN binding").
        authenticator.bindingKey = P256.Signing.PrivateKey()
        let (_, options) = try await jsonRequest("POST", a.base + "/v1/fido/registration/options", body: [String: String](), bearer: access)
        let challenge = try #require(options["publicKey"]?["challenge"]?.stringValue)
        let (registered, _) = try await jsonRequest(
            "POST", b.base + "/v1/fido/registration",
            body: JSONValue.object(["ceremonyId": options["ceremonyId"] ?? .null, "credential": authenticator.register(challenge: challenge)]),
            bearer: access)
        #expect(registered == 201)

        // 1. One ceremony, one assertion, ten token requests at once split across the replicas: one session.
        let (_, signInOptions) = try await jsonRequest("POST", b.base + "/v1/fido/authentication/options", body: [String: String]())
        let ceremony = try #require(signInOptions["ceremonyId"]?.stringValue)
        let credential = try authenticator.assert(
            challenge: try #require(signInOptions["publicKey"]?["challenge"]?.stringValue), userHandle: userHandle, counter: 0)
        let signIns = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let (status, _) = try? await Self.token(
                        base, ["grant_type": GrantType.webauthn, "ceremony_id": ceremony, "credential": credential])
                    else { return }
                    signIns.add(status)
                }
            }
        }
        #expect(signIns[200] == 1 && signIns[400] == 9, "\(signIns.counts.withLock { $0 })")
        // The nine refused were the right PIN: no try is spent on them, whatever the interleaving.
        let (_, afterRace) = try await jsonRequest(
            "POST", a.base + "/v1/fido/authenticators/status", body: FidoStatusRequest(credentialId: authenticator.credentialIDString))
        #expect(afterRace["remainingTries"]?.intValue == 5, "\(afterRace)")

        // 2a. A stranger (random keys, UV set, no binding or a forged one) sends maxAttempts + 2 assertions across the
        // replicas: each refused for its binding, none counted.
        authenticator.signWith = P256.Signing.PrivateKey()
        for attempt in 0..<7 {
            let base = attempt.isMultiple(of: 2) ? a.base : b.base
            authenticator.omitBinding = attempt.isMultiple(of: 2)
            authenticator.bindWith = P256.Signing.PrivateKey()
            let (_, options) = try await jsonRequest("POST", base + "/v1/fido/authentication/options", body: [String: String]())
            let forged = try authenticator.assert(
                challenge: try #require(options["publicKey"]?["challenge"]?.stringValue), userHandle: userHandle, counter: 0)
            let (status, answer) = try await Self.token(
                base, ["grant_type": GrantType.webauthn, "ceremony_id": options["ceremonyId"]?.stringValue ?? "", "credential": forged])
            #expect(status == 400 && answer["reason"] == "pin_binding_invalid" && answer["pinStatus"] == nil, "\(answer)")
        }
        authenticator.omitBinding = false
        authenticator.bindWith = nil
        let (_, afterStranger) = try await jsonRequest(
            "POST", b.base + "/v1/fido/authenticators/status", body: FidoStatusRequest(credentialId: authenticator.credentialIDString))
        #expect(afterStranger == ["state": "unlocked", "remainingTries": 5, "coolDown": 0, "bound": true])

        // 2. Ten wrong PINs at once from the device across the replicas: five are counted (tries 4, 3, 2, 1, then
        // locked), the rest find it locked; never more, never fewer.
        let remaining = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let (_, options) = try? await jsonRequest("POST", base + "/v1/fido/authentication/options", body: [String: String]()),
                        let ceremony = options["ceremonyId"]?.stringValue, let challenge = options["publicKey"]?["challenge"]?.stringValue,
                        let credential = try? authenticator.assert(challenge: challenge, userHandle: userHandle, counter: 0),
                        let (status, answer) = try? await Self.token(
                            base, ["grant_type": GrantType.webauthn, "ceremony_id": ceremony, "credential": credential])
                    else { return }
                    #expect(status == 400 && answer["error"] == "invalid_grant", "\(answer)")
                    if case .int(let tries)? = answer["pinStatus"]?["remainingTries"] { remaining.add(Int(tries)) }
                }
            }
        }
        let counted = remaining.counts.withLock { $0 }
        #expect(counted == [4: 1, 3: 1, 2: 1, 1: 1, 0: 6], "\(counted)")
        let (_, status) = try await jsonRequest(
            "POST", a.base + "/v1/fido/authenticators/status", body: FidoStatusRequest(credentialId: authenticator.credentialIDString))
        #expect(status == ["state": "lockedOut", "remainingTries": 0, "coolDown": 0, "bound": true])

        // 3. One passwordless sign-up ceremony completed ten times at once (each with its own registrationId) across
        // the replicas: one user is created, the others are refused.
        let (_, signUp) = try await jsonRequest("POST", a.base + "/v1/fido/sign-up/options", body: ["username": "racer"])
        let newcomer = TestWebAuthnAuthenticator(rpID: "id.replicas.test", origin: "https://id.replicas.test")
        let answer: JSONValue = .object([
            "ceremonyId": signUp["ceremonyId"] ?? .null,
            "credential": newcomer.register(challenge: try #require(signUp["publicKey"]?["challenge"]?.stringValue)),
        ])
        let answerText = String(decoding: answer.serialized(), as: UTF8.self)
        let signUps = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    let request = RegistrationRequest(challengeType: .webauthn, answer: answerText, registrationId: "race-\(worker)")
                    guard let (status, _) = try? await jsonRequest("POST", base + "/v1/registrations", body: request) else { return }
                    signUps.add(status)
                }
            }
        }
        #expect(signUps[201] == 1 && signUps[409] == 9, "\(signUps.counts.withLock { $0 })")

        // 4. One out-of-band token redeemed ten times at once across the replicas: one ceremony; the others are told
        // the token was redeemed.
        var enrollRequest = URLRequest(url: URL(string: a.base + "/admin/v1/users/oob-racer/enrollments")!)
        enrollRequest.httpMethod = "POST"
        enrollRequest.setValue("Bearer \(Self.adminToken)", forHTTPHeaderField: "Authorization")
        enrollRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
        enrollRequest.httpBody = Data(#"{"createUser": true}"#.utf8)
        let (enrolled, _) = try await URLSession.shared.data(for: enrollRequest)
        let link = try #require((try JSONValue.parse(enrolled))["enrollment"]?["appLinkUri"]?.stringValue)
        let payload = try OutOfBandPayload(decoding: link)
        let redeems = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let (status, answer) = try? await jsonRequest(
                        "POST", base + "/v1/oob/redeem/registration", body: OutOfBandRedeemRequest(token: payload.data.token))
                    else { return }
                    redeems.add(status)
                    if let code = answer["error"]?.stringValue { redeems.codes.withLock { _ = $0.insert(code) } }
                }
            }
        }
        #expect(redeems[200] == 1 && redeems[400] == 9, "\(redeems.counts.withLock { $0 })")
        #expect(redeems.codes.withLock { $0 } == ["oob_token_redeemed"])
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }
}

extension ReplicaTests {
    @Test("Issuer login on two replicas: one token raced ten times logs in once; first logins of one consumer make one principal; logout-all is seen at once")
    func issuerLoginRaces() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let database = try await TestPostgres.freshDatabase()
        let a = try replica(directory, "a", database: database)
        let b = try replica(directory, "b", database: database)
        try await a.waitUntilListening()
        try await b.waitUntilListening()
        let key = try PrivateKey.generate(.ES256)
        let audience = "https://id.replicas.test/bank"
        let (created, _) = try await jsonRequest(
            "POST", a.base + "/admin/v1/login-issuers",
            body: AdminLoginIssuerRequest(
                issuerId: "bank", audience: audience, keys: [LoginIssuerKey(kid: "b1", algorithm: "ES256", publicKey: key.publicKey.pemRepresentation)]),
            bearer: Self.adminToken)
        #expect(created == 201)
        func issuerToken(_ consumer: String) throws -> String {
            try Assertions.issuerToken(issuer: "bank", keyID: "b1", consumers: [consumer], audience: audience, now: Int64(Date().timeIntervalSince1970))
                .sign(with: key)
        }
        // Replica b learns of the new issuer on its first unknown-issuer lookup.
        // 1. One token, ten logins at once across the replicas: one session.
        let token = try issuerToken("c-race")
        let logins = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let (status, answer) = try? await Self.token(base, ["grant_type": GrantType.issuerLogin, "issuer_token": token]) else { return }
                    logins.add(status)
                    if let code = answer["error"]?.stringValue { logins.codes.withLock { _ = $0.insert(code) } }
                }
            }
        }
        #expect(logins[200] == 1 && logins[400] == 9, "\(logins.counts.withLock { $0 })")
        #expect(logins.codes.withLock { $0 } == ["invalid_grant"])

        // 2. Ten different tokens for one new consumer at once: ten sessions, one principal.
        final class Logins: Sendable {
            let subjects = Locked<Set<String>>([])
            let accessTokens = Locked<[String]>([])
        }
        let seen = Logins()
        let firsts = Tally()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let token = try? issuerToken("c-new"),
                        let (status, answer) = try? await Self.token(base, ["grant_type": GrantType.issuerLogin, "issuer_token": token])
                    else { return }
                    firsts.add(status)
                    if let access = answer["access_token"]?.stringValue { seen.accessTokens.withLock { $0.append(access) } }
                    if let id = answer["id_token"]?.stringValue, let sub = try? ParsedJWS(id).claims["sub"]?.stringValue {
                        seen.subjects.withLock { _ = $0.insert(sub) }
                    }
                }
            }
        }
        #expect(firsts[200] == 10, "\(firsts.counts.withLock { $0 })")
        #expect(seen.subjects.withLock { $0.count } == 1)

        // 3. logout-all on one replica: every session of the consumer is refused at once on the other.
        let sessions = seen.accessTokens.withLock { $0 }
        try #require(sessions.count == 10)
        let (loggedOut, revoked) = try await jsonRequest("POST", a.base + "/v1/me/logout-all", body: [String: String](), bearer: sessions[0])
        #expect(loggedOut == 200 && revoked["revoked"]?.intValue == 10)
        for access in sessions {
            let (status, _) = try await http("GET", b.base + "/v1/me", bearer: access)
            #expect(status == 401)
        }
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

extension ReplicaTests {
    @Test("Custom registration on two replicas: a complete raced ten times creates one user (same registrationId: ten answers of that user); a one-step complete raced with one registrationId too")
    func customRegistrationRaces() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let database = try await TestPostgres.freshDatabase()
        let allow = ["LATCH_HOOKS_ALLOW_PRIVATE_ADDRESSES": "true"]
        let a = try replica(directory, "a", database: database, extra: allow)
        let b = try replica(directory, "b", database: database, extra: allow)
        let sms = try await ExampleHookProcess(
            "SMSHook", secret: "sms-secret-0123456789abcdef", environment: ["SMS_OUTBOX": directory.path + "/outbox.txt", "SMS_FIXED_CODE": "123456"],
            output: directory.path + "/sms.log")
        let invitation = try await ExampleHookProcess(
            "InvitationHook", secret: "invitation-secret-0123456789", environment: ["INVITATION_CODES": "RACE"], output: directory.path + "/inv.log")
        try await a.waitUntilListening()
        try await b.waitUntilListening()
        for (id, flow, hook) in [("sms", "two_step", sms), ("invitation", "one_step", invitation)] {
            let (created, answer) = try await jsonRequest(
                "POST", a.base + "/admin/v1/custom-providers",
                body: AdminCustomProviderRequest(id: id, name: id, flow: flow, hookURL: hook.url, hookSecret: hook.secret), bearer: Self.adminToken)
            #expect(created == 201, "\(answer)")
        }
        func initiate(_ phone: String) async throws -> String {
            let (status, answer) = try await jsonRequest(
                "POST", b.base + "/v1/custom-registrations/init", body: CustomRegistrationInitRequest(identityProvider: "sms", data: ["phone": .string(phone)]))
            #expect(status == 200, "\(answer)")
            return answer["transactionId"]?.stringValue ?? ""
        }
        final class Outcomes: Sendable {
            let statuses = Locked<[Int]>([])
            let users = Locked<Set<String>>([])
            let codes = Locked<[String]>([])
        }
        func race(_ body: CustomRegistrationCompleteRequest) async -> Outcomes {
            let outcomes = Outcomes()
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<10 {
                    group.addTask {
                        let base = worker.isMultiple(of: 2) ? a.base : b.base
                        guard let (status, answer) = try? await jsonRequest("POST", base + "/v1/custom-registrations/complete", body: body) else { return }
                        outcomes.statuses.withLock { $0.append(status) }
                        if let code = answer["error"]?.stringValue { outcomes.codes.withLock { $0.append(code) } }
                        if let user = answer["userId"]?.stringValue { outcomes.users.withLock { _ = $0.insert(user) } }
                    }
                }
            }
            return outcomes
        }
        // 1. No registrationId: one 201, nine 409 (completed by another request).
        let first = try await initiate("+4930000001")
        let plain = await race(CustomRegistrationCompleteRequest(transactionId: first, data: ["code": "123456"]))
        #expect(plain.statuses.withLock { $0.sorted() } == [201] + Array(repeating: 409, count: 9), "\(plain.codes.withLock { $0 })")
        #expect(plain.codes.withLock { $0 } == Array(repeating: "custom_transaction_finished", count: 9))
        // 2. One registrationId: ten answers of one user.
        let second = try await initiate("+4930000002")
        let same = await race(CustomRegistrationCompleteRequest(transactionId: second, data: ["code": "123456"], registrationId: "reg-race-2"))
        #expect(same.statuses.withLock { $0 } == Array(repeating: 201, count: 10), "\(same.codes.withLock { $0 })")
        #expect(same.users.withLock { $0.count } == 1)
        // 3. One-step, one registrationId: one transaction, one user.
        let oneStep = await race(
            CustomRegistrationCompleteRequest(identityProvider: "invitation", data: ["code": "RACE", "username": "racer"], registrationId: "reg-race-3"))
        #expect(oneStep.statuses.withLock { $0 } == Array(repeating: 201, count: 10), "\(oneStep.codes.withLock { $0 })")
        #expect(oneStep.users.withLock { $0.count } == 1)
        let (_, users) = try await http("GET", a.base + "/admin/v1/users?limit=50", bearer: Self.adminToken)
        #expect(users["users"]?.arrayValue?.count == 3, "\(users)")
        _ = await sms.stop()
        _ = await invitation.stop()
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }
}

extension ReplicaTests {
    @Test("DPoP on two replicas: one proof raced ten times across them is accepted once; a bound refresh token needs its key on either")
    func dpopRaces() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let database = try await TestPostgres.freshDatabase()
        let a = try replica(directory, "a", database: database)
        let b = try replica(directory, "b", database: database)
        try await a.waitUntilListening()
        try await b.waitUntilListening()
        try await Self.setUp(a.base, users: ["dpop"])
        let key = try PrivateKey.generate(.ES256)
        let proof = try DPoP.proof(
            key: key, method: "POST", url: "https://id.replicas.test/oauth2/token", jti: UUID().uuidString, issuedAt: Int64(Date().timeIntervalSince1970))
        let outcomes = Tally()
        final class Refreshes: Sendable { let tokens = Locked<[String]>([]) }
        let refreshTokens = Refreshes()
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<10 {
                group.addTask {
                    let base = worker.isMultiple(of: 2) ? a.base : b.base
                    guard let assertion = try? Self.assertion(subject: "dpop"),
                        let (status, answer) = try? await http(
                            "POST", base + "/oauth2/token", form: ["grant_type": GrantType.jwtBearer, "assertion": assertion], headers: ["DPoP": proof])
                    else { return }
                    outcomes.add(status)
                    if let code = answer["error"]?.stringValue { outcomes.codes.withLock { _ = $0.insert(code) } }
                    if let refresh = answer["refresh_token"]?.stringValue { refreshTokens.tokens.withLock { $0.append(refresh) } }
                }
            }
        }
        #expect(outcomes[200] == 1 && outcomes[400] == 9, "\(outcomes.counts.withLock { $0 })")
        #expect(outcomes.codes.withLock { $0 } == ["invalid_dpop_proof"])
        let refresh = try #require(refreshTokens.tokens.withLock { $0.first })
        func proofNow(_ signer: PrivateKey) throws -> String {
            try DPoP.proof(
                key: signer, method: "POST", url: "https://id.replicas.test/oauth2/token", jti: UUID().uuidString,
                issuedAt: Int64(Date().timeIntervalSince1970))
        }
        let (refused, answer) = try await http(
            "POST", b.base + "/oauth2/token", form: ["grant_type": "refresh_token", "refresh_token": refresh],
            headers: ["DPoP": try proofNow(try PrivateKey.generate(.ES256))])
        #expect(refused == 400 && answer["error"] == "invalid_dpop_proof")
        let (rotated, _) = try await http(
            "POST", b.base + "/oauth2/token", form: ["grant_type": "refresh_token", "refresh_token": refresh], headers: ["DPoP": try proofNow(key)])
        #expect(rotated == 200)
        #expect(try await a.terminate() == 0)
        #expect(try await b.terminate() == 0)
    }
}
