import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A `latch serve` child started by the benchmark, with its CPU time and memory read from /proc.
final class ServerProcess {
    let process = Process()
    let port: Int
    let directory: String
    /// Milliseconds from spawn to the first answered request.
    private(set) var coldStartMilliseconds: Double = 0

    init(executable: String, port: Int, directory: String, adminToken: String, database: String? = nil, environment extra: [String: String] = [:]) throws {
        self.port = port
        self.directory = directory
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["serve", "--port", "\(port)", "--data-dir", directory + "/data"] + (database.map { ["--database", $0] } ?? [])
        var environment = ProcessInfo.processInfo.environment
        environment["LATCH_ADMIN_TOKEN"] = adminToken
        environment["LATCH_LOG_LEVEL"] = "warning"
        // The load comes from one address on purpose.
        environment["LATCH_RATE_LIMIT_PER_MINUTE"] = "0"
        environment.merge(extra) { _, new in new }
        process.environment = environment
        process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        let started = LoadRunner.now()
        try process.run()
        // Poll /health/live (bounded: 30 s).
        while LoadRunner.now() - started < 30 {
            if let connection = try? BenchConnection(host: "127.0.0.1", port: port),
                let (status, _) = try? connection.send("GET", "/health/live"), status == 200
            {
                coldStartMilliseconds = (LoadRunner.now() - started) * 1000
                return
            }
            guard process.isRunning else { throw BenchConnection.Failure(description: "latch serve exited during start") }
            usleep(2000)
        }
        stop()
        throw BenchConnection.Failure(description: "latch serve did not answer within 30 s")
    }

    /// User + system CPU seconds the server has used.
    func cpuSeconds() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // After the command name: state is field 3, utime 14, stime 15 (1-based in proc(5)).
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    private func status(_ field: String) -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(field + ":") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "").map { $0 * 1024 }
        }
        return nil
    }

    /// Resident set size now, bytes.
    func rss() -> Int? { status("VmRSS") }

    /// Peak resident set size since the last reset, bytes.
    func peakRSS() -> Int? { status("VmHWM") }

    /// Resets the peak (writing 5 to clear_refs), so each scenario reports its own peak.
    func resetPeakRSS() {
        _ = FileManager.default.createFile(atPath: "/proc/\(process.processIdentifier)/clear_refs", contents: Data("5".utf8))
    }

    /// SIGTERM, then SIGKILL after 10 s: a server that does not shut down cannot hang the benchmark.
    func stop() {
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
