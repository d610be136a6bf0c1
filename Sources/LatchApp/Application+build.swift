import Foundation
import Hummingbird
import HummingbirdCore
import NIOCore
import NIOPosix
import LatchCore
import LatchServer
import LatchWeb
import Logging
import ServiceLifecycle
import UnixSignals

/// Latch as services, in the order they start (and the reverse of the order they stop): the store's, then the
/// HTTP server, which readies the store and assembles the engines once the store runs.
///
/// `latch serve` runs it with SIGTERM / SIGINT as graceful shutdown: the server stops taking connections and
/// finishes the requests in flight, housekeeping stops, then the store closes.
public func buildLatch(
    configuration given: LatchConfiguration, logger: Logger, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
) async throws -> ServiceGroup {
    var configuration = given
    // Before anything is created or printed: a port in use must not leave a new deployment (and a bootstrap
    // token printed for it) behind. Port 0 without a configured issuer picks the free port now, so the default
    // issuer (`http://localhost:<port>`) names the port actually listened on.
    let free = try await checkCanListen(host: configuration.host, port: configuration.port)
    if configuration.port == 0, configuration.issuer == nil { configuration.port = free }
    // `production` refuses development settings; otherwise they are listed once, as a warning.
    try configuration.checkProduction()
    if !configuration.production, !configuration.developmentModeSettings.isEmpty {
        let settings = configuration.developmentModeSettings.joined(separator: "; ")
        logger.warning("development mode (set production=true, LATCH_PRODUCTION=true or --production to refuse it): \(settings)")
    }
    // Refused before anything is created when this build cannot export.
    let tracing = configuration.tracingEnabled ? try OpenTelemetryTracing.bootstrap(serviceName: configuration.tracingServiceName, logger: logger) : nil
    // The pages' templates, parsed and checked: a broken one stops the start here.
    let pages = try WebPages()
    // One server per data folder: a second one is refused before it reads or writes anything there.
    let lock = try DataFolderLock(folder: configuration.dataDirectory)
    let keyEncryptionKey = try KeyEncryptionKeyFile.loadOrCreate(configuration: configuration)
    let opened = try OpenedStore.open(configuration, logger: logger)
    let server = LatchHTTPService(
        configuration: configuration, opened: opened, keyEncryptionKey: Redacted(keyEncryptionKey), logger: logger, lock: lock, pages: pages,
        onServerRunning: onServerRunning)
    // The exporter first: it starts before and stops after the server, so the last spans are flushed.
    return ServiceGroup(
        configuration: .init(
            services: (tracing.map { [$0] } ?? []) + [opened.service, server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
}

/// The HTTP server with housekeeping, over engines assembled once the store is ready.
struct LatchHTTPService: Service, CustomStringConvertible {
    /// What ServiceLifecycle logs: the name alone, never the secrets held.
    var description: String { "LatchHTTPService" }

    let configuration: LatchConfiguration
    let opened: OpenedStore
    let keyEncryptionKey: Redacted<[UInt8]>
    let logger: Logger
    /// Held while the server runs (released when the service, and with it the last reference, goes).
    let lock: DataFolderLock
    let pages: WebPages
    let onServerRunning: @Sendable (Int) async -> Void

    func run() async throws {
        try await opened.prepare()
        let deployment = try await LatchDeployment.assemble(
            configuration: configuration, store: opened.store, keyEncryptionKey: keyEncryptionKey.value, logger: logger)
        if let token = deployment.generatedAdminToken {
            // Shown once: only its hash is stored.
            print(
                """
                ┌ Latch generated the bootstrap admin token. It is shown only now; store it safely:
                │ LATCH_ADMIN_TOKEN=\(token)
                │ Next: `latch admin bootstrap --username you --data-dir \(configuration.dataDirectory) --issuer \(configuration.issuerURL)`
                │ prints a link to enroll a passkey for the web console; the admin API (docs/api.md) takes the token above.
                └
                """)
        }
        var limits = ConnectionLimits()
        limits.headTimeout = .seconds(configuration.headerTimeout)
        limits.bodyTimeout = .seconds(configuration.bodyTimeout)
        limits.idleTimeout = .seconds(configuration.idleTimeout)
        let (maximum, descriptors) = ConnectionLimits.effectiveMaximum(configured: configuration.maxConnections)
        limits.maximumConnections = maximum
        logger.info(
            "connection limits",
            metadata: [
                "maxConnections": "\(maximum)", "descriptorLimit": "\(descriptors.map(String.init) ?? "unlimited")",
                "headerTimeout": "\(configuration.headerTimeout)", "bodyTimeout": "\(configuration.bodyTimeout)",
                "idleTimeout": "\(configuration.idleTimeout)",
            ])
        let connections = ConnectionCounter(limits: limits, logger: logger)
        let services = deployment.services
        let documents = WellKnownDocuments(services)
        let serverName = "Latch"
        // The well-known documents are answered on the event loop unless requests are traced (see WellKnownFastPath).
        let answerOnEventLoop: @Sendable () -> WellKnownFastPath = {
            WellKnownFastPath(documents: documents, metrics: services.metrics, serverName: serverName)
        }
        let fastPath = services.settings.tracing ? nil : answerOnEventLoop
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: connections.handlers(), idleTimeout: .seconds(configuration.idleTimeout + configuration.bodyTimeout),
            // A request head is small (a bearer token, a form's content type): 16 KiB in at most 100 fields.
            httpDecoderConfiguration: .init(
                maxHeaderFieldSize: RequestLimits.maximumHeaderField, maxHeaderListSize: RequestLimits.maximumHeaders,
                maxHeaderFieldCount: RequestLimits.maximumHeaderCount))
        var app = Application(
            router: buildRouter(services, pages: pages, documents: documents),
            server: HTTPServerBuilder { responder in
                LatchHTTP1Channel(base: HTTP1Channel(responder: responder, configuration: http1), fastPath: fastPath)
            },
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: serverName),
            onServerRunning: { [onServerRunning] channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
        app.addServices(Housekeeping(deployment: deployment, interval: .seconds(configuration.housekeepingInterval), logger: logger))
        app.addServices(AuditSealer(audit: deployment.services.audit, interval: .seconds(1), logger: logger))
        if configuration.metricsPort != 0, let metrics = deployment.services.metrics {
            // Unauthenticated, so on its own address: loopback unless `metrics.host` says otherwise.
            app.addServices(
                Application(
                    router: metrics.router(),
                    configuration: .init(address: .hostname(configuration.metricsHost, port: configuration.metricsPort), serverName: "Latch metrics"),
                    onServerRunning: { [logger, configuration] _ in
                        logger.info("metrics listening", metadata: ["address": "\(configuration.metricsHost):\(configuration.metricsPort)"])
                    },
                    logger: logger))
        }
        try await app.run()
    }
}

/// Binds `host:port` the way the server will (SO_REUSEADDR) without listening, and lets go at once; refuses naming
/// `http.port` when another process holds it or the address is not this machine's. Not listening matters: a client
/// connecting in that instant must be refused, not accepted onto a socket nobody serves (it would wait forever).
/// Binds `host:port` once and lets go; returns the port bound (a free one for port 0).
@discardableResult
func checkCanListen(host: String, port: Int) async throws -> Int {
    func refuse(_ reason: String) -> ConfigurationError {
        ConfigurationError(
            key: "http.port", problem: "\(host):\(port) cannot be listened on (\(reason)): another process has it, or the address is not this machine's; choose --port / --host")
    }
    let address: SocketAddress
    do {
        address = try SocketAddress.makeAddressResolvingHost(host, port: port)
    } catch {
        throw refuse("\(error)")
    }
    let family: Int32 = if case .v6 = address { AF_INET6 } else { AF_INET }
    let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw refuse(String(cString: strerror(errno))) }
    defer { close(fd) }
    var yes: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    let bound = address.withSockAddr { pointer, length in bind(fd, pointer, socklen_t(length)) }
    guard bound == 0 else { throw refuse(String(cString: strerror(errno))) }
    var storage = sockaddr_storage()
    var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
    let named = withUnsafeMutablePointer(to: &storage) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw refuse(String(cString: strerror(errno))) }
    let network: UInt16 = withUnsafePointer(to: &storage) {
        if family == AF_INET6 {
            $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port }
        } else {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }
        }
    }
    return Int(UInt16(bigEndian: network))
}
