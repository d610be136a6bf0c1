import Foundation
import LatchServer
import LatchTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The package root, from this file's path.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// The built `latch` executable: beside the test bundle, or built on demand.
func latchExecutable() throws -> URL {
    var candidates: [URL] = []
    if let bundle = Bundle.main.executableURL?.deletingLastPathComponent() { candidates.append(bundle.appendingPathComponent("latch")) }
    candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("latch"))
    candidates.append(packageRoot.appendingPathComponent(".build/debug/latch"))
    if let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) { return found }
    throw ProcessFailure("the latch executable was not found next to the tests; run `swift build` first")
}

struct ProcessFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A free TCP port on 127.0.0.1.
func freePort() throws -> Int { try LoopbackPort.free() }

/// A `latch serve` child process on loopback.
final class LatchServer: Sendable {
    let process: ChildProcess
    let port: Int
    let output: URL
    var base: String { "http://127.0.0.1:\(port)" }

    /// `defaultIssuer`: leave the issuer unconfigured (`http://localhost:<port>`); otherwise it is `base`.
    init(dataDirectory: String, port: Int, environment: [String: String] = [:], defaultIssuer: Bool = false) throws {
        self.port = port
        output = URL(fileURLWithPath: dataDirectory + "-\(port).log")
        process = try ChildProcess(
            executable: try latchExecutable().path, arguments: ["serve", "--port", "\(port)", "--data-dir", dataDirectory],
            // Tests call 127.0.0.1 (DPoP proofs and browser origins name the URL called); the default issuer would
            // be http://localhost:<port> (tested on its own in CommandLineTests).
            environment: ProcessInfo.processInfo.environment.merging(
                (defaultIssuer ? [:] : ["LATCH_ISSUER": "http://127.0.0.1:\(port)"]).merging(environment) { _, new in new }
            ) { _, new in new }, outputPath: output.path)
    }

    /// Waits (at most `timeout` seconds) for the "listening" line.
    func waitUntilListening(timeout: Double = 120) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if log.contains("latch listening on") { return }
            guard process.isRunning else { throw ProcessFailure("latch exited: \(log)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessFailure("latch did not start within \(timeout) s: \(log)")
    }

    var log: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }

    /// SIGKILL: no chance to flush anything.
    func kill9() async {
        process.signal(SIGKILL)
        _ = await process.waitForExit(timeout: 10)
    }

    /// SIGTERM, then waits (bounded) for the exit status.
    func terminate(timeout: Double = 60) async throws -> Int32 {
        process.signal(SIGTERM)
        guard let status = await process.waitForExit(timeout: timeout) else {
            await kill9()
            throw ProcessFailure("latch did not stop within \(timeout) s after SIGTERM")
        }
        return status
    }
}

/// Runs a command to completion (bounded), returning exit status and combined output.
func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:], timeout: Double = 120) async throws -> (Int32, String) {
    try await ChildProcess.run(
        executable, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new }, timeout: timeout)
}
