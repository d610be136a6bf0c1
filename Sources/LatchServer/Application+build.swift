import Foundation
import Hummingbird
import LatchCore
import LatchJOSE
import LatchModel
import LatchPostgres
import LatchSQLite
import Logging
import ServiceLifecycle

/// Builds the router over assembled services. Tests drive it in-process.
public func buildRouter(_ services: LatchServices) -> Router<LatchRequestContext> {
    let router = Router(context: LatchRequestContext.self)
    router.add(middleware: ErrorMiddleware())
    if services.configuration.trustForwardedFor { router.add(middleware: ForwardedForMiddleware()) }
    let limited = RateLimitMiddleware(limiter: RateLimiter(perMinute: services.configuration.rateLimitPerMinute))

    router.addRoutes(
        DiscoveryController(
            keys: services.keys, issuer: services.configuration.issuerURL,
            algorithm: services.configuration.signingAlgorithm.rawValue,
            scopes: services.configuration.tokenSettings.allowedScopes.sorted()
        ).endpoints)
    let oauth = OAuthController(tokens: services.tokens, sessions: services.sessions, clients: services.clients)
    // The unauthenticated endpoints that write (sign-in, registration, challenge) are rate-limited per address.
    router.group("oauth2").add(middleware: limited).addRoutes(oauth.endpoints)
    router.group("v1").add(middleware: limited).addRoutes(
        RegistrationController(registration: services.registration, challenges: services.challenges).endpoints)
    router.addRoutes(HealthController(store: services.store).endpoints, atPath: "health")

    let bearer = BearerAuthenticator(sessions: services.sessions)
    oauth.userInfoEndpoints(router.group("oauth2").add(middleware: bearer).group(context: SignedInContext.self))
    MeController(sessions: services.sessions).add(
        to: router.group("v1/me").add(middleware: bearer).group(context: SignedInContext.self))
    AdminController(admin: services.admin, issuer: services.configuration.issuerURL).add(
        to: router.group("admin/v1").add(middleware: AdminAuthenticatorMiddleware(admins: services.adminAuthenticator))
            .group(context: AdminContext.self))
    return router
}

/// Closes the store after the HTTP server has stopped (services shut down in reverse order).
struct StoreCloser: Service {
    let store: any StoreLifecycle
    func run() async throws {
        try? await gracefulShutdown()
        await store.shutdown()
    }
}

/// The store the configuration names: PostgreSQL for `database.url`, else SQLite in the data folder.
public func openStore(_ configuration: LatchConfiguration, logger: Logger) async throws -> any LatchStore & StoreLifecycle {
    if let url = configuration.databaseURL {
        return try await PostgresStore.connect(
            url: url, poolSize: configuration.databasePoolSize, operationTimeout: .seconds(configuration.databaseTimeout), logger: logger)
    }
    return try SQLiteStore(directory: configuration.dataDirectory, logger: logger)
}

/// The key-encryption key: from configuration, or from `<data dir>/master.key` (created 0600 on first start).
public enum KeyEncryptionKeyFile {
    public static func loadOrCreate(configuration: LatchConfiguration) throws -> [UInt8] {
        if let key = configuration.keyEncryptionKey { return key }
        let path = (configuration.dataDirectory as NSString).appendingPathComponent("master.key")
        if let data = FileManager.default.contents(atPath: path) {
            guard let text = String(data: data, encoding: .utf8),
                let key = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count == 32
            else { throw LatchError.invalidInput("\(path) must hold base64 of 32 bytes") }
            return Array(key)
        }
        try FileManager.default.createDirectory(
            atPath: configuration.dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let key = RandomSource.system.bytes(32)
        // Exclusive create with mode 0600: never readable by others, never overwriting a concurrent writer's key.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { return try loadOrCreate(configuration: configuration) }
            throw LatchError(.serverError, "cannot create \(path): errno \(errno)")
        }
        let text = Array((Data(key).base64EncodedString() + "\n").utf8)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == text.count, synced == 0 else { throw LatchError(.serverError, "cannot write \(path)") }
        return key
    }
}

/// Builds the whole service: on PostgreSQL when `database.url` is set, else on SQLite in the data folder.
public func buildApplication(
    configuration: LatchConfiguration, logger: Logger, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws -> some ApplicationProtocol {
    let store = try await openStore(configuration, logger: logger)
    let services: LatchServices
    do {
        services = try await LatchServices.make(
            configuration: configuration, store: store,
            keyEncryptionKey: try KeyEncryptionKeyFile.loadOrCreate(configuration: configuration), logger: logger)
    } catch {
        await store.shutdown()
        throw error
    }
    if let token = services.generatedAdminToken {
        // Shown once: only its hash is stored.
        print(
            """
            ┌ Latch generated the bootstrap admin token. It is shown only now; store it safely:
            │ LATCH_ADMIN_TOKEN=\(token)
            └
            """)
    }
    var app = Application(
        router: buildRouter(services),
        configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "Latch"),
        onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
        logger: logger)
    app.addServices(
        StoreCloser(store: store),
        Housekeeping(services: services, interval: .seconds(configuration.housekeepingInterval), logger: logger))
    return app
}
