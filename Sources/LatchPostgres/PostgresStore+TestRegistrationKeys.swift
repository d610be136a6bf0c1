import Foundation
import LatchCore
import LatchJOSE
import PostgresNIO

extension PostgresStore: TestRegistrationKeyStore {
    static func testKey(_ row: (String, String, Data, Int64, String?)) throws -> TestRegistrationKey {
        TestRegistrationKey(
            keyID: row.0, key: try StoredForm.sharedPublicKey(algorithm: row.1, der: row.2, column: "test_keys.public_key"), createdAt: row.3,
            owner: row.4)
    }

    public func testRegistrationKey(id: String) async throws -> TestRegistrationKey? {
        try await query("testRegistrationKey") { client in
            try await client.query("SELECT key_id, algorithm, public_key, created_at, owner FROM test_keys WHERE key_id = \(id)")
                .first((String, String, Data, Int64, String?).self).map(Self.testKey)
        }
    }

    public func testRegistrationKeys() async throws -> [TestRegistrationKey] {
        try await query("testRegistrationKeys") { client in
            try await client.query("SELECT key_id, algorithm, public_key, created_at, owner FROM test_keys ORDER BY key_id")
                .all((String, String, Data, Int64, String?).self).map(Self.testKey)
        }
    }
}

extension PostgresTransaction: TestRegistrationKeyWrites {
    func insertTestRegistrationKey(_ key: TestRegistrationKey, ifTaken refusal: any Error & Sendable) {
        changeOne(
            try """
            INSERT INTO test_keys (key_id, algorithm, public_key, created_at, owner)
            VALUES (\(key.keyID), \(key.key.algorithm.rawValue), \(key.key.derRepresentation), \(key.createdAt), \(key.owner))
            ON CONFLICT DO NOTHING RETURNING 1
            """, orRefuse: refusal)
    }

    func deleteTestRegistrationKey(id: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM test_keys WHERE key_id = \(id) RETURNING 1", orRefuse: refusal)
    }

    func deleteTestRegistrationKeys(owner: String) {
        execute("DELETE FROM test_keys WHERE owner = \(owner)")
    }
}
