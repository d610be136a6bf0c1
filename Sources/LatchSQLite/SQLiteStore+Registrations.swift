import LatchCore

extension SQLiteStore: RegistrationStore {
    public func registration(id: String) async throws -> RegistrationRecord? {
        try await read { db in
            try db.row("SELECT user_id, proof_hash, created_at FROM registrations WHERE id = ?", [.text(id)]).map {
                RegistrationRecord(id: id, userID: $0.text(0), proofHash: $0.blob(1), createdAt: $0.int(2))
            }
        }
    }
}

extension SQLiteTransaction: RegistrationWrites {
    func requireNoRegistration(id: String, ifExists refusal: any Error & Sendable) {
        check("SELECT 1 FROM registrations WHERE id = ?", [.text(id)], ifFound: true, refuse: refusal)
    }

    func insertRegistration(_ record: RegistrationRecord, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO registrations (id, user_id, proof_hash, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [.text(record.id), .text(record.userID), .blob(record.proofHash), .int(record.createdAt)], orRefuse: refusal)
    }
}
