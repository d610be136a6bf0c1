import LatchCore

extension SQLiteStore: ClientStore {
    public func clients() async throws -> [Client] {
        try await read { db in
            try db.query("SELECT id, name, created_at FROM clients ORDER BY id").map { Client(id: $0.text(0), name: $0.text(1), createdAt: $0.int(2)) }
        }
    }
}

extension SQLiteTransaction: ClientWrites {
    func insertClient(_ client: Client, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO clients (id, name, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [.text(client.id), .text(client.name), .int(client.createdAt)], orRefuse: refusal)
    }

    func deleteClient(id: String, ifMissing refusal: any Error & Sendable) {
        apply { db in
            guard try db.run("DELETE FROM clients WHERE id = ?", [.text(id)]) > 0 else { return refusal }
            // A deleted app's sessions end with it.
            try db.run("DELETE FROM sessions WHERE client_id = ?", [.text(id)])
            return nil
        }
    }
}
