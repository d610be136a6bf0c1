import Foundation
import LatchTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The README's feature blocks, each run as written, top to bottom, from an empty folder, against a fresh `latch
/// serve` — what a reader does after the quick start: the server running (default issuer, `http://localhost:<port>`),
/// its admin token exported as `LATCH_ADMIN_TOKEN`, the debug build's folder (`latch` and the example hooks) first on
/// PATH. Only the ports change: 8080 becomes the test server's and 8081–8089 free ones, so blocks run side by side.
/// A block runs under `set -e -o pipefail`, so a command that fails stops it; the background servers and hooks it
/// starts are stopped when it ends, whatever happened.
@Suite("README blocks", .timeLimit(.minutes(5)))
struct ReadmeBlockTests {
    static let adminToken = "lat_readme-blocks-admin-token-1"

    @Test("Five-minute walkthrough (curl + openssl): register, sign in, refresh, a third-party verifier, sign out")
    func walkthrough() async throws {
        let output = try await runBlock(under: "## Five-minute walkthrough (curl + openssl)", from: .repository, needs: ["curl", "openssl", "python3"])
        #expect(output.contains(#""username":"alice""#), "\(output)")
        #expect(output.contains("invalid_token"), "the access token still works after sign-out:\n\(output)")
    }

    @Test("A device on the command line: register with a test key, sign in, DPoP, refresh, global sign-out, de-register")
    func device() async throws {
        let output = try await runBlock(under: "### A device on the command line: `latch device`", needs: [])
        #expect(output.contains(#""token_type":"DPoP""#) && output.contains("exit 5") && output.contains("deregistered"), "\(output)")
    }

    @Test("Attested devices: a second server trusting a test root; App Attest and Android key devices register and sign in")
    func attestedDevices() async throws {
        let output = try await runBlock(under: "### Attested devices on the command line", needs: ["openssl"])
        #expect(output.components(separatedBy: "signed in as ").count == 3, "\(output)")
    }

    @Test("FIDO: passwordless sign-up, a PIN authenticator added, a wrong PIN counted (exit 9), an admin unlock, PIN change")
    func fido() async throws {
        let output = try await runBlock(under: "### FIDO on the command line", needs: ["jq"])
        #expect(output.contains("signed up ada") && output.contains("signed in as ada") && output.contains("exit 9") && output.contains("PIN changed") && output.contains("deleted"), "\(output)")
    }

    @Test("Out-of-band: a QR code read by zbarimg enrols a phone, an approval, device linking")
    func outOfBand() async throws {
        let output = try await runBlock(under: "### Out-of-band on the command line", needs: ["zbarimg"])
        #expect(output.contains(#""status" : "succeeded""#) && output.contains("approved"), "\(output)")
        #expect(output.components(separatedBy: "enrolled ").count == 3, "\(output)")
    }

    @Test("Issuer login: two issuers' tokens in one login, login status, adding a token, introspection, logout-all")
    func issuerLogin() async throws {
        let output = try await runBlock(under: "### Issuer login (curl + openssl)", needs: ["curl", "openssl", "jq"])
        #expect(output.contains(#"{"consumer":"k-77","issuer":"card"}"#) && output.contains(#""active":true"#), "\(output)")
        #expect(output.contains(#"{"consumer":"c-1003","issuer":"bank"}"#), "the added token's pair is missing:\n\(output)")
        #expect(output.contains(#"{"revoked":1}"#), "\(output)")
    }

    @Test("Custom registration: the example hooks register alice (one step) and a phone number (two steps, the SMS's code)")
    func customRegistration() async throws {
        let output = try await runBlock(under: "### Custom registration on the command line", needs: ["openssl"])
        #expect(output.contains("registered alice (user id ") && output.contains("registered +4930123456 (user id "), "\(output)")
        #expect(output.contains(#""completed" : 1"#), "\(output)")
    }

    /// The README's `sh` blocks that no test runs as written, and why; every other one must be run above (or, the
    /// quick start, by `CommandLineTests.readmeQuickStart`).
    static let notRun = [
        "# Latch": "the two commands: `latch serve` runs in every test, `scripts/test.sh` is the test run itself",
        "### Browser sign-in on the command line":
            "needs the customer's OpenID provider and a person at the browser; the same path runs against a real provider (Authlib) in headless Chromium (BrowserWalkthroughTests) and through the SDK (FederatedSignInClientTests)",
        "## Scale out": "a production configuration: a PostgreSQL server and public URLs of the reader's own (replicas are tested in ReplicaTests)",
    ]
    static let runAsWritten = [
        "## Quick start", "## Five-minute walkthrough (curl + openssl)", "### A device on the command line: `latch device`",
        "### Attested devices on the command line", "### FIDO on the command line", "### Out-of-band on the command line",
        "### Issuer login (curl + openssl)", "### Custom registration on the command line",
    ]

    @Test("Every sh block of the README is run by a test, or named here with the reason it is not")
    func everyBlockIsRun() throws {
        let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        var heading = ""
        var blocks: [String] = []
        var inBlock = false
        for line in readme.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                if !inBlock, line == "```sh" { blocks.append(heading) }
                inBlock.toggle()
            } else if !inBlock, line.hasPrefix("#") {
                heading = String(line)
            }
        }
        #expect(blocks.count == Set(blocks).count, "two sh blocks under one heading: only the first is run — \(blocks)")
        let unaccounted = blocks.filter { !Self.runAsWritten.contains($0) && Self.notRun[$0] == nil }
        #expect(unaccounted.isEmpty, "README sh blocks no test runs: \(unaccounted) — run them in ReadmeBlockTests, or say why not in notRun")
        #expect(Set(Self.runAsWritten + Self.notRun.keys) == Set(blocks), "headings listed here that have no sh block: \(Set(Self.runAsWritten + Self.notRun.keys).subtracting(blocks))")
    }

    enum Folder { case scratch, repository }

    /// Runs the first `sh` block after `heading` as described above and returns its output (stdout and stderr).
    func runBlock(under heading: String, from folder: Folder = .scratch, needs tools: [String]) async throws -> String {
        let missing = tools.filter { tool in !(ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains { FileManager.default.isExecutableFile(atPath: "\($0)/\(tool)") } }
        try #require(missing.isEmpty, "the README block needs \(missing.joined(separator: ", ")) on PATH (Debian: apt-get install -y \(missing.joined(separator: " ")))")
        let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "\n" + heading + "\n").dropFirst().first, "no README heading \(heading)")
        var block = try #require(section.components(separatedBy: "```sh\n").dropFirst().first?.components(separatedBy: "\n```").first)
        let directory = TemporaryDirectory(prefix: "latch-readme")
        defer {
            Self.killProcesses(in: directory.path)
            directory.remove()
        }
        let scratch = directory.path + "/folder"
        try FileManager.default.createDirectory(atPath: scratch + "/tmp", withIntermediateDirectories: true)
        let server = try LatchServer(
            dataDirectory: directory.path + "/data", port: try freePort(), environment: ["LATCH_ADMIN_TOKEN": Self.adminToken], defaultIssuer: true)
        defer { server.process.signal(SIGKILL) }
        try await server.waitUntilListening()
        block = block.replacingOccurrences(of: "8080", with: "\(server.port)")
        for port in 8081...8089 where block.contains("\(port)") { block = block.replacingOccurrences(of: "\(port)", with: "\(try freePort())") }
        try block.write(toFile: directory.path + "/block.sh", atomically: true, encoding: .utf8)

        let latch = try latchExecutable().deletingLastPathComponent().path
        let environment = [
            "PATH": latch + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"), "LATCH_SERVER": "http://localhost:\(server.port)",
            "LATCH_ADMIN_TOKEN": Self.adminToken, "TMPDIR": scratch + "/tmp",
        ]
        let start = folder == .repository ? packageRoot.path : scratch
        // `source` keeps the block in this shell, so the trap sees its background jobs.
        let script = #"cd "$1" && set -e -o pipefail && trap 'kill $(jobs -p) 2>/dev/null || true' EXIT && source "$2""#
        let (status, output) = try await run("/bin/bash", ["-c", script, "bash", start, directory.path + "/block.sh"], environment: environment, timeout: 240)
        #expect(status == 0, "the README block under \(heading) failed (exit \(status)):\n\(output)\nserver log:\n\(server.log.suffix(4000))")
        return output
    }

    /// Stops what a block left running in its folder (a background server or hook the block could not stop
    /// because it failed or timed out first): every process whose working directory is inside `folder`.
    static func killProcesses(in folder: String) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return }
        for entry in entries {
            guard let pid = Int32(entry), pid != getpid(),
                let cwd = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/cwd"), cwd.hasPrefix(folder)
            else { continue }
            kill(pid, SIGKILL)
        }
    }
}
