import Foundation
import LatchCore
import LatchModel
import Logging

/// `latch admin bootstrap --username <name>`: the first owner, made directly in the store (no admin exists to call
/// the API yet), and a one-time link at which it enrolls its console passkey.
public enum AdminBootstrap {
    /// Creates owner account `username` unless it exists (an existing owner gets a new link: a lost passkey is
    /// recovered by whoever holds the data folder or database, who could do anything anyway); refuses an existing
    /// account of another role. Both the account and the link are audited (actor `system`).
    public static func enrollmentLink(
        store: any LatchStore, keyEncryptionKey: [UInt8], issuer: String, username: String, clock: LatchClock = .system,
        random: RandomSource = .system, logger: Logger = Logger(label: "latch.bootstrap")
    ) async throws -> AdminEnrollmentLink {
        guard !username.isEmpty, username.utf8.count <= 64, !username.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }),
            username.trimmingCharacters(in: .whitespaces) == username
        else { throw LatchError.invalidInput("username must be 1–64 printable characters, without leading or trailing spaces") }
        guard username.lowercased() != AdminAccount.rootUsername else { throw LatchError.invalidInput("root is the built-in account's name") }
        // Records chain under the deployment's key, as the server's do.
        store.auditChain.setKey(KeySealer.derivedKey(from: keyEncryptionKey, purpose: "audit chain mac v1"))
        let account: AdminAccount
        if let existing = try await store.adminAccounts().first(where: { $0.usernameKey == username.lowercased() }) {
            guard existing.role == .owner else {
                throw LatchError(.conflict, "the account \(existing.username) exists with the role \(existing.role.rawValue); bootstrap makes owners only")
            }
            account = existing
        } else {
            account = AdminAccount(id: "adm_" + random.token(byteCount: 9), username: username, role: .owner, createdAt: clock.seconds(), createdBy: nil)
            let event = SecurityEvent(
                id: random.timeOrderedID(now: clock.now()), at: clock.seconds(), kind: .admin("admins", "create"), actor: "system",
                detail: "account \(account.id) \"\(account.username)\" role owner by latch admin bootstrap")
            guard try await store.addAdminAccount(account, recording: event) else {
                throw LatchError(.conflict, "an admin account with this username was created meanwhile; run bootstrap again")
            }
        }
        let signIn = AdminSignIn(
            store: store, authenticator: AdminTokenGate(store: store, clock: clock, logger: logger), settings: AdminSignInSettings.defaults(issuer: issuer),
            key: KeySealer.derivedKey(from: keyEncryptionKey, purpose: "admin console v1"), clock: clock, random: random, logger: logger)
        let link = try await AuditOrigin.with({ $0.admin = nil }) { try await signIn.enrollmentLink(accountID: account.id, issuer: issuer) }
        // No server may be running to seal what this wrote: seal it now (a running one's sealer may get there first).
        try await store.sealAudit()
        return link
    }
}
