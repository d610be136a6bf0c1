import LatchCore
import PostgresNIO

extension PostgresStore: ClientStore {
    public func clients() async throws -> [Client] {
        try await query("clients") { client in
            try await client.query("SELECT id, name, created_at FROM clients ORDER BY id").all((String, String, Int64).self)
                .map { Client(id: $0.0, name: $0.1, createdAt: $0.2) }
        }
    }
}

extension PostgresTransaction: ClientWrites {
    func insertClient(_ client: Client, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO clients (id, name, created_at) VALUES (\(client.id), \(client.name), \(client.createdAt)) ON CONFLICT DO NOTHING RETURNING 1",
            orRefuse: refusal)
    }

    func deleteClient(id: String, ifMissing refusal: any Error & Sendable) {
        add(statements: 2) { connection in
            guard try await connection.run("DELETE FROM clients WHERE id = \(id) RETURNING 1").first(Int.self) != nil else { return refusal }
            // A deleted app's sessions end with it.
            try await connection.run("DELETE FROM sessions WHERE client_id = \(id)")
            return nil
        }
    }
}
