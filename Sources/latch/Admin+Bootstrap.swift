import ArgumentParser
import Configuration
import Foundation
import LatchApp
import LatchCore
import LatchModel
import Logging

extension Admin {
    /// `latch admin bootstrap --username <name>`: the first owner and its passkey enrollment link, in the store.
    struct Bootstrap: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create the first owner account and print a one-time link to enroll its console passkey.",
            discussion: """
                Works directly in the store (the data folder, or database.url), so it needs no admin token: run it where \
                the server's data is. An existing owner of that name gets a new link (a lost passkey). The link opens \
                <issuer>/console/enroll and works once, for 24 hours. A folder that holds no deployment (no latch.sqlite \
                and master.key; on PostgreSQL, no master.key or a database no server has started on) is refused with \
                exit 13, unless --init makes a new deployment there.
                """)
        @OptionGroup var deployment: DeploymentOptions
        @Option(help: "The owner's username (1–64 printable characters).") var username: String
        @Option(help: "Public base URL of the console (config issuer; default http://localhost:<port>).") var issuer: String?
        @Flag(name: .customLong("init"), help: "Make a new deployment in a folder (or database) that holds none, instead of refusing it.")
        var initialize = false

        func run() async throws {
            let configuration = try await deployment.load(extra: issuer.map { ["issuer": .string($0)] } ?? [:])
            let logger = Logger(label: "latch.bootstrap")
            let hint = "Give the folder `latch serve` uses with --data-dir, or pass --init to make a new deployment there."
            if !initialize { try DeploymentFolder.requireDeployment(configuration, hint: hint) }
            let opened = try OpenedStore.open(configuration, logger: logger, create: initialize)
            let key = try KeyEncryptionKeyFile.load(configuration: configuration, create: initialize)
            let folder = DataFolder.absolute(configuration.dataDirectory)
            let initialize = initialize
            let link = try await opened.whileRunning { store in
                // On PostgreSQL the deployment is the database: one no server has started on holds no signing key.
                if !initialize, configuration.databaseURL != nil, try await store.signingKeys().isEmpty {
                    throw NoDeploymentError(folder: folder, problem: "names a PostgreSQL database that no `latch serve` has started on (no signing key). \(hint)")
                }
                return try await AdminBootstrap.enrollmentLink(store: store, keyEncryptionKey: key, issuer: configuration.issuerURL, username: username, logger: logger)
            }
            print("Owner \(link.username) (\(link.accountId)): open this link once, within 24 hours, to enroll a passkey:")
            print(link.url)
        }
    }
}
