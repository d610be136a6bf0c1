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
        let mixed = try RawConnection(port: server.port)
        mixed.send(
            "POST /oauth2/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 14\r\n\r\ngrant_type=bad"
                + "GET \(paths[0]) HTTP/1.1\r\nHost: x\r\n\r\nGET \(paths[1])?x=1 HTTP/1.1\r\nHost: x\r\n\r\n"
                + "HEAD \(paths[2]) HTTP/1.1\r\nHost: x\r\n\r\nGET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")
        let all = Self.answers(await mixed.readUntilClosed(limit: 1.5).text)
        #expect(all.map(\.status) == ["400 Bad Request", "200 OK", "200 OK", "200 OK", "200 OK"], "\(all.map(\.status))")
        if all.count == 5 {
            #expect(all[0].body.contains("unsupported_grant_type"))
            #expect(all[1].body.contains(#"{"keys":["#))
            #expect(all[2].body.contains(#""issuer":"#))
            #expect(all[3].body.isEmpty && all[3].head.contains("content-length: \(all[2].body.utf8.count)"))
            #expect(all[4].body.contains(#""status":"ok""#))
        }

        // Each document, once as plain GET (the fast path) and once with Connection: keep-alive (the router).
        var reads: [(path: String, fast: PendingRead, routed: PendingRead)] = []
        var connections: [RawConnection] = []
        for path in paths {
            let plain = try RawConnection(port: server.port)
            plain.send("GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n")
            let routed = try RawConnection(port: server.port)
            routed.send("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
            connections += [plain, routed]
            reads.append((path, plain.startReading(limit: 1), routed.startReading(limit: 1)))
        }
        for (path, plain, routed) in reads {
            let fast = Self.answers(await plain.result.text)
            let slow = Self.answers(await routed.result.text)
            #expect(fast.count == 1 && slow.count == 1)
            guard let fast = fast.first, let slow = slow.first else { continue }
            #expect(fast.body == slow.body && fast.body.hasSuffix("}\n"), "\(path)")
            // The same fields in the same order, Date aside (it may tick between the two).
            let fields = { (head: String) in head.split(separator: "\r\n").dropFirst().filter { !$0.hasPrefix("date:") } }
            #expect(fields(fast.head) == fields(slow.head), "\(path): \(fast.head) vs \(slow.head)")
            #expect(fast.head.contains("date: ") && fast.head.contains("server: latch"))
        }

        // HTTP/1.0 without keep-alive: answered, told Connection: close, and closed (not left to the idle timeout).
        let old = try RawConnection(port: server.port)
        old.send("GET \(paths[0]) HTTP/1.0\r\n\r\n")
        let (text, seconds) = await old.readUntilClosed(limit: 6)
        #expect(text.hasPrefix("HTTP/1.1 200") && text.lowercased().contains("connection: close") && text.contains(#""keys""#), "\(text)")
        #expect((seconds ?? 99) < 1.9, "HTTP/1.0 stayed open \(seconds ?? -1) s")
        #expect(try await server.terminate() == 0)
    }

    @Test("A connection that only asks for documents stays open while it keeps asking: Hummingbird's idle timeout sees those requests too")
    func busyConnectionStaysOpen() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // Idle 2 s at the connection guard; Hummingbird's own idle timeout is idle + body = 4 s.
        let server = try await SlowClientTests.server(directory)
        let connection = try RawConnection(port: server.port)
        // Twelve requests 0.5 s apart (6 s, past the 4 s), each answer awaited, on a thread of its own so the gaps hold.
        let outcome = PendingRead()
        Thread {
            var received = ""
            var buffer = [UInt8](repeating: 0, count: 4096)
            for index in 1...12 {
                connection.send("GET /.well-known/jwks.json HTTP/1.1\r\nHost: x\r\n\r\n")
                let started = Date()
                while received.components(separatedBy: "HTTP/1.1 200").count - 1 < index {
                    var poller = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
                    guard Date().timeIntervalSince(started) < 3, poll(&poller, 1, 3000) > 0 else {
                        outcome.fulfil(("request \(index): no answer within 3 s; received \(received.count) bytes", nil))
                        return
                    }
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
