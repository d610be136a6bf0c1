import LatchCore
import PostgresNIO

extension PostgresStore: EventStore {
    public func events(after cursor: String?, limit: Int) async throws -> [SecurityEvent] {
        let after = cursor ?? ""
        return try await query("events") { client in
            try await client.query(
                "SELECT id, at, kind, actor, user_id, session_id, detail FROM events WHERE id > \(after) ORDER BY id LIMIT \(limit)"
            ).all((String, Int64, String, String, String?, String?, String?).self).map {
                SecurityEvent(
                    id: $0.0, at: $0.1, kind: SecurityEvent.Kind(rawValue: $0.2), actor: $0.3, userID: $0.4, sessionID: $0.5, detail: $0.6)
            }
        }
    }
}

extension PostgresTransaction: EventWrites {
    func record(_ event: SecurityEvent) {
        execute(
            """
            INSERT INTO events (id, at, kind, actor, user_id, session_id, detail)
            VALUES (\(event.id), \(event.at), \(event.kind.rawValue), \(event.actor), \(event.userID), \(event.sessionID), \(event.detail))
            """)
    }
}
