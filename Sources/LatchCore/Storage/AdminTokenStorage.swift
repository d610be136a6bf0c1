import Foundation
import LatchModel

/// An admin account: who owns admin tokens and the resources they create.
public struct AdminAccount: Sendable, Hashable {
    /// The built-in owner: `LATCH_ADMIN_TOKEN` and the generated bootstrap token belong to it.
    public static let rootID = "adm_root"
    /// The built-in owner's username, reserved.
    public static let rootUsername = "root"

    public var id: String
    public var username: String
    public var role: AdminRole
    public var createdAt: Int64
    /// The account that created this one; nil for the built-in owner.
    public var createdBy: String?

    public init(id: String, username: String, role: AdminRole, createdAt: Int64, createdBy: String?) {
        self.id = id
        self.username = username
        self.role = role
        self.createdAt = createdAt
        self.createdBy = createdBy
    }

    /// What usernames are unique by: two usernames that differ only in case are the same.
    public var usernameKey: String { username.lowercased() }

    /// The built-in owner account, `root`.
    public static func root(createdAt: Int64) -> AdminAccount {
        AdminAccount(id: rootID, username: rootUsername, role: .owner, createdAt: createdAt, createdBy: nil)
    }
}

/// An admin bearer token as stored: its hash, never the token.
public struct AdminTokenRecord: Sendable, Hashable {
    public var id: String
    public var name: String
    public var hash: Data
    public var createdAt: Int64
    /// The account the token belongs to.
    public var accountID: String
    /// What the token may do (at most its account's role when created).
    public var role: AdminRole
    /// Unix seconds from which the token is refused; nil for never.
    public var expiresAt: Int64?

    public init(
        id: String, name: String, hash: Data, createdAt: Int64, accountID: String = AdminAccount.rootID, role: AdminRole = .owner,
        expiresAt: Int64? = nil
    ) {
        self.id = id
        self.name = name
        self.hash = hash
        self.createdAt = createdAt
        self.accountID = accountID
        self.role = role
        self.expiresAt = expiresAt
    }

    /// Whether the token is refused at `now`.
    public func isExpired(at now: Int64) -> Bool { expiresAt.map { now >= $0 } ?? false }
}

/// A passkey an admin signs in to the console with (a WebAuthn credential of an admin account).
public struct AdminPasskey: Sendable, Hashable {
    public var id: String
    public var accountID: String
    public var credentialID: Data
    /// The credential's COSE public key.
    public var publicKeyCOSE: Data
    public var signCount: UInt32
    public var aaguid: Data
    public var name: String
    public var createdAt: Int64
    public var lastUsedAt: Int64?

    public init(
        id: String, accountID: String, credentialID: Data, publicKeyCOSE: Data, signCount: UInt32, aaguid: Data, name: String, createdAt: Int64,
        lastUsedAt: Int64? = nil
    ) {
        self.id = id
        self.accountID = accountID
        self.credentialID = credentialID
        self.publicKeyCOSE = publicKeyCOSE
        self.signCount = signCount
        self.aaguid = aaguid
        self.name = name
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}

/// Reading admin accounts, tokens (hashes only) and passkeys.
public protocol AdminTokenStore: Sendable {
    /// Every token, oldest first.
    func adminTokens() async throws -> [AdminTokenRecord]
    /// Whether a token with this hash was revoked: such a token is never stored again (a revoked
    /// `LATCH_ADMIN_TOKEN` stays revoked across restarts).
    func isRevokedAdminToken(hash: Data) async throws -> Bool
    /// Every admin account, oldest first.
    func adminAccounts() async throws -> [AdminAccount]
    /// The passkeys of admin account `accountID`, oldest first.
    func adminPasskeys(accountID: String) async throws -> [AdminPasskey]
    /// The admin passkey with this credential id.
    func adminPasskey(credentialID: Data) async throws -> AdminPasskey?
}

/// Writing admin tokens inside a unit of work.
public protocol AdminTokenWrites {
    /// Stores a token under its id, replacing the one with that id (the environment's token changes this way).
    func putAdminToken(_ token: AdminTokenRecord)
    /// Stores a new token of an existing account; refuses when its account does not exist.
    func putAdminTokenOfAccount(_ token: AdminTokenRecord, ifAccountMissing refusal: any Error & Sendable)
    /// Deletes a token; refuses when there is none with this id.
    func deleteAdminToken(id: String, ifMissing refusal: any Error & Sendable)
    /// Remembers that the token with `hash` (stored under `id`) was revoked at `at`.
    func rememberRevokedAdminToken(hash: Data, id: String, at: Int64)
    /// Inserts an account; refuses when its id or its username (ignoring case) is taken.
    func insertAdminAccount(_ account: AdminAccount, ifTaken refusal: any Error & Sendable)
    /// Inserts the built-in owner account unless it (or its username) exists.
    func ensureRootAdminAccount(createdAt: Int64)
    /// Deletes an account and every token it holds; refuses when there is none with this id, or when it is the
    /// last `owner` (checked under a lock on the owners, so two replicas deleting the last two owners at once
    /// cannot both succeed).
    func deleteAdminAccount(id: String, ifMissing refusal: any Error & Sendable, ifLastOwner lastOwner: any Error & Sendable)
    /// Inserts a passkey of an existing account; refuses when its credential id is registered already or its account
    /// does not exist. An account's passkeys go with it.
    func insertAdminPasskey(_ passkey: AdminPasskey, ifRefused refusal: any Error & Sendable)
    /// Records a sign-in with passkey `id`: its counter moves from `signCount` to `newSignCount`, compare-and-set;
    /// refuses when the stored counter is no longer `signCount` (another sign-in raced this one) or the passkey is gone.
    func useAdminPasskey(id: String, signCount: UInt32, newSignCount: UInt32, at: Int64, ifRaced refusal: any Error & Sendable)
    /// Deletes passkey `id` of `accountID`; refuses when there is none.
    func deleteAdminPasskey(id: String, accountID: String, ifMissing refusal: any Error & Sendable)
}

extension UnitOfWork {
    /// Adds an account; `false` when its id or username is taken.
    public func addAdminAccount(_ account: AdminAccount, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await succeeds { transaction, refusal in
            transaction.insertAdminAccount(account, ifTaken: refusal)
            if let event { transaction.record(event) }
        }
    }

    /// Stores a token under its id, replacing the one with that id.
    public func putAdminToken(_ token: AdminTokenRecord) async throws {
        try await write { $0.putAdminToken(token) }
    }

    /// Deletes a token; `false` when there was none.
    public func deleteAdminToken(id: String) async throws -> Bool {
        try await succeeds { $0.deleteAdminToken(id: id, ifMissing: $1) }
    }

    /// Deletes `token` and remembers its hash as revoked, in one unit; `false` when it was already gone.
    public func revokeAdminToken(_ token: AdminTokenRecord, at: Int64, recording event: SecurityEvent? = nil) async throws -> Bool {
        try await succeeds { transaction, refusal in
            transaction.deleteAdminToken(id: token.id, ifMissing: refusal)
            transaction.rememberRevokedAdminToken(hash: token.hash, id: token.id, at: at)
            if let event { transaction.record(event) }
        }
    }
}
