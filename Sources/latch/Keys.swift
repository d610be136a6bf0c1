import ArgumentParser
import Foundation
import LatchCore
import LatchJOSE
import LatchApp
import Logging

struct Keys: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage Latch's own signing keys, directly in the store (the data folder, or database.url).",
        discussion: """
            A running server picks up the change at its next housekeeping round (config housekeeping.interval).
            Retired keys stay published until every token they signed has expired.
            """,
        subcommands: [Rotate.self, List.self])

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add a new active signing key for one algorithm; the previous key of that algorithm retires.")
        @OptionGroup var deployment: DeploymentOptions
        @Option(help: "ES256 or RS256 (default: config keys.algorithm).")
        var algorithm: String?

        func run() async throws {
            let configuration = try await deployment.load()
            let algorithm = try algorithm.map {
                guard let parsed = JWSAlgorithm(rawValue: $0), JWSAlgorithm.signing.contains(parsed) else { throw ValidationError("algorithm must be ES256 or RS256") }
                return parsed
            } ?? configuration.signingAlgorithm
            try DeploymentFolder.requireDeployment(configuration, hint: "Give the folder `latch serve` uses with --data-dir.")
            let opened = try OpenedStore.open(configuration, logger: Logger(label: "latch.keys"), create: false)
            let sealer = try KeySealer(keyEncryptionKey: try KeyEncryptionKeyFile.load(configuration: configuration, create: false))
            let kid = try await opened.whileRunning { store in
                try await SigningKeyRing.rotate(store: store, sealer: sealer, clock: .system, random: .system, algorithm: algorithm)
            }
            print(kid)
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List signing keys (id, algorithm, created, retired).")
        @OptionGroup var deployment: DeploymentOptions

        func run() async throws {
            let configuration = try await deployment.load()
            try DeploymentFolder.requireDeployment(configuration, hint: "Give the folder `latch serve` uses with --data-dir.")
            let opened = try OpenedStore.open(configuration, logger: Logger(label: "latch.keys"), create: false)
            guard let keys = try? await opened.whileRunning({ try await $0.signingKeys() }) else {
                throw ValidationError("the store cannot be read")
            }
            for key in keys {
                print("\(key.keyID)\t\(key.algorithm.rawValue)\tcreated=\(key.createdAt)\tretired=\(key.retiredAt.map(String.init) ?? "-")")
            }
        }
    }
}
