import Foundation

/// A registration's idempotency record: the client's `registrationId`, the user it created, and the hash of the
/// proof that came with it.
public struct RegistrationRecord: Sendable, Hashable {
    public var id: String
    public var userID: String
    public var proofHash: Data
    public var createdAt: Int64

    public init(id: String, userID: String, proofHash: Data, createdAt: Int64) {
        self.id = id
        self.userID = userID
        self.proofHash = proofHash
        self.createdAt = createdAt
    }
}

/// Reading registration records.
public protocol RegistrationStore: Sendable {
    func registration(id: String) async throws -> RegistrationRecord?
}

/// Writing registration records inside a unit of work.
public protocol RegistrationWrites {
    /// Refuses when a record with this id exists.
    func requireNoRegistration(id: String, ifExists refusal: any Error & Sendable)
    /// Inserts a record; refuses when one with its id exists (a concurrent registration won).
    func insertRegistration(_ record: RegistrationRecord, ifTaken refusal: any Error & Sendable)
}
