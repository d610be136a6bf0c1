import ArgumentParser
import Configuration
import Foundation
import LatchApp
import LatchCore
import Logging
import ServiceLifecycle

/// Options that locate a deployment's configuration; shared by `serve` and `keys`.
struct DeploymentOptions: ParsableArguments {
    @Option(help: "Folder of the SQLite database and key-encryption key (config data.dir).")
    var dataDir: String?

    @Option(help: "JSON configuration file (keys as in docs/configuration.md).")
    var config: String?

    /// Flags as configuration keys; they override the environment and the file.
    var overrides: [String: ConfigContent] {
        var values: [String: ConfigContent] = [:]
        if let dataDir { values["data.dir"] = .string(dataDir) }
        return values
    }

    func load(extra: [String: ConfigContent] = [:]) async throws -> LatchConfiguration {
        try await LatchConfiguration.load(overrides: overrides.merging(extra) { _, new in new }, configFile: config)
    }
}

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the identity service.")

    @Option(help: "Address to listen on (config http.host; default 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on (config http.port; default 8080; 0 picks a free port).")
    var port: Int?

    @Option(help: "Public base URL, the iss of every token (config issuer; default http://localhost:<port>).")
    var issuer: String?

    @Option(help: "postgres://user:password@host:port/db to run on PostgreSQL (config database.url; default SQLite).")
    var database: String?

    @Flag(help: "Refuse to start in development mode: no configured issuer, test keys on, an attestation test root, or a plain-http issuer off loopback (config production).")
    var production = false

    @OptionGroup var deployment: DeploymentOptions

    func run() async throws {
        var extra: [String: ConfigContent] = [:]
        if production { extra["production"] = .bool(true) }
        if let host { extra["http.host"] = .string(host) }
        if let port { extra["http.port"] = .int(port) }
        if let issuer { extra["issuer"] = .string(issuer) }
        if let database { extra["database.url"] = .string(database) }
        let configuration = try await deployment.load(extra: extra)
        let level = configuration.logLevel
        let format = configuration.logFormat
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = TextLogHandler(label: label)
                handler.logLevel = level
                return handler
            case .json:
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
        let logger = Logger(label: "latch")
        let latch = try await buildLatch(configuration: configuration, logger: logger) { port in
            // One line a script can wait for.
            print("latch listening on http://\(configuration.host):\(port)")
            // Which deployment this is: the data folder holds its keys (and, without database.url, its database).
            let folder = URL(fileURLWithPath: configuration.dataDirectory).standardizedFileURL.path
            print(configuration.databaseURL == nil ? "data: SQLite in \(folder)" : "data: PostgreSQL (database.url); key files in \(folder)")
            fflush(nil)
        }
        try await latch.run()
    }
}
