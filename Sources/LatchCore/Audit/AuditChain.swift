import Crypto
import Foundation
import LatchModel

/// The audit log's tamper evidence: each record carries `HMAC-SHA256(key, previous MAC ‖ seq ‖ body)`, where
/// `body` is the record's canonical JSON (keys sorted, no white space) and `seq` its position as 8 big-endian
/// bytes. Changing, removing, inserting or reordering a record breaks every MAC after it; the key is derived from
/// the deployment's key-encryption key, which never enters the database, so whoever can write the database alone
/// cannot re-compute the chain.
///
/// Units of work do not touch the chain: each writes its records as plain rows carrying an *entry MAC*
/// (`HMAC-SHA256(key, "latch audit entry v1" ‖ 0 ‖ body)`), so that a row inserted by someone who can only write the
/// database is told apart. One sealer at a time then links the committed records into the chain, in commit order
/// (``seal(_:after:)``; each store says how it knows the order is safe). Stores hold one chain; the deployment gives
/// it its key once assembled.
public final class AuditChain: Sendable {
    /// HMACs with the key set up (its inner and outer pads hashed once), copied for each MAC: the entry's already
    /// holds the entry label.
    private struct Prepared: Sendable {
        var link: HMAC<SHA256>
        var entry: HMAC<SHA256>
        init(key: SymmetricKey) {
            link = HMAC<SHA256>(key: key)
            entry = link
            entry.update(data: AuditChain.entryLabel)
        }
    }
    private let prepared = Locked(Prepared(key: SymmetricKey(data: [UInt8](repeating: 0, count: 32))))

    /// A chain keyed with zeros until ``setKey(_:)``.
    public init() {}

    /// Sets the chain's key (every replica of a deployment derives the same one).
    public func setKey(_ key: some ContiguousBytes) {
        let prepared = Prepared(key: SymmetricKey(data: key))
        self.prepared.withLock { $0 = prepared }
    }

    /// The MAC before the first record.
    public static let genesis = Data(repeating: 0, count: 32)

    /// The MAC of the record `seq` with canonical `body`, following `previous`.
    public func link(previous: Data, seq: Int64, body: Data) -> Data {
        var mac = prepared.withLock { $0.link }
        mac.update(data: previous)
        withUnsafeBytes(of: seq.bigEndian) { mac.update(data: $0) }
        mac.update(data: body)
        return Data(mac.finalize())
    }

    /// The MAC a unit of work writes with a record whose canonical body is `body`.
    public func entryMAC(body: Data) -> Data {
        var mac = prepared.withLock { $0.entry }
        mac.update(data: body)
        return Data(mac.finalize())
    }

    /// What an entry MAC starts with: no chain link's input does (a link starts with a 32-byte MAC).
    static let entryLabel = Data("latch audit entry v1\u{0}".utf8)

    /// Links `records` — unsealed, in the order they committed — after the chain's head: each gets the next position
    /// and its chain MAC. A record without its entry MAC (inserted by someone who can write the database but does not
    /// hold the key) is linked too, so that the chain goes on, but over ``forgedLabel`` and its body: verification then
    /// names it. Returns the seals to write, the new head and the numbers of the forged records.
    public func seal(_ records: [AuditRecord], after head: (position: Int64, mac: Data))
        -> (seals: [AuditSeal], head: (position: Int64, mac: Data), forged: [Int64])
    {
        var (position, mac) = head
        var seals: [AuditSeal] = []
        var forged: [Int64] = []
        seals.reserveCapacity(records.count)
        for record in records {
            position += 1
            let body = Self.body(of: record.event)
            if isAuthentic(record, body: body) {
                mac = link(previous: mac, seq: position, body: body)
            } else {
                forged.append(record.seq)
                mac = link(previous: mac, seq: position, body: Self.forgedLabel + body)
            }
            seals.append(AuditSeal(seq: record.seq, position: position, mac: mac))
        }
        return (seals, (position, mac), forged)
    }

    /// What the chain links before the body of a record that did not carry its entry MAC when it was sealed.
    static let forgedLabel = Data("latch audit forged v1\u{0}".utf8)

    /// Whether `record` carries the entry MAC of its body.
    public func isAuthentic(_ record: AuditRecord, body: Data? = nil) -> Bool {
        guard let entryMAC = record.entryMAC else { return false }
        return Secrets.constantTimeEquals(entryMAC, self.entryMAC(body: body ?? Self.body(of: record.event)))
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
    /// Records written but not sealed yet (the sealer links them within seconds of their commit), and when the
    /// oldest of them was recorded. Each was checked for its entry MAC.
    public var unsealed = 0
    public var oldestUnsealedAt: Int64?

    public var verified: Bool { brokenAt == nil && problem == nil }
}

extension AuditChain {
    /// Walks the chain from the anchor to the head, `pageSize` records at a time — every position present once, every
    /// chain MAC right (the sealer checked each entry MAC before linking), the last one the head's — then the records
    /// not sealed yet, each of which must carry its entry MAC.
    public func verify(_ store: any EventStore, pageSize: Int = 500) async throws -> AuditVerification {
        let anchor = try await store.auditAnchor()
        var result = AuditVerification(checked: 0, anchorSeq: anchor.anchorSeq)
        var previous = anchor.anchorMAC
        var expected = anchor.anchorSeq + 1
        pages: while expected <= anchor.headSeq {
            let page = try await store.auditChain(after: expected - 1, limit: pageSize)
            if page.isEmpty { break }
            for record in page {
                guard let position = record.position, position <= anchor.headSeq else { break pages }
                guard position == expected else {
                    result.brokenAt = expected
                    result.problem = "record \(expected) of the chain is missing"
                    return result
                }
                let body = Self.body(of: record.event)
                guard let mac = record.mac, verify(mac, previous: previous, seq: position, body: body) else {
                    result.brokenAt = position
                    if let mac = record.mac, verify(mac, previous: previous, seq: position, body: Self.forgedLabel + body) {
                        result.problem = "record \(position) of the chain was not written by this deployment: it had no valid entry MAC when sealed"
                    } else {
                        result.problem = "record \(position) of the chain does not match its MAC: it, or one before it, was changed"
                    }
                    return result
                }
                previous = mac
                result.checked += 1
                result.firstSeq = result.firstSeq ?? position
                result.lastSeq = position
                expected += 1
                if position == anchor.headSeq { break pages }
            }
        }
        if expected <= anchor.headSeq {
            result.brokenAt = expected
            result.problem = "the chain ends at \(expected - 1) but its head is \(anchor.headSeq): records were removed"
            return result
        } else if !Secrets.constantTimeEquals(previous, anchor.headMAC) {
            result.brokenAt = anchor.headSeq
            result.problem = "the last record's MAC is not the head's"
            return result
        }
        // Records not sealed yet: a forged row would be sealed into the chain, so each must prove who wrote it now.
        var after: Int64 = 0
        while true {
            let page = try await store.unsealedAudit(after: after, limit: pageSize)
            for record in page {
                guard isAuthentic(record) else {
                    result.problem = "unsealed record number \(record.seq) was not written by this deployment (its entry MAC does not match)"
                    return result
                }
                result.unsealed += 1
                result.oldestUnsealedAt = min(result.oldestUnsealedAt ?? record.event.at, record.event.at)
            }
            guard let last = page.last, page.count == pageSize else { break }
            after = last.seq
        }
        return result
    }
}
