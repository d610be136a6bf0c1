/// A public client (an app).
public struct Client: Sendable, Hashable {
    public var id: String
    public var name: String
    public var createdAt: Int64

    public init(id: String, name: String, createdAt: Int64) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
    }
}

/// Reading clients.
public protocol ClientStore: Sendable {
    /// Every client, ordered by id.
    func clients() async throws -> [Client]
}

/// Writing clients inside a unit of work.
public protocol ClientWrites {
    /// Inserts a client; refuses when one with its id exists.
    func insertClient(_ client: Client, ifTaken refusal: any Error & Sendable)
    /// Deletes a client and its sessions; refuses when there is no such client.
    func deleteClient(id: String, ifMissing refusal: any Error & Sendable)
}

extension UnitOfWork {
    /// Adds a client; `false` when the id exists already.
    public func addClient(_ client: Client) async throws -> Bool {
        try await succeeds { $0.insertClient(client, ifTaken: $1) }
    }

    /// Deletes a client and its sessions; `false` when there was none.
    public func deleteClient(id: String) async throws -> Bool {
        try await succeeds { $0.deleteClient(id: id, ifMissing: $1) }
    }
}
