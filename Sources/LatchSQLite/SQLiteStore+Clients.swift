import LatchCore

extension SQLiteStore: ClientStore {
    public func clients() async throws -> [Client] {
        try await read { db in
            try db.query("SELECT id, name, created_at, evidence FROM clients ORDER BY id").map {
                Client(id: $0.text(0), name: $0.text(1), createdAt: $0.int(2), evidence: try ClientEvidence.stored($0.text(3)))
            }
        }
    }

    public func signingCertificates() async throws -> [SigningCertificate] {
        try await read { db in
            try db.query("SELECT client_id, sha256, owner, created_at FROM signing_certificates ORDER BY client_id, sha256").map {
                SigningCertificate(clientID: $0.text(0), sha256: $0.text(1), owner: $0.text(2), createdAt: $0.int(3))
            }
        }
    }
}

extension SQLiteTransaction: ClientWrites {
    func insertClient(_ client: Client, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO clients (id, name, created_at, evidence) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [.text(client.id), .text(client.name), .int(client.createdAt), .text(client.evidence.storedText)], orRefuse: refusal)
    }

    func deleteClient(id: String, ifMissing refusal: any Error & Sendable) {
        apply { db in
            guard try db.run("DELETE FROM clients WHERE id = ?", [.text(id)]) > 0 else { return refusal }
            // A deleted app's sessions end with it (its signing certificates go by the foreign key).
            try db.run("DELETE FROM sessions WHERE client_id = ?", [.text(id)])
            return nil
        }
    }

    func updateClientEvidence(id: String, evidence: ClientEvidence, ifMissing refusal: any Error & Sendable) {
        changeOne("UPDATE clients SET evidence = ? WHERE id = ?", [.text(evidence.storedText), .text(id)], orRefuse: refusal)
    }

    func insertSigningCertificate(_ certificate: SigningCertificate, ifTaken refusal: any Error & Sendable) {
        changeOne(
            """
            INSERT INTO signing_certificates (client_id, sha256, owner, created_at)
            SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM clients WHERE id = ?) ON CONFLICT DO NOTHING
            """,
            [.text(certificate.clientID), .text(certificate.sha256), .text(certificate.owner), .int(certificate.createdAt), .text(certificate.clientID)],
            orRefuse: refusal)
    }

    func deleteSigningCertificate(clientID: String, sha256: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM signing_certificates WHERE client_id = ? AND sha256 = ?", [.text(clientID), .text(sha256)], orRefuse: refusal)
    }

    func deleteSigningCertificates(owner: String) {
        apply { db in
            try db.run("DELETE FROM signing_certificates WHERE owner = ?", [.text(owner)])
            return nil
        }
    }
}
