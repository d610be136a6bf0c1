import Foundation
import Logging

/// A security event: written in the same unit of work as the change it records, so the record exists exactly
/// when the change does. The store appends it to the audit log's hash chain (see ``AuditChain``).
public struct SecurityEvent: Sendable, Hashable {
    /// What happened, as a stable dotted name (documented in docs/operations.md).
    public struct Kind: RawRepresentable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
    }

    /// Time-ordered: ids of events recorded close in time sort together.
    public var id: String
    public var at: Int64
    public var kind: Kind
    /// Who acted: `user` (the subject), `system`, `anonymous` (an unauthenticated caller), or `admin:<token id>`.
    public var actor: String
    /// The user the event is about.
    public var userID: String?
    public var sessionID: String?
    /// The app (OAuth client) the request came from, when known.
    public var clientID: String?
    /// A few words of context (a proof type, a reason code, a before/after summary); never a secret.
    public var detail: String?
    /// Where the request came from: the client address, its `User-Agent` and Latch's request id.
    public var address: String?
    public var userAgent: String?
    public var requestID: String?

    public init(
        id: String, at: Int64, kind: Kind, actor: String, userID: String? = nil, sessionID: String? = nil, clientID: String? = nil,
        detail: String? = nil, address: String? = nil, userAgent: String? = nil, requestID: String? = nil
    ) {
        self.id = id
        self.at = at
        self.kind = kind
        self.actor = actor
        self.userID = userID
        self.sessionID = sessionID
        self.clientID = clientID
        self.detail = detail.map { SecurityEvent.clipped($0, to: SecurityEvent.maximumDetailBytes) }
        self.address = address
        self.userAgent = userAgent
        self.requestID = requestID
    }

    /// Longest detail kept, bytes.
    public static let maximumDetailBytes = 1024

    /// `text` cut to at most `limit` UTF-8 bytes, at a character boundary.
    static func clipped(_ text: String, to limit: Int) -> String {
        guard text.utf8.count > limit else { return text }
        var result = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            guard used + size <= limit - 3 else { break }
            result.append(character)
            used += size
        }
        return result + "..."
    }
}

/// One record of the audit log: an event, the number it was written under, and — once the sealer has linked it —
/// its place in the chain and the chain's MAC over it.
public struct AuditRecord: Sendable, Hashable {
    /// The record's number: unique, increasing in the order records were written (PostgreSQL leaves a gap where a
    /// unit rolled back). Pages of the admin API are cut by it.
    public var seq: Int64
    public var event: SecurityEvent
    /// Position in the chain, from 1, without gaps; nil until sealed. Records written before the sealer existed have
    /// the position they were chained at, which was their `seq`.
    public var position: Int64?
    /// HMAC-SHA256 chaining this record to the one before it in the chain; nil until sealed, and for events recorded
    /// before the chain existed.
    public var mac: Data?
    /// The MAC the unit of work wrote with the record (``AuditChain/entryMAC(body:)``): proof that the deployment,
    /// not someone who can only write the database, wrote it. nil for records written before the sealer existed.
    public var entryMAC: Data?

    public init(seq: Int64, event: SecurityEvent, position: Int64? = nil, mac: Data? = nil, entryMAC: Data? = nil) {
        self.seq = seq
        self.event = event
        self.position = position
        self.mac = mac
        self.entryMAC = entryMAC
    }

    /// Whether the sealer has linked it into the chain.
    public var isSealed: Bool { position != nil }
}

/// What the sealer writes for one record: its chain position and chain MAC.
public struct AuditSeal: Sendable, Hashable {
    public var seq: Int64
    public var position: Int64
    public var mac: Data
    public init(seq: Int64, position: Int64, mac: Data) {
        self.seq = seq
        self.position = position
        self.mac = mac
    }
}

/// Where verification of the chain starts: the position of the last record no longer kept (purged by retention, or
/// recorded before the chain existed) and its MAC; and the chain's head, the last record sealed. Both are chain
/// positions, not record numbers.
public struct AuditAnchor: Sendable, Hashable {
    public var anchorSeq: Int64
    public var anchorMAC: Data
    public var headSeq: Int64
    public var headMAC: Data

    public init(anchorSeq: Int64, anchorMAC: Data, headSeq: Int64, headMAC: Data) {
        self.anchorSeq = anchorSeq
        self.anchorMAC = anchorMAC
        self.headSeq = headSeq
        self.headMAC = headMAC
    }
}

/// Filters of an audit query; records come newest first.
public struct AuditQuery: Sendable, Hashable {
    /// Kinds to keep: an exact kind (`signin.failed`), or a prefix ending in a dot (`admin.`); empty keeps all.
    public var kinds: [String] = []
    public var actor: String?
    /// The user the events are about.
    public var subject: String?
    /// Recorded at or after, seconds since 1970.
    public var since: Int64?
    /// Recorded before, seconds since 1970.
    public var until: Int64?
    /// Only records with a lower `seq` (the cursor of the previous page).
    public var before: Int64?
    public var limit: Int = 100

    public init(
        kinds: [String] = [], actor: String? = nil, subject: String? = nil, since: Int64? = nil, until: Int64? = nil, before: Int64? = nil,
        limit: Int = 100
    ) {
        self.kinds = kinds
        self.actor = actor
        self.subject = subject
        self.since = since
        self.until = until
        self.before = before
        self.limit = limit
    }

    /// Whether `event` passes the filters (the in-memory store's reading; SQL stores say the same in SQL).
    public func matches(_ record: AuditRecord) -> Bool {
        let event = record.event
        if !kinds.isEmpty,
            !kinds.contains(where: { $0.hasSuffix(".") ? event.kind.rawValue.hasPrefix($0) : event.kind.rawValue == $0 })
        {
            return false
        }
        if let actor, event.actor != actor { return false }
        if let subject, event.userID != subject { return false }
        if let since, event.at < since { return false }
        if let until, event.at >= until { return false }
        if let before, record.seq >= before { return false }
        return true
    }
}

/// Reading the audit log.
public protocol EventStore: Sendable {
    /// Records matching `query`, sealed or not, newest first (by `seq`).
    func auditRecords(matching query: AuditQuery) async throws -> [AuditRecord]
    /// Sealed records with a chain position greater than `after`, in chain order: the chain, for export and
    /// verification.
    func auditChain(after position: Int64, limit: Int) async throws -> [AuditRecord]
    /// Records written but not yet sealed with `seq` greater than `after`, oldest first.
    func unsealedAudit(after seq: Int64, limit: Int) async throws -> [AuditRecord]
    /// The chain's anchor and head.
    func auditAnchor() async throws -> AuditAnchor
}

/// A store whose audit records are chained by an ``AuditChain`` it holds (the deployment gives it its key).
///
/// Units of work write records as plain rows, with their entry MAC, taking no lock that another unit waits on; one
/// sealer at a time links them into the chain afterwards (``EventWrites/sealAudit(limit:)``), in commit order.
public protocol AuditChainedStore: EventStore {
    var auditChain: AuditChain { get }
}

/// Writing the audit log inside a unit of work: any unit can record events, and they commit or roll back with it.
public protocol EventWrites {
    /// Writes `event` as an unsealed record, numbered and carrying its entry MAC. Takes no lock another unit waits on.
    func record(_ event: SecurityEvent)
    /// Seals up to `limit` records in commit order: a record is sealed only once every unit that could commit
    /// before it has finished (each store says how it knows), then linked after the chain's head. The value is how
    /// many were sealed, or nil when another sealer holds the sealing lock (PostgreSQL).
    func sealAudit(limit: Int) -> WriteResult<Int?>
    /// Deletes the oldest sealed records, up to the last one recorded before `at`, and moves the anchor to it.
    func purgeAudit(recordedBefore at: Int64) -> WriteResult<Int>
}

extension UnitOfWork {
    /// Records one event in a unit of its own (a failure, when nothing else is written).
    public func record(_ event: SecurityEvent) async throws {
        try await write { $0.record(event) }
    }

    /// Records a refused request's event on its own. A store failure here is logged, not thrown: the caller
    /// answers with the refusal it is recording.
    public func recordFailure(_ event: SecurityEvent, logger: Logger) async {
        do {
            try await write { $0.record(event) }
        } catch {
            logger.error("a refusal could not be recorded in the audit log", metadata: ["kind": "\(event.kind.rawValue)", "error": "\(error)"])
        }
    }

    /// Seals pending audit records, `batch` at a time, until none is left that can be sealed, at most `maximumPasses`
    /// passes; the number sealed, or nil when another sealer held the lock.
    @discardableResult
    public func sealAudit(batch: Int = 1000, maximumPasses: Int = 50) async throws -> Int? {
        var sealed = 0
        for _ in 0..<maximumPasses {
            guard let count = try await write({ $0.sealAudit(limit: batch) }).value else { return sealed == 0 ? nil : sealed }
            sealed += count
            if count < batch { break }
        }
        return sealed
    }
}
