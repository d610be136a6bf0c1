import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A blocking HTTP/1.1 keep-alive connection to a loopback server: the load generator's client.
///
/// Deliberately minimal (one request at a time, `Content-Length` or chunked answers) so that the client costs
/// little CPU next to the server it measures.
final class BenchConnection {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private var fd: Int32 = -1
    private var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    private var start = 0
    private var end = 0
    let host: String
    let port: Int

    /// Refuses anything but a loopback address: load never leaves the machine.
    init(host: String, port: Int) throws {
        guard host == "127.0.0.1" || host == "localhost" else { throw Failure(description: "bench targets loopback only") }
        self.host = "127.0.0.1"
        self.port = port
        try openSocket()
    }

    deinit { if fd >= 0 { close(fd) } }

    private func openSocket() throws {
        if fd >= 0 { close(fd) }
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        // A server that stops answering fails the request after 20 s instead of hanging the benchmark.
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else { throw Failure(description: "connect to \(host):\(port): errno \(errno)") }
        start = 0
        end = 0
    }

    /// Sends one request and reads its answer: status and body.
    func send(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8] = []) throws -> (status: Int, body: [UInt8]) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + body.count)
        bytes += method.utf8
        bytes.append(UInt8(ascii: " "))
        bytes += path.utf8
        bytes += hostLine
        for (name, value) in headers {
            bytes += name.utf8
            bytes += [UInt8(ascii: ":"), UInt8(ascii: " ")]
            bytes += value.utf8
            bytes += [13, 10]
        }
        if !body.isEmpty || method == "POST" {
            bytes += "Content-Length: ".utf8
            bytes += String(body.count).utf8
            bytes += [13, 10]
        }
        bytes += [13, 10]
        bytes += body
        try writeAll(bytes)
        return try readResponse()
    }

    private lazy var hostLine: [UInt8] = Array(" HTTP/1.1\r\nHost: \(host):\(port)\r\n".utf8)

    private func writeAll(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, bytes.count - offset) }
            guard written > 0 else { throw Failure(description: "write: errno \(errno)") }
            offset += written
        }
    }

    private func fill() throws {
        if start == end {
            start = 0
            end = 0
        } else if start > 0 && end == buffer.count {
            buffer.withUnsafeMutableBytes { raw in
                _ = memmove(raw.baseAddress!, raw.baseAddress! + start, end - start)
            }
            end -= start
            start = 0
        }
        if end == buffer.count { buffer += [UInt8](repeating: 0, count: buffer.count) }
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + end, $0.count - end) }
        guard count > 0 else { throw Failure(description: count == 0 ? "connection closed" : "read: errno \(errno)") }
        end += count
    }

    /// Index just past the next CRLF at or after `from`, reading more as needed.
    private func lineEnd(from: Int) throws -> Int {
        var index = from
        while true {
            while index + 1 < end {
                if buffer[index] == 13 && buffer[index + 1] == 10 { return index + 2 }
                index += 1
            }
            let consumed = start
            try fill()
            // fill() may have moved the buffer's contents to the front.
            index -= consumed - start
        }
    }

    private func readBytes(_ count: Int) throws -> [UInt8] {
        while end - start < count { try fill() }
        let bytes = Array(buffer[start..<(start + count)])
        start += count
        return bytes
    }

    /// Parses a decimal number in buffer[from..<to], skipping spaces.
    private func number(_ from: Int, _ to: Int, radix: Int = 10) -> Int {
        var value = 0
        for index in from..<to {
            let byte = buffer[index]
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = value * radix + Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f") where radix == 16: value = value * 16 + Int(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F") where radix == 16: value = value * 16 + Int(byte - UInt8(ascii: "A") + 10)
            case UInt8(ascii: " "): continue
            default: return value
            }
        }
        return value
    }

    private static let contentLength = Array("content-length:".utf8)
    private static let transferEncoding = Array("transfer-encoding:".utf8)

    private func hasPrefix(_ prefix: [UInt8], at index: Int, before limit: Int) -> Bool {
        guard limit - index >= prefix.count else { return false }
        for offset in 0..<prefix.count where buffer[index + offset] | 0x20 != prefix[offset] | 0x20 { return false }
        return true
    }

    private func readResponse() throws -> (status: Int, body: [UInt8]) {
        var next = try lineEnd(from: start)
        // "HTTP/1.1 200 OK"
        guard next - start > 12 else { throw Failure(description: "bad status line") }
        let status = number(start + 9, start + 12)
        start = next
        var length = 0
        var chunked = false
        while true {
            next = try lineEnd(from: start)
            if next - start == 2 {
                start = next
                break
            }
            if hasPrefix(Self.contentLength, at: start, before: next) {
                length = number(start + Self.contentLength.count, next - 2)
            } else if hasPrefix(Self.transferEncoding, at: start, before: next) {
                chunked = true
            }
            start = next
        }
        guard chunked else { return (status, try readBytes(length)) }
        var body: [UInt8] = []
        while true {
            next = try lineEnd(from: start)
            let size = number(start, next - 2, radix: 16)
            start = next
            if size == 0 {
                start = try lineEnd(from: start)
                return (status, body)
            }
            body += try readBytes(size)
            start = try lineEnd(from: start)
        }
    }
}

/// Form-encodes parameters (RFC 3986 unreserved characters pass through; everything else is %-escaped).
func formBody(_ parameters: [(String, String)]) -> [UInt8] {
    let hex = Array("0123456789ABCDEF".utf8)
    var bytes: [UInt8] = []
    for (index, (name, value)) in parameters.enumerated() {
        if index > 0 { bytes.append(UInt8(ascii: "&")) }
        for (offset, part) in [name, value].enumerated() {
            if offset == 1 { bytes.append(UInt8(ascii: "=")) }
            for byte in part.utf8 {
                switch byte {
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                    bytes.append(byte)
                default:
                    bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
                }
            }
        }
    }
    return bytes
}
