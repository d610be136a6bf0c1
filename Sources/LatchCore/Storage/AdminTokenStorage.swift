import Foundation

/// An admin bearer token as stored: its hash, never the token.
public struct AdminTokenRecord: Sendable, Hashable {
    public var id: String
    public var name: String
    public var hash: Data
    public var createdAt: Int64

    public init(id: String, name: String, hash: Data, createdAt: Int64) {
        self.id = id
        self.name = name
        self.hash = hash
        self.createdAt = createdAt
    }
}

/// Reading admin tokens (hashes only).
public protocol AdminTokenStore: Sendable {
    /// Every token, oldest first.
    func adminTokens() async throws -> [AdminTokenRecord]
    /// Whether a token with this hash was revoked: such a token is never stored again (a revoked
    /// `LATCH_ADMIN_TOKEN` stays revoked across restarts).
    func isRevokedAdminToken(hash: Data) async throws -> Bool
}

/// Writing admin tokens inside a unit of work.
public protocol AdminTokenWrites {
    /// Stores a token under its id, replacing the one with that id (the environment's token changes this way).
    func putAdminToken(_ token: AdminTokenRecord)
    /// Deletes a token; refuses when there is none with this id.
    func deleteAdminToken(id: String, ifMissing refusal: any Error & Sendable)
    /// Remembers that the token with `hash` (stored under `id`) was revoked at `at`.
    func rememberRevokedAdminToken(hash: Data, id: String, at: Int64)
}

extension UnitOfWork {
    /// Stores a token under its id, replacing the one with that id.
    public func putAdminToken(_ token: AdminTokenRecord) async throws {
        try await write { $0.putAdminToken(token) }
    }

    /// Deletes a token; `false` when there was none.
    public func deleteAdminToken(id: String) async throws -> Bool {
        try await succeeds { $0.deleteAdminToken(id: id, ifMissing: $1) }
    }

    /// Deletes `token` and remembers its hash as revoked, in one unit; `false` when it was already gone.
    public func revokeAdminToken(_ token: AdminTokenRecord, at: Int64) async throws -> Bool {
        try await succeeds { transaction, refusal in
            transaction.deleteAdminToken(id: token.id, ifMissing: refusal)
            transaction.rememberRevokedAdminToken(hash: token.hash, id: token.id, at: at)
        }
    }
}
