import ArgumentParser
import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel

extension Admin.Clients {
    /// `latch admin clients evidence`: an app's device-evidence settings.
    struct Evidence: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set an app's device evidence: Apple App IDs and App Attest environment, Android package names and Play Integrity keys.")
        @OptionGroup var server: ServerOptions
        @Argument var clientId: String
        @Option(help: "Apple App ID TEAMID.bundleId (repeatable; replaces the list).") var iosAppId: [String] = []
        @Option(help: "production (default) or development.") var appAttestEnvironment: String?
        @Option(help: "Android package name (repeatable; replaces the list).") var androidPackage: [String] = []
        @Option(help: "JSON file {decryptionKey, verificationKey} (base64) from the Play Console, or from `latch admin attestation test-root create`.")
        var playIntegrityKeys: String?
        @Option(help: "binding (default) or deviceId.") var requestHashMode: String?

        func validate() throws {
            guard !iosAppId.isEmpty || !androidPackage.isEmpty else { throw ValidationError("give --ios-app-id or --android-package") }
        }

        func run() async throws {
            var playIntegrity: AdminPlayIntegrity?
            if let playIntegrityKeys {
                let text = try InputFile.text(playIntegrityKeys, option: "--play-integrity-keys", hint: "A JSON file with decryptionKey and verificationKey.")
                playIntegrity = try JSONDecoder().decode(AdminPlayIntegrity.self, from: Data(text.utf8))
                playIntegrity?.hasDecryptionKey = nil
            }
            let patch = AdminClientPatch(
                ios: iosAppId.isEmpty ? nil : AdminIOSEvidence(appIds: iosAppId, appAttestEnvironment: appAttestEnvironment),
                android: androidPackage.isEmpty
                    ? nil : AdminAndroidEvidence(packageNames: androidPackage, playIntegrity: playIntegrity, requestHashMode: requestHashMode))
            AdminHTTP.printJSON(try await AdminHTTP(options: server).send("PATCH", "/admin/v1/clients/\(clientId.pathEscaped)", body: patch))
        }
    }

    /// `latch admin clients signing-certificates`: Android signing-certificate fingerprints, owned by the admin token.
    struct SigningCertificates: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "signing-certificates", abstract: "An Android app's signing-certificate SHA-256 fingerprints.",
            subcommands: [Add.self, List.self, Delete.self])

        struct Add: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Add a fingerprint (owned by the admin token used).")
            @OptionGroup var server: ServerOptions
            @Argument var clientId: String
            @Argument(help: "SHA-256 of the signing certificate: 64 hex digits, colons allowed (keytool -list -v prints it).") var sha256: String
            func run() async throws {
                AdminHTTP.printJSON(
                    try await AdminHTTP(options: server).send(
                        "POST", "/admin/v1/clients/\(clientId.pathEscaped)/signing-certificates", body: AdminSigningCertificateRequest(sha256: sha256)))
            }
        }

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "List an app's fingerprints and their owners.")
            @OptionGroup var server: ServerOptions
            @Argument var clientId: String
            func run() async throws {
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/clients/\(clientId.pathEscaped)/signing-certificates"))
            }
        }

        struct Delete: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Remove a fingerprint.")
            @OptionGroup var server: ServerOptions
            @Argument var clientId: String
            @Argument var sha256: String
            func run() async throws {
                _ = try await AdminHTTP(options: server).send(
                    "DELETE", "/admin/v1/clients/\(clientId.pathEscaped)/signing-certificates/\(sha256.replacingOccurrences(of: ":", with: "").pathEscaped)")
            }
        }
    }
}

extension Admin {
    /// `latch admin attestation`: test attestation material for CI (never production).
    struct AttestationAdmin: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "attestation", abstract: "Test attestation material for CI and demos.", subcommands: [TestRoot.self])

        struct TestRoot: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "test-root", abstract: "A test attestation root (trusted only while registration.testKeys is on).", subcommands: [Create.self])

            struct Create: AsyncParsableCommand {
                static let configuration = CommandConfiguration(
                    abstract: "Write root.pem, root.key (0600) and play-integrity.json (test Play Integrity keys, 0600) to a folder.",
                    discussion: """
                        Serve with attestation.testRoot=<dir>/root.pem (LATCH_ATTESTATION_TEST_ROOT) and registration.testKeys on; give the \
                        app the Play Integrity keys with `latch admin clients evidence <id> --android-package <name> --play-integrity-keys \
                        <dir>/play-integrity.json`. `latch device register --attest … --test-root <dir>` then makes evidence in the real \
                        formats. Runs offline.
                        """)
                @Option(help: "Folder to write into (created; existing files are not overwritten).") var out: String

                func run() throws {
                    let folder = URL(fileURLWithPath: out)
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    for name in ["root.pem", "root.key", "play-integrity.json"]
                    where FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path) {
                        throw InputFileError(description: "--out \(out) holds \(name) already; remove it or choose another folder")
                    }
                    let authority = try TestAttestationAuthority.create(now: Date())
                    let play = TestPlayIntegrityKeys.generate()
                    try InputFile.write(try authority.rootPEM, to: folder.appendingPathComponent("root.pem").path, option: "--out")
                    try InputFile.write(authority.keyPEM, to: folder.appendingPathComponent("root.key").path, option: "--out")
                    try InputFile.write(
                        String(decoding: try JSONEncoder().encode(play), as: UTF8.self), to: folder.appendingPathComponent("play-integrity.json").path,
                        option: "--out")
                    print(folder.appendingPathComponent("root.pem").path)
                }
            }
        }
    }
}

/// Test Play Integrity keys: what the Play Console gives an app (an AES-256 decryption key, an EC P-256 verification
/// key) plus the signing key Google would hold, so `latch device` can make tokens.
struct TestPlayIntegrityKeys: Codable {
    var decryptionKey: String
    var verificationKey: String
    var signingKey: String

    static func generate() -> TestPlayIntegrityKeys {
        let signing = P256.Signing.PrivateKey()
        return TestPlayIntegrityKeys(
            decryptionKey: SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString(),
            verificationKey: signing.publicKey.derRepresentation.base64EncodedString(), signingKey: signing.pemRepresentation)
    }
}
