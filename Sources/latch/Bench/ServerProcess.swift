import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The `latch serve` children started by the benchmark — one, or `--replicas N` on one PostgreSQL database, each on its
/// own port with its own data folder, sharing the key-encryption key and the issuer — with their CPU time and memory
/// read from /proc.
final class ServerProcess {
    let processes: [Process]
    /// The first replica's port (where the benchmark prepares its data) and every replica's.
    let port: Int
    let ports: [Int]
    let directory: String
    /// Milliseconds from spawn to the first answered request (of the slowest replica).
    private(set) var coldStartMilliseconds: Double = 0

    init(
        executable: String, ports: [Int], directory: String, adminToken: String, database: String? = nil, environment extra: [String: String] = [:]
    ) throws {
        precondition(!ports.isEmpty && (ports.count == 1 || database != nil), "replicas share a PostgreSQL database")
        self.port = ports[0]
        self.ports = ports
        self.directory = directory
        var environment = ProcessInfo.processInfo.environment
        environment["LATCH_ADMIN_TOKEN"] = adminToken
        environment["LATCH_LOG_LEVEL"] = "warning"
        // The load comes from one address on purpose.
        environment["LATCH_RATE_LIMIT_PER_MINUTE"] = "0"
        if ports.count > 1 {
            // Replicas of one deployment: one key-encryption key, one issuer (tokens from one verify at every other).
            var key = [UInt8](repeating: 0, count: 32)
            for index in key.indices { key[index] = UInt8.random(in: 0...255) }
            environment["LATCH_KEYS_ENCRYPTION_KEY"] = Data(key).base64EncodedString()
        }
        // The load generator calls 127.0.0.1 (DPoP proofs name that URL); the default issuer would be localhost.
        environment["LATCH_ISSUER"] = "http://127.0.0.1:\(ports[0])"
        environment.merge(extra) { _, new in new }
        let started = LoadRunner.now()
        var processes: [Process] = []
        for (index, port) in ports.enumerated() {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments =
                ["serve", "--port", "\(port)", "--data-dir", directory + (index == 0 ? "/data" : "/data-\(index)")]
                + (database.map { ["--database", $0] } ?? [])
            process.environment = environment
            process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
            try process.run()
            processes.append(process)
            // The first migrates the database; the others start once it is up and find it migrated.
            if index == 0 { try Self.waitUntilLive(process, port: port, started: started, all: processes) }
        }
        self.processes = processes
        for (process, port) in zip(processes, ports) { try Self.waitUntilLive(process, port: port, started: started, all: processes) }
        coldStartMilliseconds = (LoadRunner.now() - started) * 1000
    }

    /// Polls /health/live (bounded: 30 s from `started`); stops them all when a replica does not come up.
    private static func waitUntilLive(_ process: Process, port: Int, started: Double, all: [Process]) throws {
        while LoadRunner.now() - started < 30 {
            if let connection = try? BenchConnection(host: "127.0.0.1", port: port),
                let (status, _) = try? connection.send("GET", "/health/live"), status == 200
            {
                return
            }
            guard process.isRunning else {
                all.forEach(Self.stop)
                throw BenchConnection.Failure(description: "latch serve exited during start")
            }
            usleep(2000)
        }
        all.forEach(Self.stop)
        throw BenchConnection.Failure(description: "latch serve did not answer within 30 s")
    }

    /// The port worker `worker` sends to when a scenario targets `port`: replicas take connections in turn.
    func port(for worker: Int, target: Int) -> Int {
        target == port ? ports[worker % ports.count] : target
    }

    /// User + system CPU seconds the servers have used.
    func cpuSeconds() -> Double {
        processes.reduce(0) { $0 + Self.cpuSeconds($1.processIdentifier) }
    }

    private static func cpuSeconds(_ pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command name: state is field 3, utime 14, stime 15 (1-based in proc(5)).
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    private func status(_ field: String) -> Int? {
        var total: Int?
        for process in processes {
            guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8) else { continue }
            for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
                if let value = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") {
                    total = (total ?? 0) + value * 1024
                }
            }
        }
        return total
    }

    /// Resident set size now, bytes (all replicas together).
    func rss() -> Int? { status("VmRSS") }

    /// Peak resident set size since the last reset, bytes (the replicas' peaks added).
    func peakRSS() -> Int? { status("VmHWM") }

    /// Resets the peak (writing 5 to clear_refs), so each scenario reports its own peak.
    func resetPeakRSS() {
        for process in processes {
            _ = FileManager.default.createFile(atPath: "/proc/\(process.processIdentifier)/clear_refs", contents: Data("5".utf8))
        }
    }

    /// SIGTERM, then SIGKILL after 10 s: a server that does not shut down cannot hang the benchmark.
    func stop() {
        processes.forEach(Self.stop)
    }

    private static func stop(_ process: Process) {
        guard process.isRunning else { return }
        process.terminate()
        let asked = LoadRunner.now()
        while process.isRunning && LoadRunner.now() - asked < 10 { usleep(10_000) }
        if process.isRunning {
            FileHandle.standardError.write(Data("latch bench: the server did not stop within 10 s of SIGTERM; killing it\n".utf8))
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }

    deinit { stop() }
}
