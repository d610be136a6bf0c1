import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
import Logging
@testable import LatchSQLite
@testable import LatchServer
import LatchTesting
import Testing

/// One Latch deployment on a fresh SQLite folder with a fixed clock, driven in-process.
struct Deployment {
    static let adminToken = "test-admin-token-0123456789abcdef"
    let deployment: LatchDeployment
    let store: SQLiteStore
    let clock: TestClock
    let directory: TemporaryDirectory

    /// `clock` (default: frozen at a fixed instant in 2026) is the deployment's clock. Tests that call real peers
    /// checking time (hooks verifying signatures, an upstream's ID tokens) pass `.running()`: a clock frozen at the
    /// start falls behind the peer's by however long the test runs, which on a loaded machine exceeds the 60 s skew
    /// the upstream checks allow.
    static func make(clock: TestClock = TestClock(), _ configure: (inout LatchConfiguration) -> Void = { _ in }) async throws -> Deployment {
        var configuration = LatchConfiguration()
        configuration.issuer = "https://latch.test"
        configuration.adminToken = Redacted(adminToken)
        configure(&configuration)
        let directory = TemporaryDirectory()
        configuration.dataDirectory = directory.path
        let path = directory.path
        let store: SQLiteStore
        let deployment: LatchDeployment
        do {
            store = try await offPool { try SQLiteStore(directory: path, logger: TestLogger.make("latch.sqlite")) }
            do {
                deployment = try await LatchDeployment.assemble(
                    configuration: configuration, store: store, keyEncryptionKey: [UInt8](repeating: 7, count: 32),
                    clock: clock.clock, logger: TestLogger.make("test"))
            } catch {
                // A configuration the tests expect to be refused: no folder left behind.
                _ = try? await offPool { store.close() }
                throw error
            }
        } catch {
            directory.remove()
            throw error
        }
        return Deployment(deployment: deployment, store: store, clock: clock, directory: directory)
    }

    var services: LatchServices { deployment.services }

    /// Runs `body` against the router, then closes the store and removes the folder. With a `recorder`, every
    /// answer is recorded.
    func run(recording recorder: AnswerRecorder? = nil, _ body: @Sendable (Client) async throws -> Void) async throws {
        let app = Application(router: buildRouter(services))
        let outcome: Result<Void, any Error>
        do {
            try await app.test(.router) { client in try await body(Client(raw: client, deployment: self, recorder: recorder)) }
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        let store = self.store
        _ = try? await offPool { store.close() }
        directory.remove()
        try outcome.get()
    }

    var now: Int64 { clock.seconds }

    /// Counts rows of a table (to prove a refused request wrote nothing).
    func count(_ table: String) async throws -> Int64 {
        try await store.read { db in try db.query("SELECT count(*) FROM \(table)") }.first?.int(0) ?? -1
    }
}

/// A reply, decoded.
struct Reply: Sendable {
    let status: HTTPResponse.Status
    let headers: HTTPFields
    let body: Data

    var json: JSONValue { (try? JSONValue.parse(body)) ?? .null }
    var code: String? { json["error"]?.stringValue }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try JSONDecoder().decode(T.self, from: body) }
}

/// Request helpers over HummingbirdTesting's client.
struct Client: Sendable {
    let raw: any TestClientProtocol
    let deployment: Deployment
    var recorder: AnswerRecorder?

    func send(_ method: HTTPRequest.Method, _ path: String, headers: HTTPFields = [:], body: String? = nil) async throws -> Reply {
        let reply = try await raw.execute(uri: path, method: method, headers: headers, body: body.map { ByteBuffer(string: $0) }) { response in
            Reply(status: response.status, headers: response.headers, body: Data(response.body.readableBytesView))
        }
        recorder?.record(method: method.rawValue.lowercased(), path: path, reply: reply)
        return reply
    }

    func postJSON(_ path: String, _ value: some Encodable, bearer: String? = nil) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        return try await send(.post, path, headers: headers, body: String(decoding: try JSONEncoder().encode(value), as: UTF8.self))
    }

    func postForm(_ path: String, _ parameters: [(String, String)]) async throws -> Reply {
        let body = parameters.map { "\($0.0.formEscaped)=\($0.1.formEscaped)" }.joined(separator: "&")
        return try await send(.post, path, headers: [.contentType: "application/x-www-form-urlencoded"], body: body)
    }

    func get(_ path: String, bearer: String? = nil) async throws -> Reply {
        try await send(.get, path, headers: bearer.map { [.authorization: "Bearer \($0)"] } ?? [:])
    }

    /// An admin request with a raw JSON body.
    func adminRaw(_ method: HTTPRequest.Method, _ path: String, _ json: String) async throws -> Reply {
        try await send(method, path, headers: [.authorization: "Bearer \(Deployment.adminToken)", .contentType: "application/json"], body: json)
    }

    func admin(_ method: HTTPRequest.Method, _ path: String, _ value: (some Encodable)? = Optional<String>.none) async throws -> Reply {
        var headers: HTTPFields = [.authorization: "Bearer \(Deployment.adminToken)"]
        var body: String?
        if let value {
            headers[.contentType] = "application/json"
            body = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        }
        return try await send(method, path, headers: headers, body: body)
    }

    // MARK: Flows

    /// Trusts `TestKeys.rsa` as issuer `acme`, kid `k1`.
    func addIssuer(name: String = "acme", keyID: String = "k1", key: PrivateKey = TestKeys.rsa, allowedClaims: [String]? = ["custom:entitlementsSet"])
        async throws
    {
        let reply = try await admin(
            .post, "/admin/v1/issuers",
            AdminSignOnIssuerRequest(name: name, keyId: keyID, publicKey: key.publicKey.pemRepresentation, allowedClaims: allowedClaims))
        #expect(reply.status == .created, "\(String(decoding: reply.body, as: UTF8.self))")
    }

    func federatedAssertion(subject: String = "alice", issuer: String = "acme", keyID: String = "k1", key: PrivateKey = TestKeys.rsa, extra: [String: JSONValue] = ["custom:entitlementsSet": "gold"]) throws -> String {
        try Assertions.federated(issuer: issuer, keyID: keyID, subject: subject, now: deployment.now, extra: extra).sign(with: key)
    }

    func registerFederated(subject: String = "alice", registrationID: String? = nil) async throws -> RegistrationResponse {
        let reply = try await postJSON(
            "/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: try federatedAssertion(subject: subject), registrationId: registrationID))
        #expect(reply.status == .created, "\(String(decoding: reply.body, as: UTF8.self))")
        return try reply.decode(RegistrationResponse.self)
    }

    func token(assertion: String, clientID: String? = nil) async throws -> Reply {
        var parameters = [("grant_type", GrantType.jwtBearer), ("assertion", assertion)]
        if let clientID { parameters.append(("client_id", clientID)) }
        return try await postForm("/oauth2/token", parameters)
    }

    func refresh(_ token: String) async throws -> Reply {
        try await postForm("/oauth2/token", [("grant_type", "refresh_token"), ("refresh_token", token)])
    }

    func signInFederated(subject: String = "alice") async throws -> TokenResponse {
        let reply = try await token(assertion: try federatedAssertion(subject: subject))
        #expect(reply.status == .ok, "\(String(decoding: reply.body, as: UTF8.self))")
        return try reply.decode(TokenResponse.self)
    }

    /// Creates a test key, then registers a user with a device key `deviceKey`.
    func registerWithTestKey(username: String, deviceKey: PrivateKey, deviceKeyID: String = "device-1") async throws -> RegistrationResponse {
        let created = try await admin(.post, "/admin/v1/test-keys", AdminTestKeyRequest()).decode(AdminTestKeyCreated.self)
        let testKey = try PrivateKey(pem: created.privateKey)
        let answer = try Assertions.testRegistration(keyID: created.keyId, subject: username, now: deployment.now).sign(with: testKey)
        let reply = try await postJSON(
            "/v1/registrations",
            RegistrationRequest(
                challengeType: .test, answer: answer, registrationId: UUID().uuidString,
                publicKey: RegistrationPublicKey(keyId: deviceKeyID, algorithm: deviceKey.algorithm.rawValue, publicKey: deviceKey.publicKey.pemRepresentation)))
        #expect(reply.status == .created, "\(String(decoding: reply.body, as: UTF8.self))")
        return try reply.decode(RegistrationResponse.self)
    }

    /// Challenge → signed assertion → token.
    func signInWithKey(username: String, deviceKey: PrivateKey, deviceKeyID: String = "device-1") async throws -> Reply {
        let challenge = try await postJSON("/v1/sign-in/challenge", SignInChallengeRequest(username: username)).decode(SignInChallengeResponse.self)
        let assertion = try Assertions.device(username: username, keyID: deviceKeyID, nonce: challenge.nonce, audience: challenge.audience, now: deployment.now)
            .sign(with: deviceKey)
        return try await token(assertion: assertion)
    }
}

extension String {
    var formEscaped: String {
        addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? self
    }
}

/// Verifies one of Latch's tokens against its published JWKS.
func verifyAgainstJWKS(_ token: String, jwks: JSONWebKeySet) throws -> [String: JSONValue] {
    let parsed = try ParsedJWS(token)
    guard let jwk = jwks.keys.first(where: { $0.kid == parsed.keyID }) else { throw JOSEError(.missingKeyID, "kid not published") }
    return try parsed.verify(with: try PublicKey(jwk: jwk)).claims
}

/// Every answer of a test, for checking against docs/openapi.json (scripts/check_answers.py).
final class AnswerRecorder: Sendable {
    private let answers = Locked<[JSONValue]>([])

    func record(method: String, path: String, reply: Reply) {
        let body = reply.body.isEmpty ? JSONValue.null : ((try? JSONValue.parse(reply.body)) ?? .string(String(decoding: reply.body, as: UTF8.self)))
        answers.withLock { $0.append(["method": .string(method), "path": .string(path), "status": .int(Int64(reply.status.code)), "body": body]) }
    }

    var json: [UInt8] { answers.withLock { JSONValue.array($0).serialized() } }

    /// How many answers were recorded.
    var count: Int { answers.withLock { $0.count } }

    /// Checks every recorded answer against its path's schema in docs/openapi.json with scripts/check_answers.py
    /// (jsonschema, draft 2020-12). Where jsonschema is missing the check is left out with a warning on the test
    /// (CI: an error).
    func checkAgainstOpenAPI() async throws {
        guard await Peer.jsonschema.runsPart("the answers' check against docs/openapi.json") else { return }
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        try Data(json).write(to: URL(fileURLWithPath: directory.path + "/answers.json"))
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let (status, output) = try await ChildProcess.run(
            "/usr/bin/env",
            ["python3", root.appendingPathComponent("scripts/check_answers.py").path, root.appendingPathComponent("docs/openapi.json").path, directory.path + "/answers.json"])
        #expect(status == 0, "\(output)")
        #expect(output.contains("checked") && !output.contains("skip"), "\(output)")
    }
}
