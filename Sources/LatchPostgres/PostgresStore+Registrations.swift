import Foundation
import LatchCore
import PostgresNIO

extension PostgresStore: RegistrationStore {
    public func registration(id: String) async throws -> RegistrationRecord? {
        try await query("registration") { client in
            try await client.query("SELECT user_id, proof_hash, created_at FROM registrations WHERE id = \(id)").first((String, Data, Int64).self)
                .map { RegistrationRecord(id: id, userID: $0.0, proofHash: $0.1, createdAt: $0.2) }
        }
    }
}

extension PostgresTransaction: RegistrationWrites {
    func requireNoRegistration(id: String, ifExists refusal: any Error & Sendable) {
        check("SELECT 1 FROM registrations WHERE id = \(id)", ifFound: true, refuse: refusal)
    }

    func insertRegistration(_ record: RegistrationRecord, ifTaken refusal: any Error & Sendable) {
        changeOne(
            try """
            INSERT INTO registrations (id, user_id, proof_hash, created_at)
            VALUES (\(record.id), \(record.userID), \(record.proofHash), \(record.createdAt)) ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }
}
