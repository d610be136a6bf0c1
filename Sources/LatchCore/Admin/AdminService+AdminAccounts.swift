import Foundation
import LatchModel
import Logging

extension AdminService {
    /// Creates an admin account (owners only, by the route policy). Usernames are 1–64 printable characters,
    /// unique ignoring case; `root` is the built-in owner's.
    public func createAdminAccount(_ request: AdminAccountRequest, caller: AdminCaller) async throws -> AdminAccountInfo {
        guard Self.isName(request.username, max: 64), request.username.trimmingCharacters(in: .whitespaces) == request.username else {
            throw LatchError.invalidInput("username must be 1–64 printable characters, without leading or trailing spaces")
        }
        try AdminPolicy.checkGrant(request.role, by: caller)
        let account = AdminAccount(
            id: "adm_" + random.token(byteCount: 9), username: request.username, role: request.role, createdAt: clock.seconds(),
            createdBy: caller.accountID)
        guard account.usernameKey != AdminAccount.rootUsername, try await store.addAdminAccount(account, recording: change("admins", "create", "account \(account.id) \"\(account.username)\" role \(account.role.rawValue)")) else {
            throw LatchError(.conflict, "an admin account with this username exists")
        }
        logger.info("admin account created", metadata: ["id": "\(account.id)", "role": "\(account.role.rawValue)", "by": "\(caller.accountID)"])
        return Self.info(account)
    }

    public func adminAccounts() async throws -> AdminAccountList {
        AdminAccountList(admins: try await store.adminAccounts().map(Self.info))
    }

    static func info(_ account: AdminAccount) -> AdminAccountInfo {
        AdminAccountInfo(id: account.id, username: account.username, role: account.role, createdAt: account.createdAt, createdBy: account.createdBy)
    }

    /// Deletes admin account `id`, revoking its tokens. The resources it owns (test registration keys, signing
    /// certificates) are listed in a `conflict` answer unless `deleteOwned` is set; then they are deleted in the
    /// same unit of work. The last owner cannot be deleted, and the caller's own account only with `force`.
    public func deleteAdminAccount(id: String, caller: AdminCaller, force: Bool, deleteOwned: Bool) async throws {
        guard let account = try await store.adminAccounts().first(where: { $0.id == id }) else {
            throw LatchError.notFound("no such admin account")
        }
        let lastOwner = LatchError(.conflict, "the last owner account cannot be deleted; create another owner first")
        guard id != caller.accountID || force else {
            throw LatchError(
                .conflict, "this is the account making this request: its tokens, this one too, are revoked with it; repeat with force=true to delete it anyway")
        }
        let testKeys = try await store.testRegistrationKeys().filter { $0.owner == id }
        let certificates = try await store.signingCertificates().filter { $0.owner == id }
        if !deleteOwned, !testKeys.isEmpty || !certificates.isEmpty {
            let list = (testKeys.map { "test key \($0.keyID)" } + certificates.map { "signing certificate \($0.clientID)/\($0.sha256)" })
            throw LatchError(
                .conflict,
                "this account owns \(list.count) resource(s) that are deleted with it: \(list.prefix(20).joined(separator: ", "))"
                    + (list.count > 20 ? ", …" : "") + "; repeat with deleteOwned=true to delete it and them")
        }
        let tokens = try await store.adminTokens().filter { $0.accountID == id }
        let now = clock.seconds()
        let event = change(
            "admins", "delete",
            "account \(id) \"\(account.username)\" role \(account.role.rawValue): \(tokens.count) token(s), \(testKeys.count) test key(s), \(certificates.count) signing certificate(s)")
        try await store.write { transaction in
            // Refused without an owner left; every token goes with the account (their hashes remembered).
            transaction.deleteAdminAccount(id: id, ifMissing: LatchError.notFound("no such admin account"), ifLastOwner: lastOwner)
            for token in tokens { transaction.rememberRevokedAdminToken(hash: token.hash, id: token.id, at: now) }
            transaction.deleteTestRegistrationKeys(owner: id)
            transaction.deleteSigningCertificates(owner: id)
            transaction.record(event)
        }
        try await authenticator.reload()
        if !certificates.isEmpty { try await evidenceApps?.reload() }
        logger.info(
            "admin account deleted",
            metadata: [
                "id": "\(id)", "role": "\(account.role.rawValue)", "tokens": "\(tokens.count)", "testKeys": "\(testKeys.count)",
                "signingCertificates": "\(certificates.count)", "by": "\(caller.accountID)",
            ])
    }
}
