import LatchCore
import LatchModel
import Logging
import Testing

/// What an audit record keeps of where a request came from: the edge hands the raw `User-Agent` and the logger's
/// request-id value; they are cleaned and formatted only when a record reads them.
@Suite("Audit origin")
struct AuditOriginTests {
    @Test("A user agent keeps printable text, loses control characters and is clipped to 256 bytes")
    func userAgent() {
        #expect(AuditOrigin(userAgent: "Latch/1.0 (iPhone; iOS 17.4)").userAgent == "Latch/1.0 (iPhone; iOS 17.4)")
        #expect(AuditOrigin(userAgent: "evil\r\nX-Admin: yes\u{1B}[31m\u{85}").userAgent == "evil??X-Admin: yes?[31m?")
        #expect(AuditOrigin(userAgent: "Café ☕️ app").userAgent == "Café ☕️ app", "non-ASCII text that is not a control stays")
        let long = AuditOrigin(userAgent: String(repeating: "a", count: 10_000)).userAgent ?? ""
        #expect(long.utf8.count <= 256 && long.hasPrefix("aaaa"))
        #expect(AuditOrigin(userAgent: nil).userAgent == nil)
        var changed = AuditOrigin(userAgent: "one")
        changed.userAgent = "two\u{0}"
        #expect(changed.userAgent == "two?")
    }

    @Test("The request id is the logged value's text, made when read; set explicitly, it replaces it")
    func requestID() {
        let value = Logger.MetadataValue.stringConvertible(42)
        var origin = AuditOrigin(address: "192.0.2.1", userAgent: "ua", requestID: value)
        #expect(origin.requestID == "42")
        #expect(origin == AuditOrigin(address: "192.0.2.1", userAgent: "ua", requestID: "42"), "equal by what a record would keep")
        #expect(Set([origin, AuditOrigin(address: "192.0.2.1", userAgent: "ua", requestID: "42")]).count == 1)
        origin.requestID = "r-2"
        #expect(origin.requestID == "r-2")
        origin.requestID = nil
        #expect(origin.requestID == nil)
        #expect(AuditOrigin(address: nil, userAgent: nil, requestID: nil as (any CustomStringConvertible & Sendable)?).requestID == nil)
    }

    @Test("The address is its source's text, made when read; set explicitly (a forwarded address), it replaces it")
    func address() {
        let peer = CountedText("192.0.2.7")
        var origin = AuditOrigin(address: peer, userAgent: nil, requestID: nil as (any CustomStringConvertible & Sendable)?)
        #expect(peer.reads == 0, "nothing formatted until read")
        #expect(origin.address == "192.0.2.7" && peer.reads == 1)
        origin.address = "198.51.100.1"
        #expect(origin.address == "198.51.100.1" && peer.reads == 1)
    }

    /// A description that counts how often it is made.
    final class CountedText: CustomStringConvertible, Sendable {
        let text: String
        let count = Locked(0)
        init(_ text: String) { self.text = text }
        var reads: Int { count.withLock { $0 } }
        var description: String {
            count.withLock { $0 += 1 }
            return text
        }
    }
}
