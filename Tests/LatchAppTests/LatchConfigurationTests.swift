import Configuration
import Foundation
import LatchApp
import LatchCore
import LatchTesting
import Logging
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    #if !OTel
    @Test("tracing.enabled in a build without the OTel trait is refused before anything is created, naming the key and the build flag")
    func tracingNeedsTheTrait() async throws {
        var configuration = try LatchConfiguration(reader: try await LatchConfiguration.reader(overrides: [:], environment: [:], configFile: nil))
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        configuration.dataDirectory = directory.path + "/data"
        configuration.port = 0
        configuration.tracingEnabled = true
        do {
            _ = try await buildLatch(configuration: configuration, logger: .init(label: "test"))
            Issue.record("a build without the exporter accepted tracing.enabled")
        } catch let error as ConfigurationError {
            #expect(error.key == "tracing.enabled" && error.problem.contains("--traits OTel"))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/data"))
        #expect(configuration.tracingServiceName == "latch")
    }
    #endif

    @Test("An unknown LATCH_* environment variable is refused with the closest known name; every LATCH_* name the project uses is known")
    func environmentNames() async throws {
        let typo = "LATCH_REGISTRATION_" + "TESTKEYS"
        do {
            _ = try await LatchConfiguration.load(overrides: [:], environment: [typo: "false", "HOME": "/root"], configFile: nil)
            Issue.record("a misspelled environment variable was accepted")
        } catch let error as ConfigurationError {
            #expect(error.key == typo && error.problem.contains("did you mean LATCH_REGISTRATION_TEST_KEYS?"), "\(error)")
        }
        // Every name in the repository's sources, tests, docs, examples and scripts, so that no README step, SDK
        // example or test run trips the check.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let pattern = /LATCH_[A-Z0-9_]+/
        var used: Set<String> = []
        for folder in ["Sources", "Tests", "docs", "Examples", "scripts", ".ci", "README.md", "CHANGELOG.md"] {
            let url = root.appendingPathComponent(folder)
            let files =
                (FileManager.default.enumerator(at: url, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []) + [url]
            for file in files where ["swift", "md", "sh", "py", "json", ""].contains(file.pathExtension) {
                guard let text = try? String(contentsOf: file, encoding: .utf8) else { continue }
                for match in text.matches(of: pattern) where !match.output.hasSuffix("_") { used.insert(String(match.output)) }
            }
        }
        #expect(used.count > 50)
        // docs/configuration.md shows the refusal of this misspelling.
        let deliberate: Set = ["LATCH_REGISTRATION_" + "TESTKEY"]
        #expect(used.subtracting(LatchConfiguration.knownEnvironmentNames).subtracting(deliberate).sorted() == [])
    }

    @Test("Defaults")
    func defaults() async throws {
        let configuration = try LatchConfiguration(reader: try await LatchConfiguration.reader(overrides: [:], environment: [:], configFile: nil))
        #expect(configuration.host == "127.0.0.1" && configuration.port == 8080 && configuration.dataDirectory == "./latch-data")
        #expect(configuration.sensitiveMaxAge == 300 && configuration.tokens.refreshGrace == 10)
        #expect(configuration.issuerURL == "http://localhost:8080" && configuration.fidoSettings.rpID == "localhost")
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
        #expect(configuration.adminToken?.value == "from-env-0123456789")
        #expect(configuration.tokens.refreshGrace == 5)
        #expect(configuration.registration.testKeysEnabled == false)
    }

    @Test("Secrets never show in a description, a debug description or a dump of the configuration")
    func secretsRedacted() async throws {
        let key = Data((0..<32).map { UInt8(100 + $0) })
        let configuration = try LatchConfiguration(
            reader: try await LatchConfiguration.reader(
                overrides: [:],
                environment: [
                    "LATCH_ADMIN_TOKEN": "admin-secret-0123456789", "LATCH_KEYS_ENCRYPTION_KEY": key.base64EncodedString(),
                    "LATCH_DATABASE_URL": "postgres://latch:pg-password@127.0.0.1/latch",
                ],
                configFile: nil))
        var dumped = ""
        dump(configuration, to: &dumped)
        for text in [String(describing: configuration), String(reflecting: configuration), dumped, "\(configuration)"] {
            #expect(!text.contains("admin-secret") && !text.contains("pg-password") && !text.contains("100, 101, 102"), "\(text)")
            #expect(text.contains("<redacted>"))
        }
        #expect(configuration.keyEncryptionKey?.value == Array(key))
    }

    @Test("Bad values are refused by name, with the source", arguments: [
        (["LATCH_KEYS_ALGORITHM": "HS256"], "keys.algorithm"), (["LATCH_SENSITIVE_MAX_AGE_SECONDS": "-1"], "sensitive.maxAgeSeconds"),
        (["LATCH_LOG_LEVEL": "loud"], "log.level"), (["LATCH_KEYS_ENCRYPTION_KEY": "c2hvcnQ="], "keys.encryptionKey"),
        (["LATCH_ISSUER": "not a url"], "issuer"), (["LATCH_TOKENS_ACCESS_LIFETIME": "abc"], "tokens.accessLifetime"),
        (["LATCH_REGISTRATION_TEST_KEYS": "maybe"], "registration.testKeys"), (["LATCH_HTTP_PORT": "70000"], "http.port"),
    ])
    func badValues(environment: [String: String], key: String) async throws {
        do {
            _ = try await LatchConfiguration.load(overrides: [:], environment: environment, configFile: nil)
            Issue.record("\(environment) was accepted")
        } catch let error as ConfigurationError {
            #expect(error.key == key)
            #expect(error.source == "environment variable \(environment.keys.first!)", "\(error)")
        }
    }

    @Test("The file: a value of the wrong type, an unknown key (a misspelling), or not JSON stops the start; a flag is named as itself")
    func fileAndFlags() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        func load(_ json: String, overrides: [String: ConfigContent] = [:]) async throws -> LatchConfiguration {
            let file = directory.path + "/latch-\(UUID().uuidString).json"
            try Data(json.utf8).write(to: URL(fileURLWithPath: file))
            return try await LatchConfiguration.load(overrides: overrides, environment: [:], configFile: file)
        }
        await #expect { try await load(#"{"tokens": {"accessLifetime": "x"}}"#) } throws: { error in
            (error as? ConfigurationError)?.key == "tokens.accessLifetime" && (error as? ConfigurationError)?.source?.hasPrefix("file ") == true
        }
        await #expect { try await load(#"{"tokens": {"acessLifetime": 60}}"#) } throws: { error in
            (error as? ConfigurationError)?.key == "tokens.acessLifetime"
        }
        await #expect { try await load(#"{"tokn": {"accessLifetime": 60}}"#) } throws: { error in (error as? ConfigurationError)?.key == "tokn" }
        await #expect { try await load("[1, 2]") } throws: { error in (error as? ConfigurationError)?.key == "--config" }
        await #expect { try await load("{}", overrides: ["http.port": .int(-5)]) } throws: { error in
            (error as? ConfigurationError)?.source == "flag --port"
        }
        #expect(try await load(#"{"tokens": {"accessLifetime": 60}, "log": {"level": "debug"}}"#).tokens.accessLifetime == 60)
    }

    @Test("The documented table and the keys Latch reads are the same list")
    func documentedKeys() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        let documented = doc.split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("| `") else { return nil }
            return line.dropFirst(3).prefix { $0 != "`" }.description
        }
        #expect(documented.sorted() == LatchConfiguration.keys.sorted())
        // Each numeric setting's range is stated on its line, as the start refuses it.
        for (key, range) in LatchConfiguration.ranges {
            let line = doc.split(separator: "\n").first { $0.hasPrefix("| `\(key)`") }
            #expect(line?.contains("\(range.lowerBound)–\(range.upperBound)") == true, "docs/configuration.md does not state the range of \(key)")
        }
    }

    @Test("The security page states every limit and timeout setting with its range")
    func securityPage() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let page = try String(contentsOf: root.appendingPathComponent("docs/security.md"), encoding: .utf8)
        for key in LatchConfiguration.keys where (key.hasPrefix("http.") && key != "http.host" && key != "http.port") || key.hasPrefix("rateLimit.") {
            #expect(page.contains("`\(key)`"), "docs/security.md does not name \(key)")
            if let range = LatchConfiguration.ranges[key] {
                #expect(page.contains("\(range.lowerBound)–\(range.upperBound)"), "docs/security.md does not state the range of \(key)")
            }
        }
    }

    @Test("Every numeric setting is refused outside its range — Int64.max included — so no time computed from one can overflow")
    func numericRanges() async throws {
        for (key, range) in LatchConfiguration.ranges.sorted(by: { $0.key < $1.key }) {
            let variable = "LATCH_" + key.replacingOccurrences(of: ".", with: "_").reduce(into: "") { name, character in
                name += character.isUppercase ? "_" + String(character) : character.uppercased()
            }
            for value in [Int64.max, range.upperBound + 1, range.lowerBound - 1, Int64.min] {
                do {
                    _ = try await LatchConfiguration.load(overrides: [:], environment: [variable: String(value)], configFile: nil)
                    Issue.record("\(variable)=\(value) was accepted")
                } catch let error as ConfigurationError {
                    #expect(error.key == key && error.source == "environment variable \(variable)", "\(error)")
                    #expect(error.problem.contains("\(range.lowerBound)–\(range.upperBound)"), "\(error)")
                }
            }
            for value in [range.lowerBound, range.upperBound] {
                do {
                    _ = try await LatchConfiguration.load(overrides: [:], environment: [variable: String(value)], configFile: nil)
                } catch {
                    Issue.record("\(variable)=\(value) was refused: \(error)")
                }
            }
        }
    }

    @Test("An issuer that is not an http(s) URL with a host, or that has a query, fragment, user, newline or trailing slash, is refused", arguments: [
        "ftp://id.example.com", "https://id.example.com?x=1", "https://id.example.com#top", "https://id.example.com\nX-Evil: 1",
        "https://id.example.com/ ", "https://user:pw@id.example.com", "https://", "id.example.com", "https://id.example.com/",
        "javascript:alert(1)", "https://id.exämple.com",
    ])
    func badIssuers(issuer: String) async throws {
        await #expect(throws: ConfigurationError.self, "\(issuer)") {
            _ = try await LatchConfiguration.load(overrides: [:], environment: ["LATCH_ISSUER": issuer], configFile: nil)
        }
    }

    @Test("Good issuers are kept as given", arguments: ["https://id.example.com", "http://127.0.0.1:8080", "https://example.com/tenants/acme"])
    func goodIssuers(issuer: String) async throws {
        let configuration = try await LatchConfiguration.load(overrides: [:], environment: ["LATCH_ISSUER": issuer], configFile: nil)
        #expect(configuration.issuerURL == issuer)
    }

    @Test("An admin token that could never match a bearer header (spaces, control characters, too short or too long) is refused", arguments: [
        String(repeating: " ", count: 16), "short-token", "token with spaces inside it", "tab\tseparated-token-value", String(repeating: "a", count: 513),
        "=leading-equals-sign-token", "ünïcödé-token-value-1234",
    ])
    func badAdminTokens(token: String) async throws {
        do {
            _ = try await LatchConfiguration.load(overrides: [:], environment: ["LATCH_ADMIN_TOKEN": token], configFile: nil)
            Issue.record("accepted \(token.debugDescription)")
        } catch let error as ConfigurationError {
            #expect(error.key == "admin.token")
            #expect(!error.description.contains(token), "the refusal repeats the secret")
        }
    }
}
