import Foundation
import LatchCore
import PostgresNIO

extension PostgresStore: EventStore {
    typealias AuditRow = (Int64, String, Int64, String, String, String?, String?, String?, String?, String?, String?, String?, Data?, Int64?, Data?)
    static let auditColumnList = "seq, id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, mac, position, entry_mac"

    static func auditRecord(_ row: AuditRow) -> AuditRecord {
        AuditRecord(
            seq: row.0,
            event: SecurityEvent(
                id: row.1, at: row.2, kind: SecurityEvent.Kind(rawValue: row.3), actor: row.4, userID: row.5, sessionID: row.6, clientID: row.7,
                detail: row.8, address: row.9, userAgent: row.10, requestID: row.11),
            position: row.13, mac: row.12, entryMAC: row.14)
    }

    public func auditRecords(matching query: AuditQuery) async throws -> [AuditRecord] {
        let exact = query.kinds.filter { !$0.hasSuffix(".") }
        let prefixes = query.kinds.filter { $0.hasSuffix(".") }
        let anyKind = query.kinds.isEmpty
        return try await self.query("audit") { client in
            try await client.query(
                """
                SELECT seq, id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, mac, position, entry_mac
                FROM audit_log WHERE (\(anyKind) OR kind = ANY(\(exact)) OR EXISTS (SELECT 1 FROM unnest(\(prefixes)::text[]) AS p WHERE starts_with(kind, p)))
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

    public func auditChain(after position: Int64, limit: Int) async throws -> [AuditRecord] {
        try await query("audit chain") { client in
            try await client.query(
                """
                SELECT seq, id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, mac, position, entry_mac
                FROM audit_log WHERE position > \(position) ORDER BY position LIMIT \(limit)
                """
            ).all(AuditRow.self).map(Self.auditRecord)
        }
    }

    public func unsealedAudit(after seq: Int64, limit: Int) async throws -> [AuditRecord] {
        try await query("audit unsealed") { client in
            try await client.query(
                """
                SELECT seq, id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, mac, position, entry_mac
                FROM audit_log WHERE position IS NULL AND seq > \(seq) ORDER BY seq LIMIT \(limit)
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


extension PostgresTransaction: EventWrites {
    /// The advisory lock whoever seals holds for its transaction: one sealer at a time across all replicas; when a
    /// replica dies its transaction ends, the lock with it, and the next replica's pass takes over.
    static let sealerLockKey: Int64 = 0x4C41_5443_4841_5544  // "LATCHAUD"

    func record(_ event: SecurityEvent) {
        // A plain row: its number comes from a sequence (which never waits for another transaction), its `txid`
        // (the column's default, `pg_current_xact_id()`) tells the sealer when it is safe to seal; no lock is taken.
        let entryMAC = auditChain.entryMAC(body: AuditChain.body(of: event))
        execute(
            try """
            INSERT INTO audit_log (id, at, kind, actor, user_id, session_id, client_id, detail, address, user_agent, request_id, entry_mac)
            VALUES (\(event.id), \(event.at), \(event.kind.rawValue), \(event.actor), \(event.userID), \(event.sessionID), \(event.clientID),
                    \(event.detail), \(event.address), \(event.userAgent), \(event.requestID), \(entryMAC))
            """)
    }

    /// Seals in commit order. A record carries its transaction's id (`txid`); a pass seals only records whose `txid`
    /// is below a *bound* computed from its own statement's snapshot: the smallest id among the transactions that
    /// snapshot saw running (`pg_snapshot_xip`) — leaving out those positively known to belong to another database of
    /// the cluster, which cannot write this table — or else the snapshot's `xmax`. Every transaction of this database
    /// with a smaller id had finished when the snapshot was taken: committed (its rows are visible to that same
    /// snapshot) or rolled back (they are gone). Every one still running, or yet to start, has an id at or above the
    /// bound and is sealed in a later pass. Records are linked in `(txid, seq)` order: if unit A committed before unit
    /// B began, A got its id before B did, so A's records come first — the chain's order is consistent with commits.
    ///
    /// Which database a running transaction belongs to comes from `pg_stat_activity` (its `backend_xid` and `datid`
    /// are visible to every role), read after the snapshot was taken: a transaction of this database that finished in
    /// between is not found there and so still counts (conservative), as does one whose backend is hidden or a
    /// prepared transaction. The cluster-wide `xmin` alone would do too, but then any long transaction on *another*
    /// database of a shared cluster — a `CREATE DATABASE`, a batch job — would stall sealing for its whole length. A
    /// long transaction on this database still delays sealing; it never reorders it.
    func sealAudit(limit: Int) -> WriteResult<Int?> {
        let result = WriteResult<Int?>(0)
        let chain = auditChain
        add(statements: 5) { connection in
            guard try await connection.run("SELECT pg_try_advisory_xact_lock(\(Self.sealerLockKey))").first(Bool.self) ?? false else {
                result.set(nil)
                return nil
            }
            let pending = try await connection.run(
                """
                WITH snapshot AS (SELECT pg_current_snapshot() AS s),
                bound AS (
                    SELECT LEAST(pg_snapshot_xmax(s), (
                        SELECT min(x) FROM pg_snapshot_xip(s) AS x
                        WHERE NOT EXISTS (
                            SELECT 1 FROM pg_stat_activity AS a
                            WHERE a.backend_xid = x::xid AND a.datid <> (SELECT oid FROM pg_database WHERE datname = current_database()))
                    )) AS b FROM snapshot
                )
                SELECT \(unescaped: PostgresStore.auditColumnList) FROM audit_log, bound
                WHERE position IS NULL AND txid < bound.b
                ORDER BY txid, seq LIMIT \(limit)
                """
            ).all(PostgresStore.AuditRow.self).map(PostgresStore.auditRecord)
            guard !pending.isEmpty else { return nil }
            guard let head = try await connection.run("SELECT head_seq, head_mac FROM audit_head WHERE id = 1").first((Int64, Data).self) else {
                throw StoreUnavailableError("the audit log's head row is missing")
            }
            let sealed = chain.seal(pending, after: (head.0, head.1))
            // One statement for the batch (the MACs travel as base64: postgres-nio encodes no bytea arrays).
            let seqs = sealed.seals.map(\.seq)
            let positions = sealed.seals.map(\.position)
            let macs = sealed.seals.map { $0.mac.base64EncodedString() }
            try await connection.run(
                """
                UPDATE audit_log AS a SET position = s.position, mac = decode(s.mac, 'base64')
                FROM unnest(\(seqs)::bigint[], \(positions)::bigint[], \(macs)::text[]) AS s (seq, position, mac)
                WHERE a.seq = s.seq
                """)
            try await connection.run("UPDATE audit_head SET head_seq = \(sealed.head.position), head_mac = \(sealed.head.mac) WHERE id = 1")
            result.set(pending.count)
            return nil
        }
        return result
    }

    func purgeAudit(recordedBefore at: Int64) -> WriteResult<Int> {
        let result = WriteResult(0)
        add(statements: 3) { connection in
            // Waits for a sealing pass in progress: the anchor and the head move one at a time.
            try await connection.run("SELECT pg_advisory_xact_lock(\(Self.sealerLockKey))")
            guard
                let last = try await connection.run(
                    "SELECT position, mac FROM audit_log WHERE position IS NOT NULL AND at < \(at) ORDER BY position DESC LIMIT 1"
                ).first((Int64, Data?).self)
            else { return nil }
            result.set(try await connection.run("DELETE FROM audit_log WHERE position <= \(last.0) RETURNING 1").all(Int.self).count)
            if let mac = last.1 {
                try await connection.run(
                    "UPDATE audit_head SET anchor_seq = \(last.0), anchor_mac = \(mac) WHERE id = 1 AND anchor_seq < \(last.0)")
            }
            return nil
        }
        return result
    }
}

extension PostgresStore: AuditChainedStore {}
