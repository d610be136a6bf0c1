import LatchJOSE

/// An admin-issued test registration key. Only the public half is kept: the private half is shown to the admin
/// once and never stored.
public struct TestRegistrationKey: Sendable {
    public var keyID: String
    public var key: PublicKey
    public var createdAt: Int64
    /// The admin account that created the key; it is deleted with that account.
    public var owner: String?

    public init(keyID: String, key: PublicKey, createdAt: Int64, owner: String? = nil) {
        self.keyID = keyID
        self.key = key
        self.createdAt = createdAt
        self.owner = owner
    }
}

/// Reading test registration keys.
public protocol TestRegistrationKeyStore: Sendable {
    func testRegistrationKey(id: String) async throws -> TestRegistrationKey?
    /// Every key, ordered by id.
    func testRegistrationKeys() async throws -> [TestRegistrationKey]
}

/// Writing test registration keys inside a unit of work.
public protocol TestRegistrationKeyWrites {
    /// Inserts a key; refuses when one with its id exists.
    func insertTestRegistrationKey(_ key: TestRegistrationKey, ifTaken refusal: any Error & Sendable)
    /// Deletes a key; refuses when there is none with this id.
    func deleteTestRegistrationKey(id: String, ifMissing refusal: any Error & Sendable)
    /// Deletes every key admin account `owner` created.
    func deleteTestRegistrationKeys(owner: String)
}

extension UnitOfWork {
    /// Adds a key; `false` when the id exists already.
    public func addTestRegistrationKey(_ key: TestRegistrationKey, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await succeeds { transaction, refusal in
            transaction.insertTestRegistrationKey(key, ifTaken: refusal)
            if let event { transaction.record(event) }
        }
    }

    /// Deletes a key; `false` when there was none.
    public func deleteTestRegistrationKey(id: String, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await succeeds { transaction, refusal in
            transaction.deleteTestRegistrationKey(id: id, ifMissing: refusal)
            if let event { transaction.record(event) }
        }
    }
}
