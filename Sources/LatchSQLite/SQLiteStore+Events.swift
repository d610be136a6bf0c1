import LatchCore

extension SQLiteStore: EventStore {
    public func events(after cursor: String?, limit: Int) async throws -> [SecurityEvent] {
        try await read { db in
            try db.query(
                "SELECT id, at, kind, actor, user_id, session_id, detail FROM events WHERE id > ? ORDER BY id LIMIT ?",
                [.text(cursor ?? ""), .int(Int64(limit))]
            ).map {
                SecurityEvent(
                    id: $0.text(0), at: $0.int(1), kind: SecurityEvent.Kind(rawValue: $0.text(2)), actor: $0.text(3),
                    userID: $0.optionalText(4), sessionID: $0.optionalText(5), detail: $0.optionalText(6))
            }
        }
    }
}

extension SQLiteTransaction: EventWrites {
    func record(_ event: SecurityEvent) {
        apply { db in
            try db.run(
                "INSERT INTO events (id, at, kind, actor, user_id, session_id, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    .text(event.id), .int(event.at), .text(event.kind.rawValue), .text(event.actor), event.userID.sql, event.sessionID.sql,
                    event.detail.sql,
                ])
            return nil
        }
    }
}
