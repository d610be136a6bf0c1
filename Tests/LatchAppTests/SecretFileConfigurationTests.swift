import Foundation
import LatchApp
import LatchCore
import LatchTesting
import Testing

/// `LATCH_ADMIN_TOKEN_FILE`, `LATCH_KEYS_ENCRYPTION_KEY_FILE`, `LATCH_DATABASE_URL_FILE`: secrets read from files
/// (systemd credentials, container secrets) instead of the environment.
@Suite("Configuration: secrets from files")
struct SecretFileConfigurationTests {
    let directory = TemporaryDirectory(prefix: "latch-secret-files")

    func write(_ name: String, _ text: String) throws -> String {
        let path = directory.path + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("Each secret is read from the file its _FILE variable names, without the trailing newline")
    func readsFiles() async throws {
        defer { directory.remove() }
        let key = Data((0..<32).map { UInt8(3 * $0) })
        let environment = [
            "LATCH_ADMIN_TOKEN_FILE": try write("admin-token", "file-admin-token-0123456789\n"),
            "LATCH_KEYS_ENCRYPTION_KEY_FILE": try write("kek", key.base64EncodedString() + "\n"),
            "LATCH_DATABASE_URL_FILE": try write("database-url", "postgres://latch:secret@db.internal/latch\r\n"),
        ]
        let configuration = try await LatchConfiguration.load(overrides: [:], environment: environment, configFile: nil)
        #expect(configuration.adminToken?.value == "file-admin-token-0123456789")
        #expect(configuration.keyEncryptionKey?.value == Array(key))
        #expect(configuration.databaseURL?.value == "postgres://latch:secret@db.internal/latch")
        #expect(Set(environment.keys).isSubset(of: LatchConfiguration.knownEnvironmentNames))
    }

    @Test("A bad value in a secret file is refused naming the variable that named the file")
    func badValueNamesTheFile() async throws {
        defer { directory.remove() }
        let environment = ["LATCH_KEYS_ENCRYPTION_KEY_FILE": try write("kek", "c2hvcnQ=\n")]
        do {
            _ = try await LatchConfiguration.load(overrides: [:], environment: environment, configFile: nil)
            Issue.record("a 5-byte key-encryption key was accepted")
        } catch let error as ConfigurationError {
            #expect(error.key == "keys.encryptionKey")
            #expect(error.source == "file named by LATCH_KEYS_ENCRYPTION_KEY_FILE", "\(error)")
            #expect(!error.description.contains("c2hvcnQ"))
        }
    }

    @Test(
        "Refused: a variable together with its _FILE variant, a file that cannot be read, an empty file",
        arguments: ["both", "missing", "empty"])
    func refusals(case name: String) async throws {
        defer { directory.remove() }
        let environment: [String: String]
        let expected: String
        switch name {
        case "both":
            environment = ["LATCH_ADMIN_TOKEN_FILE": try write("token", "file-admin-token-0123456789"), "LATCH_ADMIN_TOKEN": "env-admin-token-0123456789"]
            expected = "is set together with LATCH_ADMIN_TOKEN"
        case "missing":
            environment = ["LATCH_ADMIN_TOKEN_FILE": directory.path + "/absent"]
            expected = "names \(directory.path)/absent, which cannot be read"
        default:
            environment = ["LATCH_ADMIN_TOKEN_FILE": try write("token", "\n")]
            expected = "which is empty"
        }
        do {
            _ = try await LatchConfiguration.load(overrides: [:], environment: environment, configFile: nil)
            Issue.record("\(name) was accepted")
        } catch let error as ConfigurationError {
            #expect(error.key == "admin.token")
            #expect(error.source == "environment variable LATCH_ADMIN_TOKEN_FILE", "\(error)")
            #expect(error.problem.contains(expected), "\(error)")
        }
    }
}
