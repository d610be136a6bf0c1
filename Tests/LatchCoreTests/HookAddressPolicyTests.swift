import Foundation
@testable import LatchCore
import Testing

@Suite("Hook URLs and addresses (SSRF)")
struct HookAddressPolicyTests {
    let strict = HookAddressPolicy(allowPrivateAddresses: false)
    let relaxed = HookAddressPolicy(allowPrivateAddresses: true)

    @Test("Loopback, private, link-local, CGNAT, multicast, reserved, mapped and NAT64 forms are refused by default", arguments: [
        "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
        "0.0.0.0", "224.0.0.1", "240.0.0.1", "255.255.255.255", "198.18.0.1", "192.0.0.8", "::1", "::", "fc00::1", "fd12:3456::1",
        "fe80::1", "fec0::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "0:0:0:0:0:ffff:7f00:1", "2001:db8::1",
    ])
    func refused(_ address: String) {
        #expect(strict.addressProblem(address) != nil, "\(address)")
        #expect(relaxed.addressProblem(address) == nil)
    }

    @Test("Public addresses pass", arguments: ["8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1", "192.169.0.1", "2606:4700::1111", "2a00:1450:4001:80b::200e"])
    func allowed(_ address: String) {
        #expect(strict.addressProblem(address) == nil, "\(address)")
    }

    @Test("Address parsing: dotted quads without leading zeros; RFC 4291 IPv6 forms")
    func parsing() {
        #expect(HookAddressPolicy.IPv4("1.2.3.4") == [1, 2, 3, 4])
        for bad in ["1.2.3", "1.2.3.4.5", "01.2.3.4", "256.0.0.1", "1..2.3", "a.b.c.d", ""] { #expect(HookAddressPolicy.IPv4(bad) == nil, "\(bad)") }
        #expect(HookAddressPolicy.IPv6("::1") == [UInt8](repeating: 0, count: 15) + [1])
        #expect(HookAddressPolicy.IPv6("::ffff:1.2.3.4") == [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF, 1, 2, 3, 4])
        #expect(HookAddressPolicy.IPv6("1:2:3:4:5:6:7:8")?.count == 16)
        for bad in ["1:2:3:4:5:6:7:8:9", "1::2::3", ":1", "12345::", "fe80::1%eth0", "1:2:3:4:5:6:7", "g::1"] {
            #expect(HookAddressPolicy.IPv6(bad) == nil, "\(bad)")
        }
    }

    @Test("Hook URLs: http(s) only, a host, no credentials or fragment; literal private hosts and localhost refused by default")
    func urls() {
        #expect(strict.urlProblem("https://hooks.example.com/latch") == nil)
        #expect(strict.urlProblem("http://203.0.113.9:8080/hook") == nil)
        for bad in ["ftp://x.test/", "https://", "https://user:pw@x.test/", "https://x.test/#f", "file:///etc/passwd", "//x.test/", "x.test/hook",
                    "http://127.0.0.1:9000/", "http://[::1]/", "http://localhost/", "http://api.localhost/", "http://169.254.169.254/latest"] {
            #expect(strict.urlProblem(bad) != nil, "\(bad)")
        }
        #expect(relaxed.urlProblem("http://127.0.0.1:9000/") == nil)
        #expect(relaxed.urlProblem("http://localhost/") == nil)
        #expect(relaxed.urlProblem("ftp://x.test/") != nil)
    }

    @Test("Retries: network errors, timeouts, 5xx and 429 only; backoff doubles from 100 ms to at most 2 s")
    func retries() {
        #expect(HookRetryPolicy.shouldRetry(.failure(.network("reset"))))
        #expect(HookRetryPolicy.shouldRetry(.failure(.timeout)))
        #expect(HookRetryPolicy.shouldRetry(.success(HookAnswer(status: 503, body: []))))
        #expect(HookRetryPolicy.shouldRetry(.success(HookAnswer(status: 429, body: []))))
        #expect(!HookRetryPolicy.shouldRetry(.success(HookAnswer(status: 200, body: []))))
        #expect(!HookRetryPolicy.shouldRetry(.success(HookAnswer(status: 400, body: []))))
        #expect(!HookRetryPolicy.shouldRetry(.failure(.redirect(302))))
        #expect(!HookRetryPolicy.shouldRetry(.failure(.tooLarge)))
        #expect((1...8).map(HookRetryPolicy.delayMilliseconds(beforeRetry:)) == [100, 200, 400, 800, 1600, 2000, 2000, 2000])
    }
}
