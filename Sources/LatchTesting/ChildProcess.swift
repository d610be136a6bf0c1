import Foundation
import LatchModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, for tests that run `latch`, `psql` or scripts.
///
/// Not Foundation's `Process`: on Linux its `run()` (swift-corelibs-foundation as shipped with Swift 6.3.1)
/// copies whole 256-byte `d_name` fields while listing `/proc/self/fd` and crashes now and then when a short
/// directory entry ends a page (fixed upstream in swift-corelibs-foundation PR 5472). A test suite that starts
/// processes in parallel met it about one run in five.
///
/// The child gets the given environment, stdin from `/dev/null`, stdout written to `outputPath` (from its start),
/// stderr there too or to `errorPath` when one is given, and none of the parent's other descriptors (where the C
/// library can close them: glibc 2.34+).
///
/// Waiting for a child never blocks a thread: tests run on Swift's cooperative pool, which has one thread per core
/// (two on CI), and a test blocked in `waitpid` or a pipe read holds back every other test's servers and clients.
public final class ChildProcess: Sendable {
    public let pid: pid_t
    private let status = Locked<Int32?>(nil)

    public init(
        executable: String, arguments: [String], environment: [String: String], outputPath: String, errorPath: String? = nil
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        if let errorPath {
            posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        } else {
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        Self.closeFrom(3, in: &actions)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, nil, argv, envp)
        guard result == 0 else { throw SpawnError(description: "posix_spawn \(executable): \(String(cString: strerror(result)))") }
        self.pid = pid
    }

    /// Runs `executable` to completion (at most `timeout` seconds): its exit status and output.
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        timeout: Double = 120
    ) async throws -> (status: Int32, output: String) {
        let output = NSTemporaryDirectory() + "latch-run-\(UUID().uuidString).log"
        defer { unlink(output) }
        let child = try ChildProcess(executable: executable, arguments: arguments, environment: environment, outputPath: output)
        guard let status = await child.waitForExit(timeout: timeout) else {
            child.signal(SIGKILL)
            _ = await child.waitForExit(timeout: 5)
            throw SpawnError(description: "\(executable) \(arguments) timed out after \(timeout) s: \(Self.read(output).suffix(2000))")
        }
        return (status, Self.read(output))
    }

    /// Runs `executable` to completion (at most `timeout` seconds) with stderr discarded: its exit status and the
    /// bytes it wrote to stdout, unchanged.
    public static func runCapturingStandardOutput(
        _ executable: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        timeout: Double = 120
    ) async throws -> (status: Int32, output: [UInt8]) {
        let output = NSTemporaryDirectory() + "latch-run-\(UUID().uuidString).out"
        defer { unlink(output) }
        let child = try ChildProcess(
            executable: executable, arguments: arguments, environment: environment, outputPath: output, errorPath: "/dev/null")
        guard let status = await child.waitForExit(timeout: timeout) else {
            child.signal(SIGKILL)
            _ = await child.waitForExit(timeout: 5)
            throw SpawnError(description: "\(executable) \(arguments) timed out after \(timeout) s")
        }
        return (status, Array((try? Data(contentsOf: URL(fileURLWithPath: output))) ?? Data()))
    }

    static func read(_ path: String) -> String {
        (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }

    /// The exit status (the signal number + 128 when a signal ended it), or nil while it runs.
    public var exitStatus: Int32? {
        status.withLock { known in
            if let known { return known }
            var raw: Int32 = 0
            guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
            // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import as functions.
            let signal = raw & 0x7F
            known = signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
            return known
        }
    }

    public var isRunning: Bool { exitStatus == nil }

    public func signal(_ signal: Int32) {
        if isRunning { kill(pid, signal) }
    }

    /// Polls for the exit (every 20 ms, at most `timeout` seconds); nil when it is still running.
    public func waitForExit(timeout: Double) async -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let exitStatus { return exitStatus }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return exitStatus
    }

    deinit {
        if exitStatus == nil {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
        }
    }

    /// `posix_spawn_file_actions_addclosefrom_np` (glibc 2.34+), found at run time: the headers hide it behind
    /// `_GNU_SOURCE`. Without it the child inherits the parent's open descriptors.
    private static func closeFrom(_ descriptor: Int32, in actions: inout posix_spawn_file_actions_t) {
        #if canImport(Glibc)
        typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return }
        _ = unsafeBitCast(symbol, to: AddCloseFrom.self)(&actions, descriptor)
        #endif
    }
}

/// A child process could not be started, or did not finish in time.
public struct SpawnError: Error, CustomStringConvertible {
    public let description: String
}
