import Foundation
import LatchCore

extension SQLiteStore: EventStore {
    static let auditColumns = "seq, id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, mac"

    static func auditRecord(_ row: SQLRow) -> AuditRecord {
        AuditRecord(
            seq: row.int(0),
            event: SecurityEvent(
                id: row.text(1), at: row.int(2), kind: SecurityEvent.Kind(rawValue: row.text(3)), actor: row.text(4), userID: row.optionalText(5),
                sessionID: row.optionalText(6), clientID: row.optionalText(7), detail: row.optionalText(8), address: row.optionalText(9),
                userAgent: row.optionalText(10), requestID: row.optionalText(11)),
            mac: row.optionalBlob(12))
    }

    public func auditRecords(matching query: AuditQuery) async throws -> [AuditRecord] {
        var conditions: [String] = []
        var values: [SQLValue] = []
        if !query.kinds.isEmpty {
            var alternatives: [String] = []
            for kind in query.kinds {
                if kind.hasSuffix(".") {
                    // A prefix: the kinds from it up to (excluding) the next one after its last character.
                    alternatives.append("(kind >= ? AND kind < ?)")
                    values += [.text(kind), .text(String(kind.dropLast()) + "/")]
                } else {
                    alternatives.append("kind = ?")
                    values.append(.text(kind))
                }
            }
            conditions.append("(" + alternatives.joined(separator: " OR ") + ")")
        }
        if let actor = query.actor {
            conditions.append("actor = ?")
            values.append(.text(actor))
        }
        if let subject = query.subject {
            conditions.append("user_id = ?")
            values.append(.text(subject))
        }
        if let since = query.since {
            conditions.append("at >= ?")
            values.append(.int(since))
        }
        if let until = query.until {
            conditions.append("at < ?")
            values.append(.int(until))
        }
        if let before = query.before {
            conditions.append("seq < ?")
            values.append(.int(before))
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        values.append(.int(Int64(query.limit)))
        return try await read { db in
            try db.query("SELECT \(Self.auditColumns) FROM audit_log \(filter) ORDER BY seq DESC LIMIT ?", values).map(Self.auditRecord)
        }
    }

    public func auditChain(after seq: Int64, limit: Int) async throws -> [AuditRecord] {
        try await read { db in
            try db.query("SELECT \(Self.auditColumns) FROM audit_log WHERE seq > ? ORDER BY seq LIMIT ?", [.int(seq), .int(Int64(limit))])
                .map(Self.auditRecord)
        }
    }

    public func auditAnchor() async throws -> AuditAnchor {
        try await read { db in
            guard let row = try db.row("SELECT anchor_seq, anchor_mac, head_seq, head_mac FROM audit_head WHERE id = 1", []) else {
                throw StoreUnavailableError("the audit log's head row is missing")
            }
            return AuditAnchor(anchorSeq: row.int(0), anchorMAC: row.blob(1), headSeq: row.int(2), headMAC: row.blob(3))
        }
    }
}

extension SQLiteTransaction: EventWrites {
    func record(_ event: SecurityEvent) {
        // One writer: reading the head and moving it inside the unit's savepoint is atomic; a rolled-back unit
        // rolls its records and the head back together.
        apply { db in
            guard let head = try db.row("SELECT head_seq, head_mac FROM audit_head WHERE id = 1", []) else {
                throw StoreUnavailableError("the audit log's head row is missing")
            }
            let seq = head.int(0) + 1
            let mac = chain.link(previous: head.blob(1), seq: seq, body: AuditChain.body(of: event))
            try db.run(
                """
                INSERT INTO audit_log (seq, id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, mac)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .int(seq), .text(event.id), .int(event.at), .text(event.kind.rawValue), .text(event.actor), event.userID.sql, event.sessionID.sql,
                    event.clientID.sql, event.detail.sql, event.address.sql, event.userAgent.sql, event.requestID.sql, .blob(mac),
                ])
            try db.run("UPDATE audit_head SET head_seq = ?, head_mac = ? WHERE id = 1", [.int(seq), .blob(mac)])
            return nil
        }
    }

    func purgeAudit(recordedBefore at: Int64) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { db in
            // The records up to the last one older than the cut-off (a prefix of the chain); the anchor moves to it.
            guard let last = try db.row("SELECT seq, mac FROM audit_log WHERE at < ? ORDER BY seq DESC LIMIT 1", [.int(at)]) else { return nil }
            result.set(try db.run("DELETE FROM audit_log WHERE seq <= ?", [.int(last.int(0))]))
            if let mac = last.optionalBlob(1) {
                try db.run(
                    "UPDATE audit_head SET anchor_seq = ?, anchor_mac = ? WHERE id = 1 AND anchor_seq < ?", [.int(last.int(0)), .blob(mac), .int(last.int(0))])
            }
            return nil
        }
        return result
    }
}
