import Configuration
import Foundation
import LatchApp
import LatchCore
import LatchTesting
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    @Test("Defaults")
    func defaults() async throws {
        let configuration = try LatchConfiguration(reader: try await LatchConfiguration.reader(overrides: [:], environment: [:], configFile: nil))
        #expect(configuration.host == "127.0.0.1" && configuration.port == 8080 && configuration.dataDirectory == "./latch-data")
        #expect(configuration.sensitiveMaxAge == 300 && configuration.tokens.refreshGrace == 10)
        #expect(configuration.issuerURL == "http://127.0.0.1:8080")
        #expect(configuration.assertions.audience == "identity-service")
        #expect(configuration.registration.testKeysEnabled)
    }

    @Test("Environment variables are LATCH_ + the key; flags win over them; the JSON file is weakest")
    func layering() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let file = directory.path + "/latch.json"
        try Data(#"{"http": {"port": 7000}, "tokens": {"refreshGrace": 3}, "registration": {"testKeys": false}}"#.utf8).write(to: URL(fileURLWithPath: file))
        let configuration = try LatchConfiguration(
            reader: try await LatchConfiguration.reader(
                overrides: ["http.port": .int(9090)],
                environment: ["LATCH_SENSITIVE_MAX_AGE_SECONDS": "45", "LATCH_ADMIN_TOKEN": "from-env-0123456789", "LATCH_HTTP_PORT": "1234", "LATCH_TOKENS_REFRESH_GRACE": "5"],
                configFile: file))
        #expect(configuration.port == 9090)
        #expect(configuration.sensitiveMaxAge == 45)
        #expect(configuration.adminToken == "from-env-0123456789")
        #expect(configuration.tokens.refreshGrace == 5)
        #expect(configuration.registration.testKeysEnabled == false)
    }

    @Test("Bad values are refused by name", arguments: [
        ["LATCH_KEYS_ALGORITHM": "HS256"], ["LATCH_SENSITIVE_MAX_AGE_SECONDS": "-1"], ["LATCH_LOG_LEVEL": "loud"],
        ["LATCH_KEYS_ENCRYPTION_KEY": "c2hvcnQ="], ["LATCH_ISSUER": "not a url"],
    ])
    func badValues(environment: [String: String]) async throws {
        #expect(throws: LatchError.self) {
            _ = try LatchConfiguration(reader: ConfigReader(provider: EnvironmentVariablesProvider(environmentVariables: environment).prefixKeys(with: ["latch"])))
        }
    }
}
