import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An executable of this package (an example app) running as a child process on 127.0.0.1, on a port of its choosing:
/// started with `environment`, it must print `listening on <port>` as its first line. Built by
/// `swift build --build-tests`.
public final class ExampleProcess: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let process: ChildProcess
    /// Its standard output and error.
    public let output: String
    public let port: Int
    /// `http://127.0.0.1:<port>/`.
    public var url: String { "http://127.0.0.1:\(port)/" }

    /// Starts `name` with `environment` and waits (≤ 120 s: the whole suite starts processes at once on 2 cores) for its
    /// first line, `listening on <port>`.
    public init(_ name: String, environment: [String: String], output: String) async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var candidates: [URL] = []
        if let bundle = Bundle.main.executableURL?.deletingLastPathComponent() { candidates.append(bundle.appendingPathComponent(name)) }
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name))
        candidates.append(root.appendingPathComponent(".build/debug/\(name)"))
        guard let executable = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw Failure(description: "the \(name) executable was not found; run `swift build --build-tests` first")
        }
        var environment = environment
        environment["PATH"] = ProcessInfo.processInfo.environment["PATH"]
        self.output = output
        // Killed by its deinit when this throws.
        let child = try ChildProcess(executable: executable.path, arguments: [], environment: environment, outputPath: output)
        let deadline = Date().addingTimeInterval(120)
        var port: Int?
        while Date() < deadline, port == nil {
            let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if let newline = log.firstIndex(of: "\n") {
                let first = log[..<newline]
                guard first.hasPrefix("listening on "), let number = Int(first.dropFirst("listening on ".count)), number > 0 else {
                    throw Failure(description: "\(name)'s first line is not `listening on <port>`: \(log.prefix(2000))")
                }
                port = number
            } else {
                guard child.isRunning else { throw Failure(description: "\(name) exited: \(log.prefix(2000))") }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        guard let port else { throw Failure(description: "\(name) did not start within 120 s") }
        self.port = port
        process = child
    }

    /// SIGTERM, then (bounded) SIGKILL: the exit status.
    public func stop() async -> Int32? {
        process.signal(SIGTERM)
        if let status = await process.waitForExit(timeout: 15) { return status }
        process.signal(SIGKILL)
        return await process.waitForExit(timeout: 5)
    }
}

/// One of the example custom-registration hooks (`Examples/InvitationHook`, `Examples/SMSHook`) as a child process.
public final class ExampleHookProcess: Sendable {
    public let example: ExampleProcess
    public let secret: String
    public var port: Int { example.port }
    public var url: String { example.url }
    public var output: String { example.output }
    public var process: ChildProcess { example.process }

    /// Starts `name` with `HOOK_SECRET`, `HOOK_HOST=127.0.0.1`, `HOOK_PORT=0` and `environment`.
    public init(_ name: String, secret: String, environment: [String: String] = [:], output: String) async throws {
        self.secret = secret
        example = try await ExampleProcess(
            name, environment: environment.merging(["HOOK_SECRET": secret, "HOOK_PORT": "0", "HOOK_HOST": "127.0.0.1"]) { _, new in new },
            output: output)
    }

    public func stop() async -> Int32? { await example.stop() }
}
