import Foundation
import LatchModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Loopback helpers for the benchmark and the tests.
public enum LoopbackPort {
    /// Ports handed out by this process: never twice.
    private static let handedOut = Locked<Set<Int>>([])

    /// A TCP port on 127.0.0.1 that was free a moment ago, for a server about to listen on it.
    ///
    /// Drawn below the kernel's ephemeral range (`ip_local_port_range`), and never the same twice in one process: a
    /// port the kernel picked for `bind(0)` is one it also gives outgoing connections, and in a busy test run one of
    /// those once took it between this call and the server's bind ("Address already in use"). Where the range cannot
    /// be read, or nothing below it binds, the kernel picks.
    public static func free() throws -> Int {
        if let lowest = ephemeralRangeStart(), lowest > 11_000 {
            for _ in 0..<500 {
                let candidate = Int.random(in: 10_000..<lowest)
                guard handedOut.withLock({ $0.insert(candidate).inserted }) else { continue }
                if bindable(candidate) { return candidate }
            }
        }
        return try kernelPicked()
    }

    /// The first port of the kernel's ephemeral range (Linux), if it can be read.
    public static func ephemeralRangeStart() -> Int? {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8) else { return nil }
        return text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first.flatMap { Int($0) }
    }

    /// Whether 127.0.0.1:`port` can be bound right now.
    public static func bindable(_ port: Int) -> Bool {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } } == 0
    }

    /// A port the kernel picks (bound to port 0, read, released).
    static func kernelPicked() throws -> Int {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw LoopbackError(description: "socket failed: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0 else { throw LoopbackError(description: "bind failed: errno \(errno)") }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    struct LoopbackError: Error, CustomStringConvertible {
        let description: String
    }
}
