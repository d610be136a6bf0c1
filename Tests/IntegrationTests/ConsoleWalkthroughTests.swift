import Foundation
import LatchModel
import LatchTesting
import Testing

/// The web console in a real browser: `latch serve` with its first owner from `latch admin bootstrap`, walked
/// through by headless Chromium under Selenium with a virtual passkey authenticator
/// (`Tests/Peers/console_walkthrough.py`), which saves and checks a screenshot of each console page.
///
/// The issuer is `http://localhost:PORT`, not `127.0.0.1`: WebAuthn's relying party id must be a domain.
/// `LATCH_UPDATE_SCREENSHOTS=1` also copies the SQLite run's screenshots to `docs/images/console/`.
@Suite("Console walkthrough", .serialized, .requires(.consoleBrowser))
struct ConsoleWalkthroughTests {
    static let adminToken = "console-walkthrough-admin-token-0123"
    static let keyEncryptionKey = Data((0..<32).map { UInt8(60 + $0) }).base64EncodedString()
    static let owner = "owner"
    /// The screenshots every run takes (`11-reauth.png` only when the console asks for a passkey check, so not here).
    static let screenshots = [
        "01-enroll.png", "02-overview.png", "03-sign-in.png", "04-oob-qr.png", "05-users.png", "06-user.png", "07-test-key.png", "08-apps.png",
        "09-signing-keys.png", "10-admins.png", "12-audit.png", "13-not-allowed.png",
    ]

    @Test("Headless Chromium walks through the console on SQLite: passkey enrollment and sign-in, users, out-of-band QR, keys, apps, admins, audit, cross-site refusals")
    func sqlite() async throws {
        try await walkthrough(database: nil)
    }

    @Test(
        "The same console walkthrough with `latch serve` on PostgreSQL",
        .enabled(if: TestPostgres.isConfigured, "LATCH_TEST_POSTGRES_URL is not set: the PostgreSQL console walkthrough is skipped"))
    func postgres() async throws {
        try await walkthrough(database: try await TestPostgres.freshDatabase())
    }

    func walkthrough(database: String?) async throws {
        // Skipped by the suite's trait without Chromium, chromedriver, zbarimg and Selenium; CI (.ci/run installs them) fails here.
        try await Peer.consoleBrowser.require()
        let directory = TemporaryDirectory(prefix: "latch-console")
        defer { directory.remove() }
        let port = try freePort()
        // No issuer configured: the console works on the default one, http://localhost:<port>, as the README says.
        let issuer = "http://localhost:\(port)"
        var environment = ["LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH_HTTP_PORT": "\(port)", "LATCH_LOG_LEVEL": "info"]
        if let database {
            environment["LATCH_DATABASE_URL"] = database
            // Four connections are plenty for one browser; the cluster is shared with every PostgreSQL suite.
            environment["LATCH_DATABASE_POOL_SIZE"] = "4"
            environment["LATCH_KEYS_ENCRYPTION_KEY"] = Self.keyEncryptionKey
        }
        let data = directory.path + "/data"
        let server = try LatchServer(dataDirectory: data, port: port, environment: environment, defaultIssuer: true)
        do {
            try await server.waitUntilListening()
            try await walk(issuer: issuer, data: data, environment: environment, server: server, directory: directory, updateDocs: database == nil)
        } catch {
            _ = try? await server.terminate()
            throw error
        }
        #expect(try await server.terminate() == 0, "\(server.log.suffix(3000))")
    }

    func walk(issuer: String, data: String, environment: [String: String], server: LatchServer, directory: TemporaryDirectory, updateDocs: Bool) async throws {
        // The operator's first step, beside the running server: the owner and its one-time enrollment link.
        let (bootstrapStatus, bootstrapOutput) = try await run(
            try latchExecutable().path, ["admin", "bootstrap", "--username", Self.owner, "--data-dir", data],
            environment: environment, timeout: 60)
        try #require(bootstrapStatus == 0, "latch admin bootstrap: \(bootstrapOutput)")
        let link = try #require(
            bootstrapOutput.split(separator: "\n").last { $0.hasPrefix(issuer + "/console/enroll?ticket=") }.map(String.init),
            "no enrollment link in: \(bootstrapOutput)")

        let out = directory.path + "/screenshots"
        let started = Date()
        let (status, output) = try await ChildProcess.run(
            "/usr/bin/env",
            [
                "python3", packageRoot.appendingPathComponent("Tests/Peers/console_walkthrough.py").path, "--issuer", issuer, "--admin-token", Self.adminToken,
                "--enroll-link", link, "--out", out,
            ],
            environment: ProcessInfo.processInfo.environment, timeout: 300)
        let context = "walkthrough output:\n\(output.suffix(6000))\nlatch log:\n\(server.log.suffix(3000))"
        let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("{\"walkthrough\"") }, "no result line; \(context)")
        let result = try JSONValue.parse(Data(line.utf8))
        let failures = (result["failures"]?.arrayValue ?? []).compactMap(\.stringValue)
        for failure in failures { Issue.record("\(failure)") }
        let names = Set((result["screenshots"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue })
        #expect(status == 0, "exit status \(status); \(context)")
        #expect((result["checks"]?.intValue ?? 0) >= 250, "\(context)")
        for name in Self.screenshots {
            #expect(names.contains(name), "\(name) was not taken")
            let attributes = try? FileManager.default.attributesOfItem(atPath: out + "/" + name)
            #expect(((attributes?[.size] as? NSNumber)?.intValue ?? 0) > 8000, "\(name) is missing or tiny in \(out)")
        }
        print("console walkthrough: \(result["checks"]?.intValue ?? 0) checks in \(Int(Date().timeIntervalSince(started))) s")

        if updateDocs, ProcessInfo.processInfo.environment["LATCH_UPDATE_SCREENSHOTS"] == "1" {
            let docs = packageRoot.appendingPathComponent("docs/images/console")
            try FileManager.default.createDirectory(at: docs, withIntermediateDirectories: true)
            for name in Self.screenshots + ["11-reauth.png"] where FileManager.default.fileExists(atPath: out + "/" + name) {
                let target = docs.appendingPathComponent(name)
                try? FileManager.default.removeItem(at: target)
                try FileManager.default.copyItem(at: URL(fileURLWithPath: out + "/" + name), to: target)
            }
        }
    }
}
