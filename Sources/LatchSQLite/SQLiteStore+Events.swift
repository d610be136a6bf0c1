import Foundation
import LatchCore

extension SQLiteStore: EventStore {
    static let auditColumns =
        "seq, id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, mac, position, entry_mac"

    static let insertAudit = """
        INSERT INTO audit_log (id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, entry_mac)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """
    static let insertSealedAudit = """
        INSERT INTO audit_log (id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, entry_mac, position, mac)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    static func auditRecord(_ row: SQLRow) -> AuditRecord {
        AuditRecord(
            seq: row.int(0),
            event: SecurityEvent(
                id: row.text(1), at: row.int(2), kind: SecurityEvent.Kind(rawValue: row.text(3)), actor: row.text(4), userID: row.optionalText(5),
                sessionID: row.optionalText(6), clientID: row.optionalText(7), detail: row.optionalText(8), address: row.optionalText(9),
                userAgent: row.optionalText(10), requestID: row.optionalText(11)),
            position: row.optionalInt(13), mac: row.optionalBlob(12), entryMAC: row.optionalBlob(14))
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

    public func auditChain(after position: Int64, limit: Int) async throws -> [AuditRecord] {
        try await read { db in
            try db.query(
                "SELECT \(Self.auditColumns) FROM audit_log WHERE position > ? ORDER BY position LIMIT ?", [.int(position), .int(Int64(limit))]
            ).map(Self.auditRecord)
        }
    }

    public func unsealedAudit(after seq: Int64, limit: Int) async throws -> [AuditRecord] {
        try await read { db in
            try db.query(
                "SELECT \(Self.auditColumns) FROM audit_log WHERE position IS NULL AND seq > ? ORDER BY seq LIMIT ?", [.int(seq), .int(Int64(limit))]
            ).map(Self.auditRecord)
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
        // SQLite numbers the row (one past the largest number); the entry MAC proves who wrote it. The body, the MAC
        // and the values are made here, in the caller's task; the writer inserts — sealed at once when its batch
        // seals at insert (SQLiteAuditHead), else as a plain row the sealer links later.
        let body = AuditChain.body(of: event)
        let values: [SQLValue] = [
            .text(event.id), .int(event.at), .text(event.kind.rawValue), .text(event.actor), event.userID.sql, event.sessionID.sql,
            event.clientID.sql, event.detail.sql, event.address.sql, event.userAgent.sql, event.requestID.sql,
            .blob(chain.entryMAC(body: body)),
        ]
        let head = self.head
        apply { db in
            if let seal = head?.seal(body: body) {
                try db.run(SQLiteStore.insertSealedAudit, values + [.int(seal.position), .blob(seal.mac)])
            } else {
                try db.run(SQLiteStore.insertAudit, values)
            }
            return nil
        }
    }

    func sealAudit(limit: Int) -> WriteResult<Int?> {
        let result = WriteResult<Int?>(0)
        let chain = self.chain
        apply { db in
            // Commit order is number order: one writer at a time holds the database (every process's units, too,
            // wait for its write lock), and a record is numbered when its unit writes it. A unit's savepoint is
            // rolled back with its records before the next unit numbers any, so no committed record can ever appear
            // below one sealed here.
            // So the unsealed records are those numbered after the chain's head record: found by the primary key,
            // with no index of unsealed rows for every write to maintain. (Where retention deleted the head record,
            // the search starts from the beginning once.)
            let pending = try db.query(
                """
                SELECT \(SQLiteStore.auditColumns) FROM audit_log
                WHERE seq > coalesce((SELECT seq FROM audit_log WHERE position = (SELECT head_seq FROM audit_head WHERE id = 1)), 0)
                AND position IS NULL ORDER BY seq LIMIT ?
                """, [.int(Int64(limit))]
            ).map(SQLiteStore.auditRecord)
            guard !pending.isEmpty else { return nil }
            guard let head = try db.row("SELECT head_seq, head_mac FROM audit_head WHERE id = 1", []) else {
                throw StoreUnavailableError("the audit log's head row is missing")
            }
            let sealed = chain.seal(pending, after: (head.int(0), head.blob(1)))
            // A few statements for the batch (UPDATE … FROM, SQLite 3.33), not one per record: chunks of 256, 64, 16,
            // 4 and 1 rows, so that the connection's statement cache holds at most five texts.
            var remaining = sealed.seals[...]
            for size in [256, 64, 16, 4, 1] {
                while remaining.count >= size {
                    let chunk = remaining.prefix(size)
                    remaining = remaining.dropFirst(size)
                    let rows = Array(repeating: "(?, ?, ?)", count: size).joined(separator: ", ")
                    try db.run(
                        """
                        WITH sealed (seq, position, mac) AS (VALUES \(rows))
                        UPDATE audit_log SET position = sealed.position, mac = sealed.mac FROM sealed WHERE audit_log.seq = sealed.seq
                        """, chunk.flatMap { [SQLValue.int($0.seq), .int($0.position), .blob($0.mac)] })
                }
            }
            try db.run("UPDATE audit_head SET head_seq = ?, head_mac = ? WHERE id = 1", [.int(sealed.head.position), .blob(sealed.head.mac)])
            result.set(pending.count)
            return nil
        }
        return result
    }

    func purgeAudit(recordedBefore at: Int64) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { db in
            // The sealed records up to the last one older than the cut-off (a prefix of the chain); the anchor moves to it.
            guard
                let last = try db.row(
                    "SELECT position, mac FROM audit_log WHERE position IS NOT NULL AND at < ? ORDER BY position DESC LIMIT 1", [.int(at)])
            else { return nil }
            let cut = last.int(0)
            result.set(try db.run("DELETE FROM audit_log WHERE position <= ?", [.int(cut)]))
            if let mac = last.optionalBlob(1) {
                try db.run("UPDATE audit_head SET anchor_seq = ?, anchor_mac = ? WHERE id = 1 AND anchor_seq < ?", [.int(cut), .blob(mac), .int(cut)])
            }
            return nil
        }
        return result
    }
}
