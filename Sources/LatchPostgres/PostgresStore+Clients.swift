import LatchCore
import PostgresNIO

extension PostgresStore: ClientStore {
    public func clients() async throws -> [Client] {
        try await query("clients") { client in
            try await client.query("SELECT id, name, created_at, evidence FROM clients ORDER BY id").all((String, String, Int64, String).self)
                .map { Client(id: $0.0, name: $0.1, createdAt: $0.2, evidence: try ClientEvidence.stored($0.3)) }
        }
    }

    public func signingCertificates() async throws -> [SigningCertificate] {
        try await query("signingCertificates") { client in
            try await client.query("SELECT client_id, sha256, owner, created_at FROM signing_certificates ORDER BY client_id, sha256")
                .all((String, String, String, Int64).self)
                .map { SigningCertificate(clientID: $0.0, sha256: $0.1, owner: $0.2, createdAt: $0.3) }
        }
    }
}

extension PostgresTransaction: ClientWrites {
    func insertClient(_ client: Client, ifTaken refusal: any Error & Sendable) {
        changeOne(
            """
            INSERT INTO clients (id, name, created_at, evidence) VALUES (\(client.id), \(client.name), \(client.createdAt), \(client.evidence.storedText))
            ON CONFLICT DO NOTHING RETURNING 1
            """,
            orRefuse: refusal)
    }

    func deleteClient(id: String, ifMissing refusal: any Error & Sendable) {
        add(statements: 2) { connection in
            guard try await connection.run("DELETE FROM clients WHERE id = \(id) RETURNING 1").first(Int.self) != nil else { return refusal }
            // A deleted app's sessions end with it (its signing certificates go by the foreign key).
            try await connection.run("DELETE FROM sessions WHERE client_id = \(id)")
            return nil
        }
    }

    func updateClientEvidence(id: String, evidence: ClientEvidence, ifMissing refusal: any Error & Sendable) {
        changeOne("UPDATE clients SET evidence = \(evidence.storedText) WHERE id = \(id) RETURNING 1", orRefuse: refusal)
    }

    func insertSigningCertificate(_ certificate: SigningCertificate, ifTaken refusal: any Error & Sendable) {
        changeOne(
            """
            INSERT INTO signing_certificates (client_id, sha256, owner, created_at)
            SELECT \(certificate.clientID), \(certificate.sha256), \(certificate.owner), \(certificate.createdAt)
            WHERE EXISTS (SELECT 1 FROM clients WHERE id = \(certificate.clientID) FOR KEY SHARE)
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func deleteSigningCertificate(clientID: String, sha256: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM signing_certificates WHERE client_id = \(clientID) AND sha256 = \(sha256) RETURNING 1", orRefuse: refusal)
    }

    func deleteSigningCertificates(owner: String) {
        execute("DELETE FROM signing_certificates WHERE owner = \(owner)")
    }
}
