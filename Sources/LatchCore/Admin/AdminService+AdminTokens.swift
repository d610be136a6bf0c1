import LatchModel
import Logging

extension AdminService {
    /// A new admin token, shown this once; only its hash is kept.
    public func createAdminToken(name: String?) async throws -> AdminTokenCreated {
        let name = name ?? "admin"
        guard Self.isName(name, max: 64) else { throw LatchError.invalidInput("name must be 1–64 printable characters") }
        let id = "at_" + random.token(byteCount: 9)
        let token = "lat_" + random.token()
        let record = AdminTokenRecord(id: id, name: name, hash: Secrets.hash(token), createdAt: clock.seconds())
        let event = change("tokens", "create", "token \(id) \"\(name)\"")
        try await store.write {
            $0.putAdminToken(record)
            $0.record(event)
        }
        try await authenticator.reload()
        logger.info("admin token created", metadata: ["id": "\(id)", "name": "\(name)"])
        return AdminTokenCreated(id: id, name: name, token: token)
    }

    public func adminTokens() async throws -> AdminTokenList {
        AdminTokenList(tokens: try await store.adminTokens().map { AdminTokenInfo(id: $0.id, name: $0.name, createdAt: $0.createdAt) })
    }

    /// Revokes a token for good (its hash is remembered, so `LATCH_ADMIN_TOKEN` set to a revoked value stays
    /// refused after a restart: a new value is needed); the last one cannot be revoked (nobody could administer the deployment any more), and the
    /// one making the request only with `force` (its next call would be refused: a caller should know).
    /// Revokes admin token `id`. Resources it owns (signing certificates) are listed in a `conflict` answer unless
    /// `deleteOwned` is set; then they are deleted in the same unit of work.
    public func revokeAdminToken(id: String, callerTokenID: String?, force: Bool, deleteOwned: Bool = false) async throws {
        let tokens = try await store.adminTokens()
        guard let token = tokens.first(where: { $0.id == id }) else { throw LatchError.notFound("no such admin token") }
        guard tokens.count > 1 else { throw LatchError(.conflict, "the last admin token cannot be revoked; create another first") }
        guard id != callerTokenID || force else {
            throw LatchError(.conflict, "this is the token making this request: after revoking it, it is refused; repeat with force=true to revoke it anyway")
        }
        let owned = try await store.signingCertificates().filter { $0.owner == id }
        guard owned.isEmpty || deleteOwned else {
            let list = owned.prefix(20).map { "\($0.clientID)/\($0.sha256)" }.joined(separator: ", ")
            throw LatchError(
                .conflict,
                "this token owns \(owned.count) signing certificate(s) that are deleted with it: \(list); repeat with deleteOwned=true to revoke it and delete them")
        }
        // The hash is remembered: a revoked LATCH_ADMIN_TOKEN is not re-enabled by the next start.
        let event = change(
            "tokens", "delete", "token \(id) \"\(token.name)\"" + (owned.isEmpty ? "" : " with \(owned.count) signing certificate(s)"))
        let revoked = try await store.succeeds { transaction, refusal in
            transaction.deleteAdminToken(id: token.id, ifMissing: refusal)
            transaction.record(event)
            transaction.rememberRevokedAdminToken(hash: token.hash, id: token.id, at: clock.seconds())
            transaction.deleteSigningCertificates(owner: token.id)
        }
        guard revoked else { throw LatchError.notFound("no such admin token") }
        try await authenticator.reload()
        if !owned.isEmpty { try await evidenceApps?.reload() }
        logger.info("admin token revoked", metadata: ["id": "\(id)"])
    }
}
