import Foundation
import LatchTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The well-known documents through `latch serve`'s connections, where the fast path answers them on the event loop:
/// the same bytes as the router, HTTP/1.1's order, HTTP/1.0's close, and the idle timeout. Loopback only, bounded.
@Suite("Well-known documents, live", .serialized)
struct WellKnownLiveTests {
    /// The answers in `text`, split at each status line: (status line, lower-cased head, body).
    static func answers(_ text: String) -> [(status: String, head: String, body: String)] {
        text.components(separatedBy: "HTTP/1.1 ").dropFirst().map { answer in
            let parts = answer.components(separatedBy: "\r\n\r\n")
            let head = parts[0]
            return (head.components(separatedBy: "\r\n")[0], head.lowercased(), parts.dropFirst().joined(separator: "\r\n\r\n"))
        }
    }

    @Test("Pipelined with routed requests, the documents come back in order; each equals the router's answer (a request with a Connection header goes through the router); HTTP/1.0 closes after its answer")
    func orderAndSameBytes() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let server = try await SlowClientTests.server(directory)
        let paths = ["/.well-known/jwks.json", "/.well-known/openid-configuration", "/.well-known/oauth-authorization-server"]

        // Five requests in one write: a refused token request (the router), two documents, a HEAD, a health probe.
        // The connection then idles and the server closes it (2 s), which ends the read.
        let mixed = try RawConnection(port: server.port)
        mixed.send(
            "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 14\r\n\r\ngrant_type=bad"
                + "GET \(paths[0]) HTTP/1.1\r\nHost: x\r\n\r\nGET \(paths[1])?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "HEAD \(paths[2]) HTTP/1.1\r\nHost: x\r\n\r\nGET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        let pipelined = mixed.startReading(limit: 30)

        // Each document as HTTP/1.0 (the fast path; the connection closes after the answer) and as HTTP/1.1 with
        // Connection: close (the router, which closes too): both carry Connection: close from the connection guard.
        var reads: [(path: String, fast: PendingRead, routed: PendingRead)] = []
        var connections: [RawConnection] = []
        for path in paths {
            let plain = try RawConnection(port: server.port)
            plain.send("GET \(path) HTTP/1.0\r\n\r\n")
            let routed = try RawConnection(port: server.port)
            routed.send("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            connections += [plain, routed]
            reads.append((path, plain.startReading(limit: 30), routed.startReading(limit: 30)))
        }

        let all = Self.answers(await pipelined.result.text)
        #expect(all.map(\.status) == ["400 Bad Request", "200 OK", "200 OK", "200 OK", "200 OK"], "\(all.map(\.status))")
        if all.count == 5 {
            #expect(all[0].body.contains("unsupported_grant_type"))
            #expect(all[1].body.contains(#"{"keys":["#))
            #expect(all[2].body.contains(#""issuer":"#))
            #expect(all[3].body.isEmpty && all[3].head.contains("content-length: \(all[2].body.utf8.count)"))
            #expect(all[4].body.contains(#""status":"ok""#))
        }
        for (index, (path, plain, routed)) in reads.enumerated() {
            let (fastText, fastClosed) = await plain.result
            let fast = Self.answers(fastText)
            let slow = Self.answers(await routed.result.text)
            #expect(fast.count == 1 && slow.count == 1)
            guard let fast = fast.first, let slow = slow.first else { continue }
            #expect(fast.status == "200 OK" && fast.body == slow.body && fast.body.hasSuffix("}\n"), "\(path)")
            // The same fields in the same order, Date aside (it may tick between the two).
            let fields = { (head: String) in head.split(separator: "\r\n").dropFirst().filter { !$0.hasPrefix("date:") } }
            #expect(fields(fast.head) == fields(slow.head), "\(path): \(fast.head) vs \(slow.head)")
            #expect(fast.head.contains("date: ") && fast.head.contains("server: latch") && fast.head.contains("connection: close"))
            // Closed after the answer, not by the 2 s idle timeout (one bound, with the margin the slow-client tests use).
            if index == 0 { #expect((fastClosed ?? 99) < 1.9, "HTTP/1.0 stayed open \(fastClosed ?? -1) s") }
        }
        // The handler was installed (else the server says so once, and every answer above came from the router).
        #expect(!server.log.contains("fast path not installed"), "\(server.log)")
        #expect(try await server.terminate() == 0)
    }

    @Test("A connection that only asks for documents stays open while it keeps asking: Hummingbird's idle timeout sees those requests too")
    func busyConnectionStaysOpen() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // Idle 2 s at the connection guard; Hummingbird's own idle timeout is idle + body = 4 s.
        let server = try await SlowClientTests.server(directory)
        let connection = try RawConnection(port: server.port)
        // Twelve requests 0.5 s apart (6 s, past the 4 s), each answer awaited (however slow), on a thread of its own so
        // the gaps hold.
        let outcome = PendingRead()
        Thread {
            var received = ""
            var buffer = [UInt8](repeating: 0, count: 4096)
            for index in 1...12 {
                connection.send("GET /.well-known/jwks.json HTTP/1.1\r\nHost: x\r\n\r\n")
                let started = Date()
                while received.components(separatedBy: "HTTP/1.1 200").count - 1 < index {
                    var poller = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&poller, 1, 1000)
                    guard Date().timeIntervalSince(started) < 30, ready >= 0 else {
                        outcome.fulfil(("request \(index): no answer within 30 s; received \(received.count) bytes", nil))
                        return
                    }
                    if ready == 0 { continue }
                    let count = read(connection.fd, &buffer, buffer.count)
                    guard count > 0 else {
                        outcome.fulfil(("request \(index): the server closed the connection", Date().timeIntervalSince(connection.opened)))
                        return
                    }
                    received += String(decoding: buffer[0..<count], as: UTF8.self)
                }
                usleep(500_000)
            }
            outcome.fulfil(("12 answers", nil))
        }.start()
        let (text, closedAfter) = await outcome.result
        #expect(text == "12 answers" && closedAfter == nil, "\(text), closed after \(closedAfter ?? -1) s")
        #expect(try await server.terminate() == 0)
    }
}
