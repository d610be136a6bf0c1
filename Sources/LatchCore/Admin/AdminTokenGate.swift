import Foundation
import LatchJOSE
import LatchModel
import Logging

/// Who is calling the admin API: the token presented, the account it belongs to and the role it carries.
public struct AdminCaller: Sendable, Hashable {
    public var tokenID: String
    public var accountID: String
    public var role: AdminRole

    public init(tokenID: String, accountID: String, role: AdminRole) {
        self.tokenID = tokenID
        self.accountID = accountID
        self.role = role
    }
}

/// Checks admin bearer tokens against the stored hashes, in constant time.
///
/// The hashes are cached with each token's account, role and expiry, and re-read by housekeeping (every 10 s),
/// after a change made here, and on a miss (at most every 5 s): a token created or revoked on another replica
/// takes effect here within seconds. An expired token is refused at once (its expiry is cached with it).
public final class AdminTokenGate: Sendable {
    private let store: any AdminTokenStore & UnitOfWork
    private let clock: LatchClock
    private let logger: Logger
    private let cache = Locked<(tokens: [AdminTokenRecord], loadedAt: Int64?)>(([], nil))

    /// The id of the token configured through `LATCH_ADMIN_TOKEN` (replaced when the variable changes).
    public static let environmentTokenID = "env"

    public init(store: any AdminTokenStore & UnitOfWork, clock: LatchClock, logger: Logger = Logger(label: "latch.admin")) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    /// Makes sure an admin token exists: stores `configured` (from `LATCH_ADMIN_TOKEN`) as the environment's
    /// token — replacing the previous one, so changing the variable rotates it — or, when none is configured and
    /// the store has none, generates one. Returns a generated token so the caller can print it once. Both are
    /// `owner` tokens of the built-in account `adm_root`, which is created when missing.
    public func bootstrap(configured: String?, random: RandomSource) async throws -> String? {
        if let configured, !configured.isEmpty {
            guard configured.utf8.count >= 16 else {
                throw LatchError.invalidInput("the admin token must be at least 16 characters")
            }
            let hash = Secrets.hash(configured)
            if try await store.isRevokedAdminToken(hash: hash) {
                logger.warning(
                    "LATCH_ADMIN_TOKEN holds a revoked token and is ignored; set a new value to re-enable an environment token")
                try await reload()
                return nil
            }
            let existing = try await store.adminTokens()
            if !existing.contains(where: { $0.id == Self.environmentTokenID && $0.hash == hash && $0.accountID == AdminAccount.rootID }) {
                try await putRootToken(AdminTokenRecord(id: Self.environmentTokenID, name: "LATCH_ADMIN_TOKEN", hash: hash, createdAt: clock.seconds()))
            }
            try await reload()
            return nil
        }
        guard try await store.adminTokens().isEmpty else {
            try await reload()
            return nil
        }
        let token = "lat_" + random.token()
        try await putRootToken(AdminTokenRecord(id: "bootstrap", name: "bootstrap", hash: Secrets.hash(token), createdAt: clock.seconds()))
        try await reload()
        return token
    }

    /// Stores an owner token of `adm_root`, creating the account first when it is missing.
    private func putRootToken(_ token: AdminTokenRecord) async throws {
        let now = clock.seconds()
        try await store.write { transaction in
            transaction.ensureRootAdminAccount(createdAt: now)
            transaction.putAdminToken(token)
        }
    }

    /// Whether `token` is a live admin token.
    public func isAdmin(_ token: String) async throws -> Bool { try await caller(of: token) != nil }

    /// The id of the live admin token `token`, or nil when it is none.
    public func tokenID(of token: String) async throws -> String? { try await caller(of: token)?.tokenID }

    /// Who presents `token`: nil when it is no admin token, or an expired one.
    /// With `reloadingOnMiss`, a miss re-reads the tokens at once (for a token known genuine — a console session's,
    /// sealed — that another replica may have just created); otherwise at most every 5 s.
    public func caller(of token: String, reloadingOnMiss: Bool = false) async throws -> AdminCaller? {
        guard !token.isEmpty, token.utf8.count <= 512 else { return nil }
        let hash = Secrets.hash(token)
        let now = clock.seconds()
        if let record = match(hash) { return Self.live(record, now: now) }
        guard reloadingOnMiss || cache.withLock({ state in state.loadedAt.map { now - $0 >= 5 } ?? true }) else { return nil }
        try await reload()
        return match(hash).flatMap { Self.live($0, now: now) }
    }

    private static func live(_ record: AdminTokenRecord, now: Int64) -> AdminCaller? {
        record.isExpired(at: now) ? nil : AdminCaller(tokenID: record.id, accountID: record.accountID, role: record.role)
    }

    private func match(_ hash: Data) -> AdminTokenRecord? {
        // Compare against every stored hash, without stopping early.
        cache.withLock { state in
            state.tokens.reduce(AdminTokenRecord?.none) { found, stored in Secrets.constantTimeEquals(stored.hash, hash) ? stored : found }
        }
    }

    /// Re-reads the tokens (a token whose account is gone is dropped, whatever raced its deletion).
    public func reload() async throws {
        let accounts = Set(try await store.adminAccounts().map(\.id))
        let tokens = try await store.adminTokens().filter { accounts.contains($0.accountID) }
        let now = clock.seconds()
        cache.withLock { $0 = (tokens, now) }
    }
}
