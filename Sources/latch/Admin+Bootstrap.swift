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
                <issuer>/console/enroll and works once, for 24 hours.
                """)
        @OptionGroup var deployment: DeploymentOptions
        @Option(help: "The owner's username (1–64 printable characters).") var username: String
        @Option(help: "Public base URL of the console (config issuer; default http://localhost:<port>).") var issuer: String?

        func run() async throws {
            let configuration = try await deployment.load(extra: issuer.map { ["issuer": .string($0)] } ?? [:])
            let logger = Logger(label: "latch.bootstrap")
            let opened = try OpenedStore.open(configuration, logger: logger, create: true)
            let key = try KeyEncryptionKeyFile.loadOrCreate(configuration: configuration)
            let link = try await opened.whileRunning { store in
                try await AdminBootstrap.enrollmentLink(store: store, keyEncryptionKey: key, issuer: configuration.issuerURL, username: username, logger: logger)
            }
            print("Owner \(link.username) (\(link.accountId)): open this link once, within 24 hours, to enroll a passkey:")
            print(link.url)
        }
    }
}
