import Crypto
import Foundation
import LatchModel

/// The audit log's tamper evidence: each record carries `HMAC-SHA256(key, previous MAC ‖ seq ‖ body)`, where
/// `body` is the record's canonical JSON (keys sorted, no white space) and `seq` its position as 8 big-endian
/// bytes. Changing, removing, inserting or reordering a record breaks every MAC after it; the key is derived from
/// the deployment's key-encryption key, which never enters the database, so whoever can write the database alone
/// cannot re-compute the chain.
///
/// Stores hold one and chain every event they record with it; the deployment gives it its key once assembled.
public final class AuditChain: Sendable {
    private let key = Locked<SymmetricKey>(SymmetricKey(data: [UInt8](repeating: 0, count: 32)))

    /// A chain keyed with zeros until ``setKey(_:)``.
    public init() {}

    /// Sets the chain's key (every replica of a deployment derives the same one).
    public func setKey(_ key: some ContiguousBytes) {
        let key = SymmetricKey(data: key)
        self.key.withLock { $0 = key }
    }

    /// The MAC before the first record.
    public static let genesis = Data(repeating: 0, count: 32)

    /// The MAC of the record `seq` with canonical `body`, following `previous`.
    public func link(previous: Data, seq: Int64, body: Data) -> Data {
        let key = self.key.withLock { $0 }
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: previous)
        withUnsafeBytes(of: seq.bigEndian) { mac.update(data: $0) }
        mac.update(data: body)
        return Data(mac.finalize())
    }

    /// Whether `mac` is the MAC of record `seq` with `body` after `previous` (compared in constant time).
    public func verify(_ mac: Data, previous: Data, seq: Int64, body: Data) -> Bool {
        Secrets.constantTimeEquals(mac, link(previous: previous, seq: seq, body: body))
    }

    /// The canonical JSON of an event: the bytes its MAC covers.
    public static func body(of event: SecurityEvent) -> Data {
        // Keys in code-point order; absent values left out.
        var writer = JSONWriter(reservingCapacity: 256)
        writer.beginObject()
        writer.member("actor", event.actor)
        if let address = event.address { writer.member("address", address) }
        writer.member("at", event.at)
        if let client = event.clientID { writer.member("client", client) }
        if let detail = event.detail { writer.member("detail", detail) }
        writer.member("id", event.id)
        writer.member("kind", event.kind.rawValue)
        if let requestID = event.requestID { writer.member("requestId", requestID) }
        if let session = event.sessionID { writer.member("session", session) }
        if let subject = event.userID { writer.member("subject", subject) }
        if let userAgent = event.userAgent { writer.member("userAgent", userAgent) }
        writer.endObject()
        return Data(writer.bytes)
    }
}

/// A store that chains the events it records.
public protocol AuditChainedStore {
    var auditChain: AuditChain { get }
}

/// What checking the chain found.
public struct AuditVerification: Sendable, Hashable {
    /// Records checked (after the anchor, up to the head read when checking began).
    public var checked: Int
    /// The first and last record checked.
    public var firstSeq: Int64?
    public var lastSeq: Int64?
    /// Where checking started: records up to it were purged or recorded before the chain existed.
    public var anchorSeq: Int64
    /// The first record that does not verify, and why; nil when the whole chain verifies.
    public var brokenAt: Int64?
    public var problem: String?

    public var verified: Bool { brokenAt == nil && problem == nil }
}

extension AuditChain {
    /// Walks the chain from the anchor to the head, `pageSize` records at a time: every seq present once, every
    /// MAC right, the last one the head's.
    public func verify(_ store: any EventStore, pageSize: Int = 500) async throws -> AuditVerification {
        let anchor = try await store.auditAnchor()
        var result = AuditVerification(checked: 0, anchorSeq: anchor.anchorSeq)
        var previous = anchor.anchorMAC
        var expected = anchor.anchorSeq + 1
        pages: while expected <= anchor.headSeq {
            let page = try await store.auditChain(after: expected - 1, limit: pageSize)
            if page.isEmpty { break }
            for record in page where record.seq <= anchor.headSeq {
                guard record.seq == expected else {
                    result.brokenAt = expected
                    result.problem = "record \(expected) is missing"
                    return result
                }
                guard let mac = record.mac, verify(mac, previous: previous, seq: record.seq, body: Self.body(of: record.event)) else {
                    result.brokenAt = record.seq
                    result.problem = "record \(record.seq) does not match its MAC: it, or one before it, was changed"
                    return result
                }
                previous = mac
                result.checked += 1
                result.firstSeq = result.firstSeq ?? record.seq
                result.lastSeq = record.seq
                expected += 1
                if record.seq == anchor.headSeq { break pages }
            }
        }
        if expected <= anchor.headSeq {
            result.brokenAt = expected
            result.problem = "the chain ends at \(expected - 1) but its head is \(anchor.headSeq): records were removed"
        } else if !Secrets.constantTimeEquals(previous, anchor.headMAC) {
            result.brokenAt = anchor.headSeq
            result.problem = "the last record's MAC is not the head's"
        }
        return result
    }
}
