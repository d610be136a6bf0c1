import Foundation
import Hummingbird
import LatchApp
import LatchClient
import LatchCore
import LatchJOSE
import LatchModel
import LatchSQLite
import LatchServer
import LatchTesting
import Logging
import ServiceLifecycle
import Testing

/// A Latch on a loopback port (HummingbirdTesting's live mode) with a test clock, for SDK tests.
struct LiveLatch: Sendable {
    static let adminToken = "sdk-test-admin-token-0123456789"
    let url: URL
    let clock: TestClock
    let store: SQLiteStore
    let issuerKey = TestKeys.rsa
    let testKeyPEM: String

    /// Starts a deployment, registers issuer `acme` (kid `k1`, keeping `custom:tier`) and a test key
    /// `register_key`, and runs `body` against it. `configure` adjusts the configuration first (e.g.
    /// `hooksAllowPrivateAddresses` for custom-registration hooks on loopback).
    static func run(
        configure: (inout LatchConfiguration) -> Void = { _ in }, _ body: @Sendable (LiveLatch) async throws -> Void
    ) async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // The issuer is the real URL: the SDK follows the discovery document's jwks_uri.
        let port = try LoopbackPort.free()
        var configuration = LatchConfiguration()
        configuration.issuer = "http://127.0.0.1:\(port)"
        configuration.adminToken = Redacted(adminToken)
        configuration.dataDirectory = directory.path
        configure(&configuration)
        let path = directory.path
        let store = try await offPool { try SQLiteStore(directory: path, logger: TestLogger.make("latch.sqlite")) }
        defer { store.close() }
        // Running, not frozen: the SDK signs DPoP proofs and assertions with the system's time, and a slow run (a loaded
        // CI machine) must not leave the server's clock behind them.
        let clock = TestClock.running()
        let services = try await LatchDeployment.assemble(
            configuration: configuration, store: store, keyEncryptionKey: [UInt8](repeating: 3, count: 32), clock: clock.clock,
            logger: TestLogger.make("sdk-test")).services
        _ = try await services.admin.addIssuer(
            AdminSignOnIssuerRequest(name: "acme", keyId: "k1", publicKey: TestKeys.rsa.publicKey.pemRepresentation, allowedClaims: ["custom:tier"]))
        let testKey = try await services.admin.createTestKey(AdminTestKeyRequest())
        let (started, ready) = AsyncStream.makeStream(of: Void.self)
        let app = Application(
            router: buildRouter(services), configuration: .init(address: .hostname("127.0.0.1", port: port)),
            onServerRunning: { _ in ready.yield() }, logger: TestLogger.make("sdk-test"))
        let group = ServiceGroup(configuration: .init(services: [app], logger: TestLogger.make("sdk-test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            for await _ in started { break }
            do {
                try await body(LiveLatch(url: URL(string: "http://127.0.0.1:\(port)")!, clock: clock, store: store, testKeyPEM: testKey.privateKey))
            } catch {
                await group.triggerGracefulShutdown()
                throw error
            }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    func configuration(clientId: String = "default", namespace: String? = nil) -> LatchClientConfiguration {
        LatchClientConfiguration(serverURL: url, clientId: clientId, namespace: namespace)
    }

    /// A client with its own in-memory key store (one "device").
    func device(transport: any HTTPTransport = URLSessionTransport(), clock: @escaping @Sendable () -> Date = { Date() }) throws -> UserClient {
        try UserClient(configuration: configuration(), keyStore: InMemoryKeyStore(), transport: transport, clock: clock)
    }

    func federated(_ username: String = "alice", tier: String = "gold") throws -> LocalAuthenticationProvider {
        try LocalAuthenticationProvider(
            issuer: "acme", keyID: "k1", privateKeyPEM: issuerKey.pemRepresentation, username: username, attributes: ["custom:tier": .string(tier)])
    }

    func testProvider() throws -> TESTAuthenticationProvider {
        try TESTAuthenticationProvider(name: "sdk", privateKeyPEM: testKeyPEM)
    }
}

/// A transport that counts requests by path and can drop answers, over URLSession.
final class RecordingTransport: HTTPTransport {
    private let inner = URLSessionTransport()
    private let counts = Locked<[String: Int]>([:])
    /// Paths whose next answer is lost after the server handled the request.
    let dropNextAnswer = Locked<Set<String>>([])

    func send(_ request: HTTPRequestData) async throws -> HTTPResponseData {
        let path = request.url.path
        counts.withLock { $0[path, default: 0] += 1 }
        let response = try await inner.send(request)
        if dropNextAnswer.withLock({ $0.remove(path) != nil }) { throw URLError(.networkConnectionLost) }
        return response
    }

    func count(_ path: String) -> Int { counts.withLock { $0[path] ?? 0 } }
}

/// A clock the SDK reads, movable by the test.
final class MovableClock: Sendable {
    private let offset = Locked<TimeInterval>(0)
    func advance(_ seconds: TimeInterval) { offset.withLock { $0 += seconds } }
    var now: @Sendable () -> Date { { [self] in Date().addingTimeInterval(offset.withLock { $0 }) } }
}

