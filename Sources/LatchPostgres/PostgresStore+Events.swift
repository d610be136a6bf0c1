import Foundation
import LatchCore
import PostgresNIO

extension PostgresStore: EventStore {
    typealias AuditRow = (Int64, String, Int64, String, String, String?, String?, String?, String?, String?, String?, String?, Data?)

    static func auditRecord(_ row: AuditRow) -> AuditRecord {
        AuditRecord(
            seq: row.0,
            event: SecurityEvent(
                id: row.1, at: row.2, kind: SecurityEvent.Kind(rawValue: row.3), actor: row.4, userID: row.5, sessionID: row.6, clientID: row.7,
                detail: row.8, address: row.9, userAgent: row.10, requestID: row.11),
            mac: row.12)
    }

    public func auditRecords(matching query: AuditQuery) async throws -> [AuditRecord] {
        let exact = query.kinds.filter { !$0.hasSuffix(".") }
        let prefixes = query.kinds.filter { $0.hasSuffix(".") }
        let anyKind = query.kinds.isEmpty
        return try await self.query("audit") { client in
            try await client.query(
                """
                SELECT seq, id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, mac FROM audit_log
                WHERE (\(anyKind) OR kind = ANY(\(exact)) OR EXISTS (SELECT 1 FROM unnest(\(prefixes)::text[]) AS p WHERE starts_with(kind, p)))
                AND (\(query.actor)::text IS NULL OR actor = \(query.actor))
                AND (\(query.subject)::text IS NULL OR user_id = \(query.subject))
                AND (\(query.since)::bigint IS NULL OR at >= \(query.since))
                AND (\(query.until)::bigint IS NULL OR at < \(query.until))
                AND (\(query.before)::bigint IS NULL OR seq < \(query.before))
                ORDER BY seq DESC LIMIT \(query.limit)
                """
            ).all(AuditRow.self).map(Self.auditRecord)
        }
    }

    public func auditChain(after seq: Int64, limit: Int) async throws -> [AuditRecord] {
        try await query("audit chain") { client in
            try await client.query(
                """
                SELECT seq, id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, mac FROM audit_log
                WHERE seq > \(seq) ORDER BY seq LIMIT \(limit)
                """
            ).all(AuditRow.self).map(Self.auditRecord)
        }
    }

    public func auditAnchor() async throws -> AuditAnchor {
        let row = try await query("audit head") { client in
            try await client.query("SELECT anchor_seq, anchor_mac, head_seq, head_mac FROM audit_head WHERE id = 1")
                .first((Int64, Data, Int64, Data).self)
        }
        guard let row else { throw StoreUnavailableError("the audit log's head row is missing") }
        return AuditAnchor(anchorSeq: row.0, anchorMAC: row.1, headSeq: row.2, headMAC: row.3)
    }
}

extension PostgresStore: AuditChainedStore {}

extension PostgresTransaction: EventWrites {
    func record(_ event: SecurityEvent) {
        auditEvents.append(event)
    }

    func purgeAudit(recordedBefore at: Int64) -> WriteResult<Int> {
        let result = WriteResult(0)
        add(statements: 3) { connection in
            // Locks the head first, as every recording unit does.
            _ = try await connection.run("SELECT 1 FROM audit_head WHERE id = 1 FOR UPDATE").first(Int.self)
            guard
                let last = try await connection.run("SELECT seq, mac FROM audit_log WHERE at < \(at) ORDER BY seq DESC LIMIT 1")
                    .first((Int64, Data?).self)
            else { return nil }
            result.set(try await connection.run("DELETE FROM audit_log WHERE seq <= \(last.0) RETURNING 1").all(Int.self).count)
            if let mac = last.1 {
                try await connection.run(
                    "UPDATE audit_head SET anchor_seq = \(last.0), anchor_mac = \(mac) WHERE id = 1 AND anchor_seq < \(last.0)")
            }
            return nil
        }
        return result
    }

    /// The step that appends `events` to the chain: locks the head row (`FOR UPDATE`, held to the commit, so units
    /// on every replica chain one after another), links each event and moves the head.
    static func chaining(_ events: [SecurityEvent], with chain: AuditChain) -> Step {
        Step(statements: 2 + events.count) { connection in
            guard
                var (seq, mac) = try await connection.run("SELECT head_seq, head_mac FROM audit_head WHERE id = 1 FOR UPDATE")
                    .first((Int64, Data).self)
            else { throw StoreUnavailableError("the audit log's head row is missing") }
            for event in events {
                seq += 1
                mac = chain.link(previous: mac, seq: seq, body: AuditChain.body(of: event))
                try await connection.run(
                    """
                    INSERT INTO audit_log (seq, id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, mac)
                    VALUES (\(seq), \(event.id), \(event.at), \(event.kind.rawValue), \(event.actor), \(event.userID), \(event.sessionID),
                            \(event.clientID), \(event.detail), \(event.address), \(event.userAgent), \(event.requestID), \(mac))
                    """)
            }
            try await connection.run("UPDATE audit_head SET head_seq = \(seq), head_mac = \(mac) WHERE id = 1")
            return nil
        }
    }
}
