import Foundation
import LatchTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A raw TCP connection to a loopback port, for clients no HTTP library would play: silent, slow, half-sent.
/// Used by one test at a time; its reads run on a thread of their own while that test awaits them.
final class RawConnection: @unchecked Sendable {
    let fd: Int32
    let opened = Date()

    init(port: Int) throws { fd = try Self.connected(port: port) }

    /// A socket connected to `port`; closed here when the connection fails (the object, and its deinit, never
    /// exist then: a second close would close a descriptor the process has reused).
    private static func connected(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ProcessFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let failure = errno
            close(fd)
            throw ProcessFailure("connect: errno \(failure)")
        }
        return fd
    }

    deinit { close(fd) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }

    /// Reads until the server closes, at most `limit` seconds: what arrived, and how long after the connection was
    /// opened it closed (nil: still open). The read blocks — it must see the answer the moment it arrives, before a
    /// reset can discard it, and time the close as it happens — so it runs on a thread of its own: a blocked
    /// cooperative-pool thread is one of the suite's few (two on CI), and every other test would wait with it.
    func readUntilClosed(limit: Double) async -> (text: String, seconds: Double?) {
        await startReading(limit: limit).result
    }

    /// Starts reading now, on a thread of its own; the result is awaited later. Reads of several connections started
    /// together each time their own close, however late the test gets to await them (under the whole suite on 2 cores
    /// a test task once waited 20 s for a pool thread between two reads).
    func startReading(limit: Double) -> PendingRead {
        let pending = PendingRead()
        Thread { pending.fulfil(self.blockingReadUntilClosed(limit: limit)) }.start()
        return pending
    }

    private func blockingReadUntilClosed(limit: Double) -> (text: String, seconds: Double?) {
        let started = Date()
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date().timeIntervalSince(started) < limit {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 100)
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { return (String(decoding: received, as: UTF8.self), Date().timeIntervalSince(opened)) }
            received += buffer[0..<count]
        }
        return (String(decoding: received, as: UTF8.self), nil)
    }
}

/// A read running on its own thread; `result` waits for it without blocking a thread.
final class PendingRead: @unchecked Sendable {
    typealias Value = (text: String, seconds: Double?)
    private let lock = NSLock()
    private var value: Value?
    private var waiter: CheckedContinuation<Value, Never>?

    func fulfil(_ value: Value) {
        lock.lock()
        if let waiter {
            self.waiter = nil
            lock.unlock()
            waiter.resume(returning: value)
        } else {
            self.value = value
            lock.unlock()
        }
    }

    var result: Value {
        get async {
            await withCheckedContinuation { continuation in
                lock.lock()
                if let value {
                    lock.unlock()
                    continuation.resume(returning: value)
                } else {
                    waiter = continuation
                    lock.unlock()
                }
            }
        }
    }
}

/// Slow and silent clients (slowloris) against `latch serve` with short limits: bounded in count (≤ 40
/// connections) and time (each wait ≤ 6 s), loopback only.
@Suite("Slow clients", .serialized)
struct SlowClientTests {
    static func server(_ directory: TemporaryDirectory) async throws -> LatchServer {
        let server = try LatchServer(
            dataDirectory: directory.path + "/data", port: try freePort(),
            environment: [
                "LATCH_HTTP_HEADER_TIMEOUT": "1", "LATCH_HTTP_BODY_TIMEOUT": "2", "LATCH_HTTP_IDLE_TIMEOUT": "2",
                "LATCH_HTTP_MAX_CONNECTIONS": "16",
            ])
        try await server.waitUntilListening()
        return server
    }

    @Test("Silent, half-sent head, half-sent body: 408 and closed on time; an idle keep-alive connection closes; HTTP/1.0 closes after its answer")
    func deadlines() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let server = try await Self.server(directory)

        let silent = try RawConnection(port: server.port)
        let partialHead = try RawConnection(port: server.port)
        partialHead.send("GET /health/live HTTP/1.1\r\nHost: x\r\n")
        let partialBody = try RawConnection(port: server.port)
        partialBody.send("POST /v1/registrations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"a\"")
        let idle = try RawConnection(port: server.port)
        idle.send("GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        let old = try RawConnection(port: server.port)
        old.send("GET /health/live HTTP/1.0\r\n\r\n")

        // Every read starts now, so each times its own close.
        let reads = [silent, partialHead, partialBody].map { $0.startReading(limit: 6) }
        let idleRead = idle.startReading(limit: 6)
        let oldAnswer = await old.readUntilClosed(limit: 6)
        #expect(oldAnswer.text.contains("200 OK") && oldAnswer.text.lowercased().contains("connection: close"), "\(oldAnswer.text)")
        // Closed after its answer, not by the 2 s idle timeout (the margin is for a loaded 2-core CI machine).
        #expect((oldAnswer.seconds ?? 99) < 1.9, "HTTP/1.0 stayed open \(oldAnswer.seconds ?? -1) s")
        // Closed after their timeout (head 1 s, body 2 s from the head), not before, and not much after.
        for (name, read, least) in [("silent", reads[0], 0.9), ("partial head", reads[1], 0.9), ("partial body", reads[2], 1.9)] {
            let (text, seconds) = await read.result
            #expect(text.hasPrefix("HTTP/1.1 408") && text.contains("request_timeout"), "\(name): \(text)")
            // (No force unwrap: #expect evaluates each operand of && on its own.)
            #expect((seconds ?? -1) >= least && (seconds ?? 99) < 6, "\(name) closed after \(seconds ?? -1) s")
        }
        // Oversized heads are refused at once with 431: a field over 8 KiB, over 100 fields, or over 16 KiB in all.
        for head in [
            "X-Big: " + String(repeating: "a", count: 9000) + "\r\n", (0..<150).map { "X-F\($0): 1\r\n" }.joined(),
            (0..<5).map { "X-F\($0): " + String(repeating: "b", count: 4000) + "\r\n" }.joined(),
        ] {
            let big = try RawConnection(port: server.port)
            big.send("GET /health/live HTTP/1.1\r\nHost: x\r\n" + head + "\r\n")
            let (text, seconds) = await big.readUntilClosed(limit: 3)
            // 431 at once, not 408 at the 1 s header timeout (the status tells them apart; the bound catches a hang).
            #expect(text.hasPrefix("HTTP/1.1 431") && text.contains("headers_too_large") && (seconds ?? 99) < 3, "\(text)")
        }
        let (text, seconds) = await idleRead.result
        #expect(text.contains("200 OK") && !text.contains("408"), "\(text)")
        #expect(seconds != nil, "the idle keep-alive connection stayed open")
        #expect(try await server.terminate() == 0)
    }

    @Test("Pipelining (RFC 9112 §9.3.2): requests are answered in order; once a request behind another asks Connection: close, the answer in progress carries Connection: close, the connection ends and what was sent behind it is not answered")
    func pipelining() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let server = try await Self.server(directory)
        // Two GETs in one write: two answers, in order, and the connection stays open.
        let gets = try RawConnection(port: server.port)
        gets.send("GET /health/live HTTP/1.1\r\nHost: x\r\n\r\nGET /.well-known/jwks.json HTTP/1.1\r\nHost: x\r\n\r\n")
        let both = await gets.readUntilClosed(limit: 1)
        let answers = both.text.components(separatedBy: "HTTP/1.1 ").dropFirst()
        #expect(answers.count == 2 && answers.first?.contains(#""status":"ok""#) == true && answers.last?.contains(#""keys""#) == true, "\(both.text)")
        #expect(both.seconds == nil && !both.text.lowercased().contains("connection: close"), "\(both)")
        // The last of three asks to close: only the first is answered, with Connection: close, and the connection ends.
        let closing = try RawConnection(port: server.port)
        closing.send(
            "GET /health/live HTTP/1.1\r\nHost: x\r\n\r\nGET /.well-known/jwks.json HTTP/1.1\r\nHost: x\r\n\r\n"
                + "GET /health/ready HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let (text, seconds) = await closing.readUntilClosed(limit: 5)
        #expect(text.hasPrefix("HTTP/1.1 200") && text.contains(#""status":"ok""#) && text.lowercased().contains("connection: close"), "\(text)")
        #expect(text.components(separatedBy: "HTTP/1.1 ").count == 2 && !text.contains(#""keys""#), "\(text)")
        // Closed with the answer, not by the 2 s idle timeout.
        #expect((seconds ?? 99) < 1.9, "the connection stayed open \(seconds ?? -1) s")
        #expect(try await server.terminate() == 0)
    }

    @Test("Past http.maxConnections new connections are closed and logged; once silent ones time out, others are served")
    func connectionCap() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let server = try await Self.server(directory)
        // Below the cap, a silent crowd does not stop a real client.
        var crowd = try (0..<10).map { _ in try RawConnection(port: server.port) }
        let served = try RawConnection(port: server.port)
        served.send("GET /health/live HTTP/1.0\r\n\r\n")
        let answer = await served.readUntilClosed(limit: 3)
        #expect(answer.text.contains("200 OK") && (answer.seconds ?? 99) < 0.9, "\(answer)")
        // Past it: 30 more; the ones over 16 are closed at once.
        crowd += try (0..<30).map { _ in try RawConnection(port: server.port) }
        try await Task.sleep(for: .milliseconds(500))
        #expect(server.log.contains("connection limit reached"), "\(server.log)")
        // Within the header timeout every silent one is gone, and the server answers again.
        let started = Date()
        var answered = false
        while !answered, Date().timeIntervalSince(started) < 6 {
            let probe = try RawConnection(port: server.port)
            probe.send("GET /health/live HTTP/1.0\r\n\r\n")
            answered = await probe.readUntilClosed(limit: 1).text.contains("200 OK")
        }
        #expect(answered, "not served within 6 s")
        for connection in crowd { #expect(await connection.readUntilClosed(limit: 3).seconds != nil) }
        #expect(try await server.terminate() == 0)
    }

    @Test("A client connecting while the server starts is answered or refused, never left waiting (20 starts)")
    func startUp() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        for start in 0..<20 {
            let port = try freePort()
            let server = try LatchServer(dataDirectory: directory.path + "/data-\(start)", port: port, environment: ["LATCH_ADMIN_TOKEN": LiveServerTests.adminToken])
            let began = Date()
            var answered = false
            // Poll as a load balancer's health check would, every 2 ms, for at most 10 s.
            while !answered, Date().timeIntervalSince(began) < 10 {
                guard let connection = try? RawConnection(port: port) else {
                    try await Task.sleep(for: .milliseconds(2))
                    continue
                }
                connection.send("GET /health/live HTTP/1.0\r\n\r\n")
                let (text, closed) = await connection.readUntilClosed(limit: 5)
                #expect(closed != nil, "start \(start): a connection made during start-up got no answer and was not closed")
                answered = text.contains("200 OK")
            }
            #expect(answered, "start \(start): not serving within 10 s")
            let status = try await server.terminate()
            #expect(status == 0, "start \(start): exit status \(status); log: \(server.log.suffix(3000))")
        }
    }
}
