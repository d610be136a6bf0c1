import LatchModel
import Logging

extension AdminService {
    /// The lifetime of a token created without `expiresIn`: 90 days.
    public static let defaultAdminTokenLifetime: Int64 = 90 * 86_400
    /// The bounds of `expiresIn`: a minute to 366 days.
    public static let adminTokenLifetimes: ClosedRange<Int64> = 60...(366 * 86_400)

    /// A new admin token, shown this once; only its hash is kept. It belongs to the caller's account — or, for an
    /// owner, to `request.accountId` (until admins sign in themselves, that is how an account gets its first
    /// token) — and carries `role` (default: the lower of the caller's and the account's), which may exceed
    /// neither.
    public func createAdminToken(_ request: AdminTokenRequest, caller: AdminCaller) async throws -> AdminTokenCreated {
        let name = request.name ?? "admin"
        guard Self.isName(name, max: 64) else { throw LatchError.invalidInput("name must be 1–64 printable characters") }
        let lifetime = request.expiresIn ?? Self.defaultAdminTokenLifetime
        guard Self.adminTokenLifetimes.contains(lifetime) else {
            throw LatchError.invalidInput("expiresIn must be \(Self.adminTokenLifetimes.lowerBound)–\(Self.adminTokenLifetimes.upperBound) seconds (366 days)")
        }
        let accountID = request.accountId ?? caller.accountID
        guard accountID == caller.accountID || caller.role == .owner else {
            throw LatchError.forbidden("only an owner may create tokens for another account")
        }
        guard let account = try await store.adminAccounts().first(where: { $0.id == accountID }) else {
            throw LatchError.notFound("no such admin account")
        }
        let role = request.role ?? min(caller.role, account.role)
        try AdminPolicy.checkGrant(role, by: caller)
        guard role <= account.role else {
            throw LatchError.forbidden("account \(account.id) is \(account.role.rawValue): its tokens cannot carry the role \(role.rawValue)")
        }
        let id = "at_" + random.token(byteCount: 9)
        let token = "lat_" + random.token()
        let now = clock.seconds()
        let record = AdminTokenRecord(
            id: id, name: name, hash: Secrets.hash(token), createdAt: now, accountID: account.id, role: role, expiresAt: now + lifetime)
        let event = change("tokens", "create", "token \(id) \"\(name)\" role \(role.rawValue) account \(account.id) expires \(now + lifetime)")
        // Refused when the account was deleted meanwhile: no token of a deleted account is stored.
        let stored = try await store.succeeds { transaction, refusal in
            transaction.putAdminTokenOfAccount(record, ifAccountMissing: refusal)
            transaction.record(event)
        }
        guard stored else { throw LatchError.notFound("no such admin account") }
        try await authenticator.reload()
        logger.info(
            "admin token created",
            metadata: ["id": "\(id)", "name": "\(name)", "role": "\(role.rawValue)", "account": "\(account.id)", "by": "\(caller.tokenID)"])
        return AdminTokenCreated(id: id, name: name, role: role, accountId: account.id, expiresAt: record.expiresAt, token: token)
    }

    /// The tokens `caller` may see: every one, but a `support` caller sees those it may revoke only.
    public func adminTokens(caller: AdminCaller) async throws -> AdminTokenList {
        AdminTokenList(
            tokens: try await store.adminTokens().filter { caller.role != .support || Self.mayRevoke($0, by: caller) }.map {
                AdminTokenInfo(id: $0.id, name: $0.name, role: $0.role, accountId: $0.accountID, expiresAt: $0.expiresAt, createdAt: $0.createdAt)
            })
    }

    /// Whether `caller` may revoke `token`: an owner any; an admin any up to `admin`; others their own account's up
    /// to their role. Never one above the caller's role, even of its own account (a lower token of the built-in
    /// owner's account must not revoke `LATCH_ADMIN_TOKEN`).
    static func mayRevoke(_ token: AdminTokenRecord, by caller: AdminCaller) -> Bool {
        guard caller.role != .owner else { return true }
        return token.role <= caller.role && (caller.role == .admin || token.accountID == caller.accountID)
    }

    /// Revokes admin token `id` for good (its hash is remembered, so `LATCH_ADMIN_TOKEN` set to a revoked value stays
    /// refused after a restart: a new value is needed). The last live one cannot be revoked (nobody could
    /// administer the deployment any more), and the one making the request only with `force` (its next call would
    /// be refused: a caller should know). Resources belong to accounts, not tokens: they stay.
    public func revokeAdminToken(id: String, caller: AdminCaller, force: Bool) async throws {
        let tokens = try await store.adminTokens()
        // Support sees only the tokens it may revoke: others are not found.
        guard let token = tokens.first(where: { $0.id == id }), caller.role != .support || Self.mayRevoke(token, by: caller) else {
            throw LatchError.notFound("no such admin token")
        }
        guard Self.mayRevoke(token, by: caller) else {
            throw LatchError.forbidden("revoking this \(token.role.rawValue) token needs the role \(token.role == .owner ? "owner" : "owner, or admin")")
        }
        let now = clock.seconds()
        guard tokens.contains(where: { $0.id != id && !$0.isExpired(at: now) }) else {
            throw LatchError(.conflict, "the last admin token cannot be revoked; create another first")
        }
        guard id != caller.tokenID || force else {
            throw LatchError(.conflict, "this is the token making this request: after revoking it, it is refused; repeat with force=true to revoke it anyway")
        }
        // The hash is remembered: a revoked LATCH_ADMIN_TOKEN is not re-enabled by the next start.
        let event = change("tokens", "delete", "token \(id) \"\(token.name)\" role \(token.role.rawValue) account \(token.accountID)")
        guard try await store.revokeAdminToken(token, at: now, recording: event) else { throw LatchError.notFound("no such admin token") }
        try await authenticator.reload()
        logger.info("admin token revoked", metadata: ["id": "\(id)", "by": "\(caller.tokenID)"])
    }
}
