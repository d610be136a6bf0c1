import Foundation
import LatchAttestation
import LatchModel
import Logging

/// The audit log's engine: queries, export, chain verification, retention.
public struct AuditLog: Sendable {
    let store: any EventStore & UnitOfWork
    let chain: AuditChain
    let clock: LatchClock
    let random: RandomSource
    /// Records older than this are purged by ``purgeExpired()``; nil keeps them all.
    let retention: Int64?
    let logger: Logger
    /// Records refusals that write nothing else (an admin route refused for the caller's role).
    public let recorder: AuditRecorder

    public init(
        store: any EventStore & UnitOfWork, chain: AuditChain, retention: Int64?, clock: LatchClock, random: RandomSource,
        logger: Logger = Logger(label: "latch.audit")
    ) {
        self.store = store
        self.chain = chain
        self.retention = retention
        self.clock = clock
        self.random = random
        self.logger = logger
        recorder = AuditRecorder(store: store, clock: clock, random: random, logger: logger)
    }

    /// Query parameters as the admin API takes them; every one checked.
    public struct Filters: Sendable {
        public var type: String?
        public var actor: String?
        public var subject: String?
        public var since: String?
        public var until: String?
        public var limit: String?
        public var cursor: String?
        public init(
            type: String? = nil, actor: String? = nil, subject: String? = nil, since: String? = nil, until: String? = nil, limit: String? = nil,
            cursor: String? = nil
        ) {
            self.type = type
            self.actor = actor
            self.subject = subject
            self.since = since
            self.until = until
            self.limit = limit
            self.cursor = cursor
        }
    }

    /// `GET /admin/v1/audit`.
    public func page(_ filters: Filters) async throws -> AuditPage {
        let query = try Self.query(filters)
        let records = try await store.auditRecords(matching: AuditQuery(
            kinds: query.kinds, actor: query.actor, subject: query.subject, since: query.since, until: query.until, before: query.before,
            limit: query.limit + 1))
        let shown = records.prefix(query.limit)
        return AuditPage(records: shown.map(Self.view), nextCursor: records.count > query.limit ? shown.last.map { String($0.seq) } : nil)
    }

    /// The checked query of `filters` (limit 1–500, default 100; times as seconds since 1970 or RFC 3339).
    public static func query(_ filters: Filters) throws -> AuditQuery {
        var query = AuditQuery()
        if let type = filters.type, !type.isEmpty {
            let kinds = type.split(separator: ",").map(String.init)
            guard kinds.count <= 20, kinds.allSatisfy({ Self.isKind($0) }) else {
                throw LatchError.invalidInput("type must be up to 20 comma-separated event types (a prefix ends with a dot: admin.)")
            }
            query.kinds = kinds
        }
        for (name, value) in [("actor", filters.actor), ("subject", filters.subject)] {
            guard let value else { continue }
            guard !value.isEmpty, value.utf8.count <= 256, !value.containsControlCharacters else {
                throw LatchError.invalidInput("\(name) must be 1–256 printable characters")
            }
        }
        query.actor = filters.actor
        query.subject = filters.subject
        query.since = try filters.since.map { try Self.time($0, name: "since") }
        query.until = try filters.until.map { try Self.time($0, name: "until") }
        if let limit = filters.limit {
            guard let value = Int(limit), (1...500).contains(value) else { throw LatchError.invalidInput("limit must be 1–500") }
            query.limit = value
        }
        if let cursor = filters.cursor {
            guard let value = Int64(cursor), value > 0 else { throw LatchError.invalidInput("cursor must be a nextCursor this API returned") }
            query.before = value
        }
        return query
    }

    static func isKind(_ text: some StringProtocol) -> Bool {
        !text.isEmpty && text.utf8.count <= 64
            && text.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") }
    }


    /// Seconds since 1970, or an RFC 3339 date-time.
    static func time(_ text: String, name: String) throws -> Int64 {
        if let seconds = Int64(text), seconds >= 0 { return seconds }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if text.utf8.count <= 40, let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970) }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if text.utf8.count <= 40, let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970) }
        throw LatchError.invalidInput("\(name) must be seconds since 1970 or an RFC 3339 date-time (2026-11-24T10:00:00Z)")
    }

    /// The chain from the anchor on, oldest first, `pageSize` records per call of `emit` (the export).
    public func export(since: String?, until: String?, pageSize: Int = 500, emit: ([AuditRecordView]) async throws -> Void) async throws {
        let since = try since.map { try Self.time($0, name: "since") }
        let until = try until.map { try Self.time($0, name: "until") }
        await sealFirst()
        var after: Int64 = 0
        while true {
            let page = try await store.auditChain(after: after, limit: pageSize)
            guard let last = page.last else { return }
            after = last.seq
            let kept = page.filter { record in
                (since.map { record.event.at >= $0 } ?? true) && (until.map { record.event.at < $0 } ?? true)
            }
            if !kept.isEmpty { try await emit(kept.map(Self.view)) }
            if page.count < pageSize { return }
        }
    }

    /// Links the records written since the last pass into the chain (``AuditSealer`` calls it every second; commands
    /// that write the log without a server, such as `latch admin bootstrap`, call it before they exit). nil when
    /// another replica's sealer held the lock.
    @discardableResult
    public func sealPending() async throws -> Int? {
        try await store.sealAudit()
    }

    /// One sealing pass before the chain is read (verification, export, retention), so that it covers what has
    /// committed: where another replica holds the sealing lock, or the pass fails, the chain is read as it is (the
    /// records left are reported as unsealed).
    func sealFirst() async {
        do {
            try await store.sealAudit(maximumPasses: 10)
        } catch {
            logger.warning("sealing the audit log before reading it failed", metadata: ["error": "\(error)"])
        }
    }

    /// Checks the whole chain (`GET /admin/v1/audit/verify`, `latch admin audit verify`), after sealing what it can.
    public func verify() async throws -> AuditVerificationView {
        await sealFirst()
        let result = try await chain.verify(store)
        if !result.verified { logger.critical("the audit log does not verify", metadata: ["problem": "\(result.problem ?? "")"]) }
        return AuditVerificationView(
            verified: result.verified, checked: result.checked, firstSeq: result.firstSeq, lastSeq: result.lastSeq, anchorSeq: result.anchorSeq,
            brokenAt: result.brokenAt, problem: result.problem, unsealed: result.unsealed, oldestUnsealedAt: result.oldestUnsealedAt)
    }

    /// Purges the records older than the retention (housekeeping), recording that it did; 0 when there is none.
    @discardableResult
    public func purgeExpired() async throws -> Int {
        guard let retention else { return 0 }
        await sealFirst()
        let cutoff = clock.seconds() - retention
        // Nothing to do unless the oldest record kept is past the retention.
        guard let oldest = try await store.auditChain(after: 0, limit: 1).first, oldest.event.at < cutoff else { return 0 }
        let event = SecurityEvent.now(.auditPurged, actor: "system", userID: nil, detail: "recorded before \(cutoff)", clock: clock, random: random)
        // The event first: the records it purges may be every record there is, and it must not reuse their numbers.
        let purged = try await store.write { transaction in
            transaction.record(event)
            return transaction.purgeAudit(recordedBefore: cutoff)
        }.value
        logger.notice("audit records purged", metadata: ["count": "\(purged)", "before": "\(cutoff)"])
        return purged
    }

    /// `GET /v1/me/security-events`: the signed-in user's own events, newest first (admin ids are not shown).
    public func events(of userID: String, limit: String?, cursor: String?) async throws -> MySecurityEvents {
        let query = try Self.query(Filters(limit: limit ?? "50", cursor: cursor))
        guard query.limit <= 100 else { throw LatchError.invalidInput("limit must be 1–100") }
        let limit = query.limit
        let records = try await store.auditRecords(matching: AuditQuery(subject: userID, before: query.before, limit: limit + 1))
        let shown = records.prefix(limit)
        return MySecurityEvents(
            events: shown.map {
                let actor = $0.event.actor.hasPrefix("admin") ? "admin" : $0.event.actor
                return MySecurityEvent(
                    id: $0.event.id, at: $0.event.at, type: $0.event.kind.rawValue, actor: actor, client: $0.event.clientID, address: $0.event.address,
                    userAgent: $0.event.userAgent, detail: $0.event.detail)
            },
            nextCursor: records.count > limit ? shown.last.map { String($0.seq) } : nil)
    }

    static func view(_ record: AuditRecord) -> AuditRecordView {
        let event = record.event
        return AuditRecordView(
            seq: record.seq, id: event.id, at: event.at, type: event.kind.rawValue, actor: event.actor, subject: event.userID, session: event.sessionID,
            client: event.clientID, detail: event.detail, address: event.address, userAgent: event.userAgent, requestId: event.requestID,
            mac: record.mac.map { Hex.encode($0) }, position: record.position)
    }
}
