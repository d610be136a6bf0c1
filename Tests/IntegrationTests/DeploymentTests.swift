import Foundation
import LatchModel
import LatchTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `latch health`, the probe of the container image's `HEALTHCHECK`: exit 0 when the server is ready, 3 (the CLI's
/// "cannot be reached") otherwise, within its timeout, with one line on stderr.
@Suite("latch health")
struct HealthCommandTests {
    @Test("A ready server: exit 0 with --url, and without it at the address LATCH_HTTP_HOST / LATCH_HTTP_PORT give (a wildcard host probed on loopback)")
    func ready() async throws {
        let directory = TemporaryDirectory(prefix: "latch-health")
        defer { directory.remove() }
        let port = try freePort()
        let server = try LatchServer(dataDirectory: directory.path + "/data", port: port)
        do {
            try await server.waitUntilListening()
            let latch = try latchExecutable().path
            let (status, output) = try await run(latch, ["health", "--url", server.base], timeout: 30)
            #expect(status == 0, "\(output)")
            #expect(output.isEmpty, "\(output)")
            let (derived, derivedOutput) = try await run(
                latch, ["health"], environment: ["LATCH_HTTP_HOST": "0.0.0.0", "LATCH_HTTP_PORT": "\(port)"], timeout: 30)
            #expect(derived == 0, "\(derivedOutput)")
        } catch {
            _ = try? await server.terminate()
            throw error
        }
        #expect(try await server.terminate() == 0)
    }

    @Test("--wait: started before the server, it exits 0 once the server is ready; with nothing listening it gives up with exit 3")
    func waitForTheServer() async throws {
        let directory = TemporaryDirectory(prefix: "latch-health")
        defer { directory.remove() }
        let port = try freePort()
        let latch = try latchExecutable().path
        let (gaveUp, gaveUpOutput) = try await run(latch, ["health", "--url", "http://127.0.0.1:\(port)", "--wait", "1"], timeout: 90)
        #expect(gaveUp == 3 && gaveUpOutput.contains("cannot reach the server"), "\(gaveUpOutput)")
        #expect(try await run(latch, ["health", "--wait", "601"], timeout: 30).0 == 2)
        async let probe = run(latch, ["health", "--url", "http://127.0.0.1:\(port)", "--wait", "120"], timeout: 150)
        try await Task.sleep(for: .milliseconds(500))  // the probe is running (and failing) before the server starts
        let server = try LatchServer(dataDirectory: directory.path + "/data", port: port)
        let (status, output) = try await probe
        #expect(status == 0, "\(output)")
        #expect(server.log.contains("latch listening on"), "the probe answered 0 before the server listened: \(server.log)")
        _ = try? await server.terminate()
    }

    @Test("Nothing listening: exit 3 and one line on stderr naming the URL")
    func nothingListening() async throws {
        let port = try freePort()
        let (status, output) = try await run(try latchExecutable().path, ["health", "--url", "http://127.0.0.1:\(port)"], timeout: 30)
        #expect(status == 3, "\(output)")
        let lines = output.split(separator: "\n")
        #expect(lines.count == 1, "\(output)")
        #expect(lines.first?.hasPrefix("error: http://127.0.0.1:\(port)/health/ready: cannot reach the server") == true, "\(output)")
    }

    @Test("A server that accepts the connection but never answers: exit 3 within the timeout, not a hang")
    func silentServer() async throws {
        let listener = try SilentListener()
        let (status, output) = try await run(
            try latchExecutable().path, ["health", "--url", "http://127.0.0.1:\(listener.port)", "--timeout", "1"], timeout: 90)
        // Its own timeout ended it (a hang would be killed at 90 s and throw). No wall-clock bound here: under the
        // whole suite on 2 cores, starting and scheduling the child once took 27–35 s around its 1 s timer.
        #expect(status == 3, "\(output)")
        #expect(output.split(separator: "\n").count == 1 && output.contains("/health/ready"), "\(output)")
    }

    @Test("--wait against a server that never answers: the reason is the last full probe's, not the timeout of a probe cut short by the end of the wait")
    func waitReportsTheLastFullProbe() async throws {
        let listener = try SilentListener()
        let (status, output) = try await run(
            try latchExecutable().path,
            ["health", "--url", "http://127.0.0.1:\(listener.port)", "--timeout", "0.5", "--wait", "1.5"], timeout: 90)
        #expect(status == 3, "\(output)")
        // The probes are cut to what is left of the wait (e.g. 0.3 s); the one line names the full 0.5 s.
        #expect(output.split(separator: "\n").count == 1 && output.contains("no answer within 0.5 s (--timeout)"), "\(output)")
    }

    @Test("Something that is not Latch answering 200: exit 3, not a false ready")
    func notLatch() async throws {
        let listener = try SilentListener()
        // On a thread of its own: its accept and reads block, and a blocked cooperative thread starves the other tests
        // (the whole suite once ran this test's 5 s timeout out, and another test's 1 s one to 27 s).
        let answering = listener.answerOnThread("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        let (status, output) = try await run(
            try latchExecutable().path, ["health", "--url", "http://127.0.0.1:\(listener.port)", "--timeout", "5"], timeout: 30)
        await answering()
        #expect(status == 3, "\(output)")
        #expect(output.contains("not Latch's health status"), "\(output)")
    }

    @Test("A bad flag is a usage error (exit 2)", arguments: [["--url", "ftp://127.0.0.1:1"], ["--timeout", "0"], ["--timeout", "61"]])
    func usage(arguments: [String]) async throws {
        let (status, output) = try await run(try latchExecutable().path, ["health"] + arguments, timeout: 30)
        #expect(status == 2, "\(output)")
    }
}

/// A TCP listener on 127.0.0.1 whose connections the kernel accepts (the backlog) and nobody answers, unless asked.
final class SilentListener: Sendable {
    let descriptor: Int32
    let port: Int

    init() throws {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw ProcessFailure("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(descriptor, 16) == 0 else {
            close(descriptor)
            throw ProcessFailure("bind/listen: \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// ``answerOnce(_:)`` on a thread of its own; the returned function waits (without blocking) until it is done.
    func answerOnThread(_ response: String) -> @Sendable () async -> Void {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [self] in
            answerOnce(response)
            done.signal()
        }
        return {
            while done.wait(timeout: .now()) == .timedOut { try? await Task.sleep(for: .milliseconds(20)) }
        }
    }

    /// Accepts one connection, reads the request head, writes `response` and closes (blocking, at most 10 s for the
    /// connection and 10 s for each read: run it off the cooperative pool, with ``answerOnThread(_:)``).
    func answerOnce(_ response: String) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connection = accept(descriptor, nil, nil)
        guard connection >= 0 else { return }
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var buffer = [UInt8](repeating: 0, count: 4096)
        var head: [UInt8] = []
        while !head.ends(with: Array("\r\n\r\n".utf8)) {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { break }
            head += buffer[0..<count]
        }
        let bytes = Array(response.utf8)
        _ = write(connection, bytes, bytes.count)
        close(connection)
    }

    deinit { close(descriptor) }
}

extension Array where Element: Equatable {
    fileprivate func ends(with suffix: [Element]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}

/// Secrets handed over as files (`LATCH_*_FILE`), as systemd's `LoadCredential` in deploy/latch.service does.
@Suite("Secrets from files")
struct SecretFileServeTests {
    @Test("latch serve takes the admin token and the key-encryption key from the files LATCH_ADMIN_TOKEN_FILE and LATCH_KEYS_ENCRYPTION_KEY_FILE name")
    func serveReadsSecretFiles() async throws {
        let directory = TemporaryDirectory(prefix: "latch-credentials")
        defer { directory.remove() }
        let credentials = directory.path + "/credentials"
        try FileManager.default.createDirectory(atPath: credentials, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let token = "credential-admin-token-0123456789"
        // As `openssl rand -base64 32 > file` writes them: a trailing newline.
        try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: credentials + "/admin-token"))
        try Data((Data((0..<32).map { UInt8(7 * $0) }).base64EncodedString() + "\n").utf8).write(to: URL(fileURLWithPath: credentials + "/kek"))
        let data = directory.path + "/data"
        let port = try freePort()
        let server = try LatchServer(
            dataDirectory: data, port: port,
            environment: ["LATCH_ADMIN_TOKEN_FILE": credentials + "/admin-token", "LATCH_KEYS_ENCRYPTION_KEY_FILE": credentials + "/kek"])
        do {
            try await server.waitUntilListening()
            let (status, _) = try await http("GET", server.base + "/admin/v1/tokens", bearer: token)
            #expect(status == 200)
            let (refused, _) = try await http("GET", server.base + "/admin/v1/tokens", bearer: token + "x")
            #expect(refused == 401)
            // The key came from the file: none was generated in the data folder.
            #expect(!FileManager.default.fileExists(atPath: data + "/master.key"))
            #expect(!server.log.contains(token))
        } catch {
            _ = try? await server.terminate()
            throw error
        }
        #expect(try await server.terminate() == 0)
    }

    @Test("A secret file that cannot be read stops latch serve with exit 2, naming the variable")
    func unreadableSecretFile() async throws {
        let directory = TemporaryDirectory(prefix: "latch-credentials")
        defer { directory.remove() }
        let (status, output) = try await run(
            try latchExecutable().path, ["serve", "--port", "0", "--data-dir", directory.path + "/data"],
            environment: ["LATCH_ADMIN_TOKEN_FILE": directory.path + "/missing"], timeout: 60)
        #expect(status == 2, "\(output)")
        #expect(output.contains("configuration admin.token (environment variable LATCH_ADMIN_TOKEN_FILE) names \(directory.path)/missing, which cannot be read"), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/data"))
    }
}

/// deploy/latch.service: a unit systemd accepts without a warning, hardened.
@Suite("systemd unit")
struct SystemdUnitTests {
    static let systemdAnalyze = "/usr/bin/systemd-analyze"

    // Skipped where systemd's tools are not installed (not Debian or Ubuntu with systemd): the unit cannot be checked there.
    @Test(
        "deploy/latch.service passes systemd-analyze verify with no output, runs latch serve with its secrets as credentials, and is hardened",
        .enabled(if: FileManager.default.isExecutableFile(atPath: systemdAnalyze), "systemd-analyze is not installed: deploy/latch.service is not verified"))
    func verify() async throws {
        let unit = try String(contentsOf: packageRoot.appendingPathComponent("deploy/latch.service"), encoding: .utf8)
        let settings = unit.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("=") }.map(String.init)
        #expect(settings.contains("ExecStart=/usr/local/bin/latch serve"))
        for setting in [
            "NoNewPrivileges=yes", "ProtectSystem=strict", "PrivateTmp=yes", "CapabilityBoundingSet=", "SystemCallFilter=@system-service",
            "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "StateDirectory=latch", "User=latch",
            "LoadCredential=admin-token:/etc/latch/credentials/admin-token", "Environment=LATCH_ADMIN_TOKEN_FILE=%d/admin-token",
            "LoadCredential=key-encryption-key:/etc/latch/credentials/key-encryption-key",
            "Environment=LATCH_KEYS_ENCRYPTION_KEY_FILE=%d/key-encryption-key",
        ] {
            #expect(settings.contains(setting), "deploy/latch.service lacks \(setting)")
        }
        // systemd-analyze verify refuses an ExecStart binary that does not exist: the built latch stands in for
        // /usr/local/bin/latch.
        let directory = TemporaryDirectory(prefix: "latch-unit")
        defer { directory.remove() }
        let copy = directory.path + "/latch.service"
        try Data(unit.replacingOccurrences(of: "ExecStart=/usr/local/bin/latch ", with: "ExecStart=\(try latchExecutable().path) ").utf8)
            .write(to: URL(fileURLWithPath: copy))
        let (status, output) = try await run(Self.systemdAnalyze, ["verify", copy], timeout: 60)
        #expect(status == 0 && output.isEmpty, "systemd-analyze verify: exit \(status): \(output)")
        // The exposure score of systemd's own audit (systemd 250+: --offline): below 2 of 10 ("OK").
        let (_, security) = try await run(Self.systemdAnalyze, ["security", "--offline=yes", "--no-pager", copy], timeout: 60)
        if let line = security.split(separator: "\n").first(where: { $0.contains("Overall exposure level") }) {
            let score = line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }
            #expect(score.map { $0 < 2 } == true, "\(line)")
        } else if !security.contains("unrecognized option") {
            // (Before systemd 250 there is no --offline, and no score for a unit that is not installed.)
            Issue.record("systemd-analyze security gave no exposure level: \(security.suffix(500))")
        }
    }
}
