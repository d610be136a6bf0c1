import Foundation
import LatchServer
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
final class LatchServer: @unchecked Sendable {
    let process = Process()
    let port: Int
    let output: URL
    var base: String { "http://127.0.0.1:\(port)" }

    init(dataDirectory: String, port: Int, environment: [String: String] = [:]) throws {
        self.port = port
        output = URL(fileURLWithPath: dataDirectory + "-\(port).log")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        let handle = try FileHandle(forWritingTo: output)
        process.executableURL = try latchExecutable()
        process.arguments = ["serve", "--port", "\(port)", "--data-dir", dataDirectory]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
    }

    /// Waits (at most `timeout` seconds) for the "listening" line.
    func waitUntilListening(timeout: Double = 30) async throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let log = try? String(contentsOf: output, encoding: .utf8), log.contains("latch listening on") { return }
            guard process.isRunning else { throw ProcessFailure("latch exited: \(log)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ProcessFailure("latch did not start within \(timeout) s: \(log)")
    }

    var log: String { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }

    /// SIGKILL: no chance to flush anything.
    func kill9() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// SIGTERM, then waits (bounded) for the exit status.
    func terminate(timeout: Double = 15) async throws -> Int32 {
        process.terminate()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning {
            guard Date() < deadline else {
                kill9()
                throw ProcessFailure("latch did not stop within \(timeout) s after SIGTERM")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        return process.terminationStatus
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
}

/// Runs a command to completion (bounded), returning exit status and combined output.
func run(_ executable: String, _ arguments: [String], environment: [String: String] = [:], timeout: Double = 120) async throws -> (Int32, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    // Output goes to a file, so a chatty child can never block on a full pipe.
    let log = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("latch-run-\(UUID().uuidString).log")
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    defer { try? FileManager.default.removeItem(at: log) }
    let handle = try FileHandle(forWritingTo: log)
    process.standardOutput = handle
    process.standardError = handle
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning {
        guard Date() < deadline else {
            process.terminate()
            let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw ProcessFailure("\(executable) \(arguments) timed out; output so far: \(output.suffix(2000))")
        }
        try await Task.sleep(for: .milliseconds(50))
    }
    try handle.close()
    return (process.terminationStatus, (try? String(contentsOf: log, encoding: .utf8)) ?? "")
}
