import Foundation
import LatchModel
import LatchTesting
import Testing

@Suite("latch on the command line: exit codes, messages, no side effects on failure")
struct CommandLineTests {
    func latch(_ arguments: [String], environment: [String: String] = [:]) async throws -> (Int32, String) {
        try await run(try latchExecutable().path, arguments, environment: environment, timeout: 60)
    }

    @Test("A bad configuration value exits 2 naming the key and its source, without the usage text, creating nothing")
    func configuration() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.path + "/data"
        let port = try await latch(["serve", "--port", "99999", "--data-dir", data])
        #expect(port.0 == 2 && port.1.contains("configuration http.port (flag --port) must be 0–65535") && !port.1.contains("Usage"), "\(port.1)")
        let type = try await latch(["keys", "list", "--data-dir", data], environment: ["LATCH_TOKENS_ACCESS_LIFETIME": "abc"])
        #expect(type.0 == 2 && type.1.contains("environment variable LATCH_TOKENS_ACCESS_LIFETIME"), "\(type.1)")
        try Data(#"{"tokens": {"acessLifetime": 60}}"#.utf8).write(to: URL(fileURLWithPath: directory.path + "/latch.json"))
        let misspelled = try await latch(["keys", "list", "--data-dir", data, "--config", directory.path + "/latch.json"])
        #expect(misspelled.0 == 2 && misspelled.1.contains("tokens.acessLifetime") && misspelled.1.contains("is not a Latch setting"), "\(misspelled.1)")
        // A trailing comma: where it is, as an editor counts (line 3, column 1: the `}` after it).
        try Data("{\n  \"tokens\": {\"accessLifetime\": 60},\n}\n".utf8).write(to: URL(fileURLWithPath: directory.path + "/comma.json"))
        let comma = try await latch(["keys", "list", "--data-dir", data, "--config", directory.path + "/comma.json"])
        #expect(comma.0 == 2 && comma.1.contains("is not valid JSON") && comma.1.contains("at line 3, column 1"), "\(comma.1)")
        // A misspelled environment variable stops the start too (it was ignored, leaving test keys on).
        let typo = "LATCH_REGISTRATION_" + "TESTKEYS"
        let unknown = try await latch(["serve", "--port", "0", "--data-dir", data], environment: [typo: "false"])
        #expect(
            unknown.0 == 2
                && unknown.1.contains("configuration \(typo) (environment variable) is not a Latch setting; did you mean LATCH_REGISTRATION_TEST_KEYS?"),
            "\(unknown.1)")
        #expect(!FileManager.default.fileExists(atPath: data))
    }

    @Test("With no issuer configured the issuer is http://localhost:<the port listened on> (port 0 too) and passkeys' RP id is localhost; the CLI defaults to http://localhost:8080")
    func localhostDefaults() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let server = try LatchServer(
            dataDirectory: directory.path + "/data", port: 0, environment: ["LATCH_ADMIN_TOKEN": "localhost-test-admin-token-0123456789"], defaultIssuer: true)
        try await server.waitUntilListening()
        let line = try #require(server.log.split(separator: "\n").first { $0.hasPrefix("latch listening on http://127.0.0.1:") })
        let port = try #require(Int(line.split(separator: ":").last ?? ""))
        #expect(port > 0)
        let (status, discovery) = try await http("GET", "http://127.0.0.1:\(port)/.well-known/openid-configuration")
        #expect(status == 200 && discovery["issuer"]?.stringValue == "http://localhost:\(port)", "\(discovery)")
        // The RP id follows the issuer's host (LatchConfigurationTests checks it is localhost): no IP-address warning.
        #expect(!server.log.contains("relying party id is an IP address") && server.log.contains("tokens name http://localhost:\(port)"), "\(server.log)")
        _ = try await server.terminate()
        // The API clients default to the default issuer (`latch health` probes the listening address instead).
        for command in [["admin", "users", "list"], ["device", "sign-in"]] {
            let help = try await latch(command + ["--help"]).1
            #expect(help.contains("http://localhost:8080") && !help.contains("http://127.0.0.1:8080"), "\(command): \(help)")
        }
    }

    @Test("A second latch serve on a data folder in use exits 2 naming the folder and the process holding it; the folder is free again once the first stops")
    func oneServerPerDataFolder() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.path + "/data"
        let first = try LatchServer(dataDirectory: data, port: try freePort(), environment: ["LATCH_ADMIN_TOKEN": "lock-test-admin-token-0123456789"])
        try await first.waitUntilListening()
        let second = try await latch(["serve", "--port", "\(try freePort())", "--data-dir", data])
        #expect(second.0 == 2 && second.1.contains("is in use by another latch serve (process ") && second.1.contains(data), "\(second.1)")
        #expect(!second.1.contains("LATCH_ADMIN_TOKEN="))
        #expect(try await first.terminate() == 0)
        // Released with the process: a new server starts there.
        let third = try LatchServer(dataDirectory: data, port: try freePort(), environment: ["LATCH_ADMIN_TOKEN": "lock-test-admin-token-0123456789"])
        try await third.waitUntilListening()
        #expect(try await third.terminate() == 0)
    }

    @Test("Production mode refuses development settings, naming each, before creating anything; without it start-up warns once")
    func production() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.path + "/data"
        let refused = try await latch(["serve", "--production", "--port", "0", "--data-dir", data])
        #expect(refused.0 == 2, "\(refused.1)")
        #expect(refused.1.contains("configuration production") && refused.1.contains("no issuer is configured"), "\(refused.1)")
        #expect(refused.1.contains("test registration keys are on"), "\(refused.1)")
        let plain = try await latch(
            ["serve", "--port", "0", "--data-dir", data, "--issuer", "http://id.example.test"],
            environment: ["LATCH_PRODUCTION": "true", "LATCH_REGISTRATION_TEST_KEYS": "false", "LATCH_ATTESTATION_TEST_ROOT": directory.path + "/root.pem"])
        #expect(plain.0 == 2 && plain.1.contains("plain http on a host other than loopback") && plain.1.contains("attestation test root"), "\(plain.1)")
        #expect(!plain.1.contains("no issuer is configured") && !plain.1.contains("test registration keys are on"), "\(plain.1)")
        #expect(!FileManager.default.fileExists(atPath: data))
        // A production configuration starts, without the warning; a development one warns, listing what it is.
        let environment = ["LATCH_ADMIN_TOKEN": "production-test-admin-token-01234"]
        let good = try LatchServer(
            dataDirectory: data, port: try freePort(),
            environment: environment.merging(["LATCH_PRODUCTION": "true", "LATCH_REGISTRATION_TEST_KEYS": "false", "LATCH_ISSUER": "https://id.example.test"]) {
                _, new in new
            })
        try await good.waitUntilListening()
        #expect(try await good.terminate() == 0)
        #expect(!good.log.contains("development mode"))
        let development = try LatchServer(dataDirectory: data, port: try freePort(), environment: environment)
        try await development.waitUntilListening()
        #expect(try await development.terminate() == 0)
        #expect(development.log.contains("development mode") && development.log.contains("test registration keys are on"), "\(development.log)")
    }

    @Test("--help never says a default twice: an option with a default value leaves it out of its own help text")
    func helpDefaults() async throws {
        let (status, dump) = try await latch(["--experimental-dump-help"])
        #expect(status == 0)
        func repeated(_ command: JSONValue, _ path: String) -> [String] {
            let here = (command["arguments"]?.arrayValue ?? []).compactMap { argument -> String? in
                guard argument["defaultValue"] != nil, let help = argument["abstract"]?.stringValue, help.lowercased().contains("default") else { return nil }
                return "\(path) \(argument["valueName"]?.stringValue ?? "?"): \(help)"
            }
            return here + (command["subcommands"]?.arrayValue ?? []).flatMap { repeated($0, path + " " + ($0["commandName"]?.stringValue ?? "?")) }
        }
        let root = try #require(try? JSONValue.parse(Data(dump.utf8))["command"])
        #expect(repeated(root, "latch").isEmpty, "\(repeated(root, "latch"))")
        #expect((root["subcommands"]?.arrayValue ?? []).count > 5)
    }

    @Test("The README's quick start runs as written from a scratch folder (the browser step aside): serve, bootstrap's console link, the admin API at localhost")
    func readmeQuickStart() async throws {
        let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## Quick start\n").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```").dropFirst().first)
        let commands = block.split(separator: "\n").map { String($0.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "").trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && $0 != "sh" }
        #expect(
            commands == [
                "swift run latch serve", "swift run latch admin bootstrap --username you", "export LATCH_ADMIN_TOKEN=lat_…",
                "swift run latch admin users list",
            ], "the quick start changed: update this test with it — \(commands)")
        // The same commands, with `swift run latch` as the built binary, in a scratch folder, on a free port instead of
        // 8080 (LATCH_HTTP_PORT; the clients follow with LATCH_SERVER at localhost, the default issuer's host).
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let latchPath = try latchExecutable().path
        let port = try freePort()
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("LATCH_") }
        environment["LATCH_HTTP_PORT"] = "\(port)"
        func inFolder(_ command: String) -> [String] {
            ["-c", #"cd "$1" && shift && exec "$@""#, "sh", directory.path, latchPath] + command.split(separator: " ").dropFirst(3).map(String.init)
        }
        let log = directory.path + "/serve.log"
        let server = try ChildProcess(executable: "/bin/sh", arguments: inFolder(commands[0]), environment: environment, outputPath: log)
        defer { server.signal(SIGTERM) }
        let deadline = Date().addingTimeInterval(120)
        var output = ""
        while Date() < deadline, !output.contains("latch listening on"), server.isRunning {
            try await Task.sleep(for: .milliseconds(50))
            output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        }
        #expect(output.contains("latch listening on") && output.contains("data: SQLite in"), "\(output)")
        let tokenLine = try #require(output.split(separator: "\n").first { $0.contains("LATCH_ADMIN_TOKEN=lat_") })
        let token = String(try #require(tokenLine.split(separator: "=").last))
        #expect(FileManager.default.fileExists(atPath: directory.path + "/latch-data/master.key"))

        let (bootstrapped, link) = try await run("/bin/sh", inFolder(commands[1]), environment: environment, timeout: 120)
        #expect(bootstrapped == 0 && link.contains("http://localhost:\(port)/console/enroll"), "\(link)")
        environment["LATCH_ADMIN_TOKEN"] = token
        environment["LATCH_SERVER"] = "http://localhost:\(port)"
        let (listed, users) = try await run("/bin/sh", inFolder(commands[3]), environment: environment, timeout: 120)
        // The first page of users, as JSON (none registered yet).
        #expect(listed == 0 && (try? JSONValue.parse(Data(users.utf8)))?["users"]?.arrayValue?.isEmpty == true, "\(users)")
        server.signal(SIGTERM)
        #expect(await server.waitForExit(timeout: 60) == 0)
    }

    @Test("The README's command block names every command latch has (a new command must be added there)")
    func readmeCommandTable() async throws {
        let (status, dump) = try await latch(["--experimental-dump-help"])
        #expect(status == 0)
        func leaves(_ command: JSONValue, _ path: [String]) -> [[String]] {
            let subcommands = (command["subcommands"]?.arrayValue ?? []).filter { $0["commandName"]?.stringValue != "help" }
            if subcommands.isEmpty { return [path] }
            return subcommands.flatMap { leaves($0, path + [$0["commandName"]?.stringValue ?? "?"]) }
        }
        let root = try #require(try? JSONValue.parse(Data(dump.utf8))["command"])
        let commands = leaves(root, [])
        #expect(commands.count > 80 && commands.contains(["admin", "backup"]) && commands.contains(["health"]))
        let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "## Command line\n").dropFirst().first)
        let block = try #require(section.components(separatedBy: "```").dropFirst().first)
        let lines = block.split(separator: "\n").map { line in String(line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? "") }
        // `latch a b leaf`: a line that starts with `latch a b` and has `leaf` as one of its words.
        let missing = commands.filter { path in
            let prefix = (["latch"] + path.dropLast()).joined(separator: " ")
            return !lines.contains { line in
                line.hasPrefix(prefix + " ") && line.split(whereSeparator: { " |()[]".contains($0) }).contains { $0 == path.last! }
            }
        }
        #expect(missing.isEmpty, "not in the README's command block: \(missing.map { $0.joined(separator: " ") })")
    }

    @Test("latch --version prints latch and the version the SDK sends and the changelog's newest release names")
    func version() async throws {
        let (status, output) = try await latch(["--version"])
        #expect(status == 0 && output.trimmingCharacters(in: .whitespacesAndNewlines) == "latch \(LatchVersion.current)", "\(output)")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let changelog = try String(contentsOf: root.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
        let releases = changelog.split(separator: "\n").filter { $0.hasPrefix("## [") && !$0.hasPrefix("## [Unreleased]") }
        #expect(releases.first?.hasPrefix("## [\(LatchVersion.current)] - ") == true, "\(releases.first ?? "no release")")
        #expect(FileManager.default.fileExists(atPath: root.appendingPathComponent("LICENSE").path))
    }

    @Test("Commands on an existing deployment refuse a folder without one instead of creating it (exit 13); usage errors exit 2")
    func noDeployment() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let list = try await latch(["keys", "list", "--data-dir", directory.path + "/nothing"])
        #expect(list.0 == 13 && list.1.contains("holds no Latch deployment") && list.1.contains("latch.sqlite"), "\(list.1)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/nothing"))
        let usage = try await latch(["admin", "--bogus"])
        #expect(usage.0 == 2 && usage.1.contains("Unknown option"), "\(usage.1)")
        let missing = try await latch(["device", "register", "--test-key", directory.path + "/missing.pem", "--name", "x", "--state-dir", directory.path + "/state"])
        #expect(missing.0 == 2 && missing.1.contains("--test-key") && missing.1.contains("no such file") && !missing.1.contains("NSCocoaErrorDomain"), "\(missing.1)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/state"))
        // No proof at all: every way to register is named, not two of four.
        let none = try await latch(["device", "register", "--state-dir", directory.path + "/state"])
        #expect(
            none.0 == 2 && ["--test-key", "--fsso-key", "--attest", "--custom"].allSatisfy { none.1.contains($0) } && !none.1.contains("give either"),
            "\(none.1)")
        let blocked = directory.path + "/a-file"
        try Data().write(to: URL(fileURLWithPath: blocked))
        let folder = try await latch(["serve", "--port", "0", "--data-dir", blocked + "/data"])
        #expect(folder.0 == 2 && folder.1.contains("data.dir") && folder.1.contains("is a file, not a folder"), "\(folder.1)")
    }

    @Test("serve on a port in use exits 2 before creating a deployment or printing a token")
    func busyPort() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let port = try freePort()
        let first = try LatchServer(dataDirectory: directory.path + "/first", port: port)
        try await first.waitUntilListening()
        let second = try await latch(["serve", "--port", "\(port)", "--data-dir", directory.path + "/second"], environment: ["LATCH_ADMIN_TOKEN": ""])
        #expect(second.0 == 2 && second.1.contains("http.port") && !second.1.contains("LATCH_ADMIN_TOKEN="), "\(second.1)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/second"))
        #expect(try await first.terminate() == 0)
    }

    @Test("A master.key others may read, or a data folder others may write, stops the start with the chmod that fixes it")
    func permissions() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.path + "/data"
        let first = try LatchServer(dataDirectory: data, port: try freePort())
        try await first.waitUntilListening()
        #expect(try await first.terminate() == 0)
        let key = data + "/master.key"
        #expect(try FileManager.default.attributesOfItem(atPath: key)[.posixPermissions] as? Int == 0o600)

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: key)
        let readable = try await latch(["serve", "--port", "0", "--data-dir", data])
        #expect(readable.0 == 2 && readable.1.contains("keys.encryptionKey") && readable.1.contains("chmod 600"), "\(readable.1)")
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key)

        try FileManager.default.setAttributes([.posixPermissions: 0o777], ofItemAtPath: data)
        let writable = try await latch(["keys", "list", "--data-dir", data])
        #expect(writable.0 == 2 && writable.1.contains("data.dir") && writable.1.contains("chmod 700"), "\(writable.1)")
        try FileManager.default.setAttributes([.posixPermissions: 0o750], ofItemAtPath: data)

        let fixed = try await latch(["keys", "list", "--data-dir", data])
        #expect(fixed.0 == 0, "\(fixed.1)")
    }
}

/// `latch attestation verify` against published evidence: exit 0 verified, 1 refused, 2 bad usage.
@Suite("latch attestation verify")
struct AttestationVerifyCommandTests {
    func latch(_ arguments: [String]) async throws -> (Int32, String) {
        try await run(try latchExecutable().path, arguments, timeout: 60)
    }

    static let vectors = packageRoot.appendingPathComponent("Tests/Vectors")
    static let appleExample = [
        "attestation", "verify", "app-attest", "--app-id", "0352187391.com.apple.example_app_attest", "--environment", "production",
        "--key-id", "bSrEhF8TIzIvWSPwvZ0i2+UOBre4ASH84rK15m6emNY=", "--client-data-hash", "746573745f7365727665725f6368616c6c656e6765",
    ]

    @Test("Apple's example verifies at its documented time, with every step and the key in the JSON; expired now")
    func appAttest() async throws {
        let file = Self.vectors.appendingPathComponent("apple-app-attest-2024.b64").path
        let (status, output) = try await latch(Self.appleExample + ["--at", "2024-04-18T12:00:00Z", "--json", file])
        #expect(status == 0, "\(output)")
        let answer = try JSONValue.parse(Data(output.utf8))
        #expect(answer["verified"] == .bool(true) && answer["error"] == .null && answer["counter"] == .int(0))
        #expect(answer["steps"]?.arrayValue?.count == 10)
        #expect(answer["publicKey"]?.stringValue?.hasPrefix("-----BEGIN PUBLIC KEY-----") == true)
        let (expired, refused) = try await latch(Self.appleExample + ["--json", file])
        #expect(expired == 1)
        #expect(try JSONValue.parse(Data(refused.utf8))["error"] == .string("attestation_untrusted"))
        let (usage, _) = try await latch(Self.appleExample.map { $0 == "production" ? "staging" : $0 } + [file])
        #expect(usage == 2)
        let (missing, _) = try await latch(Self.appleExample + ["/nonexistent.b64"])
        #expect(missing == 2)
    }

    @Test("A real device's assertion verifies with its key; a counter that does not grow is refused")
    func appAttestAssertion() async throws {
        func arguments(previousCounter: Int) -> [String] {
            [
                "attestation", "verify", "app-attest-assertion", "--public-key",
                Self.vectors.appendingPathComponent("app-attest-device-2021-key.pem").path, "--app-id",
                "6MURL8TA57.de.vincent-haupert.apple-appattest-poc", "--client-data-hash",
                // SHA-256 of the client data "wurzelpfropf".
                "8be65cca515ad097c953967d18d635d86dd78a142ed3d077526bed11c6bec67b", "--previous-counter", String(previousCounter), "--json",
                Self.vectors.appendingPathComponent("app-attest-device-2021-assertion.b64").path,
            ]
        }
        let (status, output) = try await latch(arguments(previousCounter: 0))
        #expect(status == 0, "\(output)")
        #expect(try JSONValue.parse(Data(output.utf8))["counter"] == .int(1))
        let (refused, answer) = try await latch(arguments(previousCounter: 1))
        #expect(refused == 1)
        #expect(try JSONValue.parse(Data(answer.utf8))["error"] == .string("attestation_counter_invalid"))
    }

    @Test("A real Pixel chain verifies at its time; the verified-boot policy refuses it (its bootloader is unlocked)")
    func androidKey() async throws {
        let arguments = [
            "attestation", "verify", "android-key", "--challenge", "6368616c6c656e6765", "--package",
            "com.google.wireless.android.security.attestationverifier.collector", "--signature-digest",
            "103938ee4537e59e8ee792f654504fb8346fc6b346d0bbc4415fc339fcfc8ec1", "--at", "2024-10-01T00:00:00Z", "--json",
            Self.vectors.appendingPathComponent("android-akita-tee-ec.pem").path,
        ]
        let (status, output) = try await latch(arguments)
        #expect(status == 0, "\(output)")
        let (refused, answer) = try await latch(arguments + ["--require-verified-boot"])
        #expect(refused == 1)
        #expect(try JSONValue.parse(Data(answer.utf8))["error"] == .string("attestation_policy_failed"))
    }
}

/// `latch webauthn verify` with credentials made by python-fido2: exit 0 verified, 1 refused, 2 bad usage.
@Suite("latch webauthn verify")
struct WebAuthnVerifyCommandTests {
    static let folder = packageRoot.appendingPathComponent("Tests/Vectors/webauthn/fido2")

    func latch(_ arguments: [String]) async throws -> (Int32, String) {
        try await run(try latchExecutable().path, arguments, timeout: 60)
    }

    /// Writes a vector's registration and authentication responses to files; returns their paths and the vector.
    func responses(_ name: String, in directory: TemporaryDirectory) throws -> (registration: String, authentication: String, vector: JSONValue) {
        let vector = try JSONValue.parse(Data(contentsOf: Self.folder.appendingPathComponent(name)))
        let registration = directory.path + "/registration.json"
        let authentication = directory.path + "/authentication.json"
        try Data(vector["registration"]!.serialized()).write(to: URL(fileURLWithPath: registration))
        try Data(vector["authentication"]!.serialized()).write(to: URL(fileURLWithPath: authentication))
        return (registration, authentication, vector)
    }

    @Test("A packed x5c registration verifies with its trust anchor; the assertion with the key it printed; a wrong origin is refused")
    func registrationThenAuthentication() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (registration, authentication, vector) = try responses("es256-packed-x5c.json", in: directory)
        let anchor = directory.path + "/anchor.pem"
        try vector["trustAnchorPEM"]!.stringValue!.write(toFile: anchor, atomically: true, encoding: .utf8)
        let common = ["--rp-id", "latch.test", "--origin", "https://latch.test", "--require-user-verification", "--json"]
        let (status, output) = try await latch(
            ["webauthn", "verify", "registration"] + common
                + ["--challenge", vector["registrationChallenge"]!.stringValue!, "--trust-anchor", anchor, registration])
        #expect(status == 0, "\(output)")
        let answer = try JSONValue.parse(Data(output.utf8))
        #expect(answer["format"] == .string("packed") && answer["aaguid"] == vector["expected"]?["aaguid"])
        let key = try #require(answer["credentialPublicKey"]?.stringValue)
        let (signedIn, assertion) = try await latch(
            ["webauthn", "verify", "authentication"] + common
                + ["--challenge", vector["authenticationChallenge"]!.stringValue!, "--credential-public-key", key, authentication])
        #expect(signedIn == 0, "\(assertion)")
        #expect(try JSONValue.parse(Data(assertion.utf8))["signCount"] == .int(1))
        let (refused, why) = try await latch(
            ["webauthn", "verify", "registration", "--rp-id", "latch.test", "--origin", "https://other.test", "--json", "--challenge",
             vector["registrationChallenge"]!.stringValue!, registration])
        #expect(refused == 1)
        #expect(try JSONValue.parse(Data(why.utf8))["error"] == .string("webauthn_client_data_invalid"))
        #expect(try await latch(["webauthn", "verify", "registration", "--rp-id", "latch.test", "--challenge", "x", registration]).0 == 2)
    }

    @Test("--require-attestation: the same registration is refused without its trust anchor and verified with it")
    func requireAttestation() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (registration, _, vector) = try responses("es256-packed-x5c.json", in: directory)
        let anchor = directory.path + "/anchor.pem"
        try vector["trustAnchorPEM"]!.stringValue!.write(toFile: anchor, atomically: true, encoding: .utf8)
        let common = ["webauthn", "verify", "registration", "--rp-id", "latch.test", "--origin", "https://latch.test", "--json",
                      "--challenge", vector["registrationChallenge"]!.stringValue!, "--require-attestation"]
        // Without the flag an untrusted attestation is accepted like none; with it, refused.
        let (lenient, _) = try await latch(Array(common.dropLast()) + [registration])
        #expect(lenient == 0)
        let (refused, why) = try await latch(common + [registration])
        #expect(refused == 1, "\(why)")
        let answer = try JSONValue.parse(Data(why.utf8))
        #expect(answer["verified"] == .bool(false) && answer["error"]?.stringValue?.isEmpty == false, "\(why)")
        let (trusted, output) = try await latch(common + ["--trust-anchor", anchor, registration])
        #expect(trusted == 0, "\(output)")
    }
}
