import Foundation
import LatchJOSE
import LatchModel
import Logging
import Synchronization

/// Checks admin bearer tokens against the stored hashes, in constant time.
///
/// The hashes are cached and re-read by housekeeping (every 10 s), after a change made here, and on a miss (at
/// most every 5 s): a token created or revoked on another replica takes effect here within seconds.
public final class AdminAuthenticator: Sendable {
    private let store: any AdminTokenStore & UnitOfWork
    private let clock: LatchClock
    private let logger: Logger
    private let cache = Mutex<(tokens: [AdminTokenRecord], loadedAt: Int64?)>(([], nil))

    /// The id of the token configured through `LATCH_ADMIN_TOKEN` (replaced when the variable changes).
    public static let environmentTokenID = "env"

    public init(store: any AdminTokenStore & UnitOfWork, clock: LatchClock, logger: Logger = Logger(label: "latch.admin")) {
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    /// Makes sure an admin token exists: stores `configured` (from `LATCH_ADMIN_TOKEN`) as the environment's
    /// token — replacing the previous one, so changing the variable rotates it — or, when none is configured and
    /// the store has none, generates one. Returns a generated token so the caller can print it once.
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
            if !existing.contains(where: { $0.id == Self.environmentTokenID && $0.hash == hash }) {
                try await store.putAdminToken(
                    AdminTokenRecord(id: Self.environmentTokenID, name: "LATCH_ADMIN_TOKEN", hash: hash, createdAt: clock.seconds()))
            }
            try await reload()
            return nil
        }
        guard try await store.adminTokens().isEmpty else {
            try await reload()
            return nil
        }
        let token = "lat_" + random.token()
        try await store.putAdminToken(AdminTokenRecord(id: "bootstrap", name: "bootstrap", hash: Secrets.hash(token), createdAt: clock.seconds()))
        try await reload()
        return token
    }

    /// Whether `token` is an admin token.
    public func isAdmin(_ token: String) async throws -> Bool { try await tokenID(of: token) != nil }

    /// The id of the admin token `token`, or nil when it is none.
    public func tokenID(of token: String) async throws -> String? {
        guard !token.isEmpty, token.utf8.count <= 512 else { return nil }
        let hash = Secrets.hash(token)
        if let id = match(hash) { return id }
        let now = clock.seconds()
        guard cache.withLock({ state in state.loadedAt.map { now - $0 >= 5 } ?? true }) else { return nil }
        try await reload()
        return match(hash)
    }

    private func match(_ hash: Data) -> String? {
        // Compare against every stored hash, without stopping early.
        cache.withLock { state in
            state.tokens.reduce(String?.none) { found, stored in Secrets.constantTimeEquals(stored.hash, hash) ? stored.id : found }
        }
    }

    /// Re-reads the tokens.
    public func reload() async throws {
        let tokens = try await store.adminTokens()
        let now = clock.seconds()
        cache.withLock { $0 = (tokens, now) }
    }
}
