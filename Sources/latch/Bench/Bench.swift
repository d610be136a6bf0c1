import ArgumentParser
import Crypto
import Foundation
import LatchJOSE
import LatchModel
import LatchServer


/// `latch bench`: starts `latch serve` on loopback with a fresh data folder, prepares its own data, and measures
/// each scenario: throughput, p50/p90/p99 latency, errors, server CPU and peak RSS, and the rate as a fraction
/// of what the crypto alone would allow on this machine.
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure throughput and latency of a local Latch (run it as a release build).",
        discussion: """
            swift run -c release latch bench
            Every scenario is bounded in time (--duration, at most 30 s) and in requests; load targets 127.0.0.1 only.
            """)

    static let allScenarios = [
        "jwks", "discovery", "fsso-es256", "fsso-rs256", "key-sign-in", "refresh", "refresh-dpop", "userinfo", "refresh@1000", "app-attest-register",
        "app-attest-sign-in", "android-key-register", "play-integrity-register", "webauthn-register", "webauthn-sign-in",
        "oob-enroll", "oob-status", "issuer-login-1", "issuer-login-3", "custom-sms", "custom-hook-direct", "custom-sms@200",
        "custom-hook-direct@200", "dpop-verify",
    ]

    @Option(help: "Seconds per scenario (1–30).") var duration: Double = 10
    @Option(help: "Concurrent connections.") var connections: Int = 32
    @Option(help: "Comma-separated scenarios: \(allScenarios.joined(separator: ",")).")
    var scenarios: String = allScenarios.joined(separator: ",")
    @Option(help: "Most pre-signed ES256 assertions per scenario (bounds memory and setup time).") var maxAssertions = 300_000
    @Option(help: "Write the results as JSON to this file too.") var json: String?
    @Option(help: "Run the server on this PostgreSQL database instead of SQLite (an empty database; server CPU then excludes PostgreSQL's).")
    var database: String?
    @Option(help: "Server replicas on the --database, 1–8: connections are spread across them in turn.") var replicas: Int = 1
    @Option(help: "Serve with this latch executable instead of this one (compares two builds under one load generator).")
    var serverExecutable: String?
    @Flag(help: "Measure only the SQLite writer's ceiling, in process: key sign-in units of work from 512 tasks at once (--duration seconds), no server.")
    var writerCeiling = false

    func validate() throws {
        guard (1...30).contains(duration) else { throw ValidationError("--duration must be 1–30 seconds") }
        guard (1...256).contains(connections) else { throw ValidationError("--connections must be 1–256") }
        guard (1...8).contains(replicas) else { throw ValidationError("--replicas must be 1–8") }
        if let serverExecutable, !FileManager.default.isExecutableFile(atPath: serverExecutable) {
            throw ValidationError("--server-executable \(serverExecutable) is not an executable file")
        }
        guard replicas == 1 || database != nil else {
            throw ValidationError("--replicas needs --database: replicas share a PostgreSQL database (an SQLite data folder has one server)")
        }
        for name in scenarios.split(separator: ",") where !Self.allScenarios.contains(String(name)) {
            throw ValidationError("unknown scenario \(name)")
        }
    }

    func run() throws {
        #if DEBUG
        print("warning: this is a debug build; figures are not representative (use swift run -c release latch bench)")
        #endif
        if writerCeiling {
            let ceiling = try Self.blocking { try await WriterCeiling.measure(seconds: duration) }
            let writer = ceiling.writerMicroseconds.map { String(format: "; writer thread %.0f µs of CPU", $0) } ?? ""
            let bytes = ceiling.bytesPerUnit.map { String(format: " and %.1f KiB written", $0 / 1024) } ?? ""
            print(String(format: "SQLite writer, saturated (512 tasks, 10,000 users): %.0f key sign-in units/s%@%@ per unit; %.0f units per commit",
                         ceiling.unitsPerSecond, writer, bytes, ceiling.unitsPerCommit))
            return
        }
        let selected = scenarios.split(separator: ",").map(String.init)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let crypto = CryptoCeiling.measure()
        let storeName = database == nil ? "SQLite (WAL, synchronous=FULL) on disk" : "PostgreSQL (synchronous_commit=on)"
        let servers = (replicas == 1 ? "" : ", \(replicas) server replicas") + (serverExecutable.map { ", server \($0)" } ?? "")
        print("Latch benchmark — \(buildKind), \(cores) cores, \(storeName)\(servers), \(connections) connections, \(Int(duration)) s per scenario")
        print(String(format: "crypto, one thread: ES256 sign %.0f/s, verify %.0f/s; RS256 verify %.0f/s, sign %.0f/s; SHA-256(token) %.1fM/s",
                     crypto.es256Sign, crypto.es256Verify, crypto.rs256Verify, crypto.rs256Sign, crypto.sha256 / 1e6))
        print(String(
            format: "metrics, one thread: %.2f µs to count and time a request and count its token answer (the server records them unless LATCH_METRICS_ENABLED=false)",
            LatchMetrics.recordingCost() / 1000))

        let directory = NSTemporaryDirectory() + "latch-bench-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let adminToken = "bench-admin-" + UUID().uuidString
        var ports: [Int] = []
        for _ in 0..<(replicas * 4) where ports.count < replicas {
            let free = try LoopbackPort.free()
            if !ports.contains(free) { ports.append(free) }
        }
        guard ports.count == replicas else { throw ValidationError("could not find \(replicas) free loopback ports") }
        let port = ports[0]
        // Attestation scenarios register under a test root the server trusts (test keys are on by default).
        let attestation = try BenchAttestation(directory: directory)
        var environment = ["LATCH_ATTESTATION_TEST_ROOT": attestation.rootFile]
        // Custom registration calls the example hook on loopback.
        if selected.contains(where: BenchCustomRegistration.scenarios.contains) { environment["LATCH_HOOKS_ALLOW_PRIVATE_ADDRESSES"] = "true" }
        let server = try ServerProcess(
            executable: try serverExecutable ?? selfExecutable(), ports: ports, directory: directory, adminToken: adminToken, database: database,
            environment: environment)
        defer { server.stop() }
        let idleRSS = server.rss() ?? 0
        print(String(format: "cold start: %.0f ms from spawn to the first answered request (fresh data folder); idle RSS %.1f MiB", server.coldStartMilliseconds, Double(idleRSS) / 1_048_576))

        let fixture = try BenchFixture.prepare(port: port, adminToken: adminToken, connections: connections, scenarios: selected, maxAssertions: maxAssertions, duration: duration)
        fixture.attestation = attestation
        if selected.contains(where: BenchAttestation.scenarios.contains) {
            try attestation.prepare(port: port, adminToken: adminToken, connections: connections, signIn: selected.contains("app-attest-sign-in"))
        }
        let fido = BenchFido(port: port, accessTokens: fixture.accessTokens)
        fixture.fido = fido
        if selected.contains("webauthn-sign-in") { try fido.prepare(port: port) }
        let oob = BenchOutOfBand(adminToken: adminToken)
        fixture.oob = oob
        if selected.contains(where: BenchOutOfBand.scenarios.contains) {
            try oob.prepare(port: port, connections: connections)
            let qr = BenchOutOfBand.qrRate(cores: cores)
            print(String(
                format: "QR codes, one thread: %.0f PNGs/s; all %d cores: %.0f PNGs/s (a %d-byte link's version %d symbol, %d-byte PNG; target ≥ 2,000/s)",
                qr.rate, cores, qr.allCores, qr.linkBytes, qr.version, qr.pngBytes))
        }
        let issuerLogin = try BenchIssuerLogin(adminToken: adminToken)
        fixture.issuerLogin = issuerLogin
        if selected.contains(where: BenchIssuerLogin.scenarios.contains) {
            try issuerLogin.prepare(port: port, connections: connections, scenarios: selected, duration: duration, maxTokens: maxAssertions)
        }
        let dpop = BenchDPoP(maxProofs: maxAssertions)
        fixture.dpop = dpop
        if selected.contains("refresh-dpop") { try dpop.prepare(port: port, connections: connections, fixture: fixture) }
        let custom = BenchCustomRegistration(adminToken: adminToken, latchExecutable: try selfExecutable())
        fixture.customRegistration = custom
        defer { custom.stop() }
        if selected.contains(where: BenchCustomRegistration.scenarios.contains) {
            try custom.prepare(port: port, scenarios: selected, directory: directory)
        }
        var results: [(ScenarioResult, ceiling: Double?, target: String)] = []
        print("")
        print(Report.header)
        for name in selected {
            let result = fixture.run(name, duration: duration, connections: connections, server: server)
            let ceiling = crypto.ceiling(for: name, cores: cores)
            let target = Report.targets[name] ?? ""
            results.append((result, ceiling, target))
            print(Report.row(result, ceiling: ceiling, target: target))
            if let error = result.firstError { print("    first error: \(error.prefix(200))") }
        }
        for line in BenchCustomRegistration.overhead(results.map(\.0)) { print(line) }
        for line in dpop.summary(results.map(\.0), crypto: crypto) { print(line) }
        let idleAfter = server.rss() ?? 0
        print(String(format: "\nRSS after the run, idle: %.1f MiB. Targets (issue 5): refresh ≥ 10,000/s; fsso ES256 ≥ 8,000/s; key sign-in ≥ 4,000/s; JWKS ≥ 60,000/s; p99 ≤ 5 ms at 1,000 refresh/s; RSS ≤ 64 MiB idle, ≤ 256 MiB loaded; cold start ≤ 300 ms.", Double(idleAfter) / 1_048_576))
        if let json {
            try Report.json(results.map { ($0.0, $0.ceiling, $0.target) }, coldStart: server.coldStartMilliseconds, idleRSS: idleRSS, crypto: crypto, cores: cores)
                .write(to: URL(fileURLWithPath: json))
        }
    }

    var buildKind: String {
        #if DEBUG
        "DEBUG build"
        #else
        "release build"
        #endif
    }

    func selfExecutable() throws -> String {
        let path = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        guard FileManager.default.isExecutableFile(atPath: path) else { throw ValidationError("cannot find the latch executable") }
        return path
    }
}

extension Bench {
    /// Runs async work from this synchronous command (its thread waits; the work runs on the cooperative pool).
    static func blocking<T: Sendable>(_ work: @escaping @Sendable () async throws -> T) throws -> T {
        let result = Locked<Result<T, any Error>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Task.detached {
            do {
                let value = try await work()
                result.withLock { $0 = .success(value) }
            } catch {
                result.withLock { $0 = .failure(error) }
            }
            finished.signal()
        }
        finished.wait()
        return try result.withLock { $0 }!.get()
    }
}

/// Single-thread crypto rates on this machine, and what they allow per scenario.
struct CryptoCeiling: Encodable {
    var es256Sign = 0.0, es256Verify = 0.0, rs256Verify = 0.0, rs256Sign = 0.0, sha256 = 0.0

    static func measure() -> CryptoCeiling {
        func rate(_ seconds: Double = 0.3, _ body: () -> Void) -> Double {
            let start = LoadRunner.now()
            var count = 0
            while LoadRunner.now() - start < seconds && count < 10_000_000 {
                body()
                count += 1
            }
            return Double(count) / (LoadRunner.now() - start)
        }
        let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhbGljZSIsImV4cCI6MTc5MDAwMDAwMH0".utf8)
        let es = try! PrivateKey.generate(.ES256)
        let rs = try! PrivateKey.generate(.RS256)
        let esSignature = try! es.signature(for: message)
        let rsSignature = try! rs.signature(for: message)
        let token = Array("lrt_" + String(repeating: "a", count: 43)).map { UInt8($0.asciiValue!) }
        var ceiling = CryptoCeiling()
        ceiling.es256Sign = rate { _ = try? es.signature(for: message) }
        ceiling.es256Verify = rate { _ = es.publicKey.isValidSignature(esSignature, for: message) }
        ceiling.rs256Verify = rate { _ = rs.publicKey.isValidSignature(rsSignature, for: message) }
        ceiling.rs256Sign = rate(0.5) { _ = try? rs.signature(for: message) }
        ceiling.sha256 = rate { _ = SHA256.hash(data: token) }
        return ceiling
    }

    /// Requests per second the server's crypto alone would allow on `cores` cores; nil where there is none.
    func ceiling(for scenario: String, cores: Int) -> Double? {
        let sign = 1 / es256Sign, verify = 1 / es256Verify
        let cost: Double? = switch scenario {
        case "fsso-es256", "key-sign-in": verify + 2 * sign
        case "fsso-rs256": 1 / rs256Verify + 2 * sign
        case "refresh", "refresh@1000": 2 * sign + 2 / sha256
        // The proof's signature (and its key's thumbprint), then refresh's work.
        case "refresh-dpop": verify + 2 * sign + 3 / sha256
        case "userinfo": verify
        // Registration: the leaf's signature (intermediates are cached), the ID and access tokens are not minted.
        case "app-attest-register", "android-key-register": verify
        case "app-attest-sign-in", "webauthn-sign-in": verify + 2 * sign
        case "webauthn-register": verify
        // Each issuer token's signature, then the ID and access tokens.
        case "issuer-login-1": verify + 2 * sign
        case "issuer-login-3": 3 * verify + 2 * sign
        default: nil
        }
        // In the bench process, on one thread: the token's signature and the proof's.
        if scenario == "dpop-verify" { return es256Verify / 2 }
        return cost.map { Double(cores) / $0 }
    }
}

/// Formatting of the results.
enum Report {
    static let targets = [
        "jwks": "≥ 60,000/s", "discovery": "≥ 60,000/s", "fsso-es256": "≥ 8,000/s", "key-sign-in": "≥ 4,000/s",
        "refresh": "≥ 10,000/s", "refresh@1000": "p99 ≤ 5 ms", "app-attest-register": "≥ 500/s", "app-attest-sign-in": "≥ 4,000/s",
        "android-key-register": "≥ 500/s", "play-integrity-register": "≥ 500/s", "webauthn-register": "≥ 2,000/s",
        "webauthn-sign-in": "≥ 4,000/s", "oob-status": "≥ 10,000/s", "issuer-login-1": "≥ 6,000/s", "issuer-login-3": "≥ 3,000/s",
        "custom-sms": "overhead p99 ≤ 1 ms", "custom-sms@200": "overhead p99 ≤ 1 ms",
        "refresh-dpop": "≥ 70 % of refresh", "dpop-verify": "≥ 15,000/s on one core",
    ]

    static let header =
        "scenario          rate/s   p50 ms   p90 ms   p99 ms   errors   server CPU   µs CPU/op   peak RSS   crypto ceiling   of ceiling   target"

    /// The server's CPU time per operation (one row of the rate: a sign-in, a refresh, a document), in microseconds:
    /// how builds and peers compare where the load generator shares the cores.
    static func microsecondsPerOperation(_ result: ScenarioResult) -> Double? {
        let rate = Double(result.latencies.count) / max(result.seconds, 0.001)
        guard let cores = result.serverCPU, rate > 0 else { return nil }
        return cores * 1_000_000 / rate
    }

    static func row(_ result: ScenarioResult, ceiling: Double?, target: String) -> String {
        func pad(_ text: String, _ width: Int) -> String {
            text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
        }
        let rate = Double(result.latencies.count) / max(result.seconds, 0.001)
        let columns = [
            pad(String(format: "%.0f", rate), 8), pad(String(format: "%.2f", result.percentile(0.5)), 8),
            pad(String(format: "%.2f", result.percentile(0.9)), 8), pad(String(format: "%.2f", result.percentile(0.99)), 8),
            pad("\(result.errors)", 8), pad(result.serverCPU.map { String(format: "%.2f cores", $0) } ?? "-", 12),
            pad(microsecondsPerOperation(result).map { String(format: "%.0f", $0) } ?? "-", 11),
            pad(result.peakRSS.map { String(format: "%.0f MiB", Double($0) / 1_048_576) } ?? "-", 10),
            pad(ceiling.map { String(format: "%.0f/s", $0) } ?? "-", 16),
            pad(ceiling.map { String(format: "%.0f%%", 100 * rate / $0) } ?? "-", 12),
        ]
        // A longer name is printed whole (its row shifts right) rather than cut.
        let name = result.name.count > 14 ? result.name + " " : result.name.padding(toLength: 14, withPad: " ", startingAt: 0)
        return name + columns.joined(separator: " ") + "   " + target
    }

    static func json(_ results: [(ScenarioResult, Double?, String)], coldStart: Double, idleRSS: Int, crypto: CryptoCeiling, cores: Int) throws -> Data {
        struct Row: Encodable {
            let scenario: String, rate: Double, p50: Double, p90: Double, p99: Double, errors: Int
            let serverCPU: Double?, serverMicrosecondsPerOperation: Double?, peakRSSBytes: Int?, cryptoCeiling: Double?, target: String
        }
        struct Document: Encodable {
            let cores: Int, coldStartMilliseconds: Double, idleRSSBytes: Int, crypto: CryptoCeiling, scenarios: [Row]
        }
        let rows = results.map { result, ceiling, target in
            Row(scenario: result.name, rate: Double(result.latencies.count) / max(result.seconds, 0.001), p50: result.percentile(0.5),
                p90: result.percentile(0.9), p99: result.percentile(0.99), errors: result.errors, serverCPU: result.serverCPU,
                serverMicrosecondsPerOperation: microsecondsPerOperation(result), peakRSSBytes: result.peakRSS, cryptoCeiling: ceiling, target: target)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(Document(cores: cores, coldStartMilliseconds: coldStart, idleRSSBytes: idleRSS, crypto: crypto, scenarios: rows))
    }
}
