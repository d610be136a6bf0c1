import LatchCore
import LatchJOSE

extension SQLiteStore: TestRegistrationKeyStore {
    static func decodeTestKey(_ row: SQLRow) throws -> TestRegistrationKey {
        TestRegistrationKey(
            keyID: row.text(0), key: try StoredForm.sharedPublicKey(algorithm: row.text(1), der: row.blob(2), column: "test_keys.public_key"),
            createdAt: row.int(3), owner: row.optionalText(4))
    }

    public func testRegistrationKey(id: String) async throws -> TestRegistrationKey? {
        try await read { db in
            try db.row("SELECT key_id, algorithm, public_key, created_at, owner FROM test_keys WHERE key_id = ?", [.text(id)]).map(Self.decodeTestKey)
        }
    }

    public func testRegistrationKeys() async throws -> [TestRegistrationKey] {
        try await read { db in
            try db.query("SELECT key_id, algorithm, public_key, created_at, owner FROM test_keys ORDER BY key_id").map(Self.decodeTestKey)
        }
    }
}

extension SQLiteTransaction: TestRegistrationKeyWrites {
    func insertTestRegistrationKey(_ key: TestRegistrationKey, ifTaken refusal: any Error & Sendable) {
        changeOne(
            "INSERT INTO test_keys (key_id, algorithm, public_key, created_at, owner) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [
                .text(key.keyID), .text(key.key.algorithm.rawValue), .blob(key.key.derRepresentation), .int(key.createdAt),
                key.owner.map(SQLValue.text) ?? .null,
            ], orRefuse: refusal)
    }

    func deleteTestRegistrationKey(id: String, ifMissing refusal: any Error & Sendable) {
        changeOne("DELETE FROM test_keys WHERE key_id = ?", [.text(id)], orRefuse: refusal)
    }

    func deleteTestRegistrationKeys(owner: String) {
        apply { db in
            try db.run("DELETE FROM test_keys WHERE owner = ?", [.text(owner)])
            return nil
        }
    }
}
