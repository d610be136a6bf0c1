import Foundation
import LatchCore
import LatchModel

/// Admin tokens, accounts and passkeys.
extension InMemoryStore.Transaction {
    func putAdminToken(_ token: AdminTokenRecord) {
        apply { state in
            state.adminTokens[token.id] = token
            return nil
        }
    }

    func putAdminTokenOfAccount(_ token: AdminTokenRecord, ifAccountMissing refusal: any Error & Sendable) {
        apply { state in
            guard state.adminAccounts[token.accountID] != nil else { return refusal }
            state.adminTokens[token.id] = token
            return nil
        }
    }

    func deleteAdminToken(id: String, ifMissing refusal: any Error & Sendable) {
        apply { state in state.adminTokens.removeValue(forKey: id) == nil ? refusal : nil }
    }

    func insertAdminAccount(_ account: AdminAccount, ifTaken refusal: any Error & Sendable) {
        apply { state in
            guard state.adminAccounts[account.id] == nil, !state.adminAccounts.values.contains(where: { $0.usernameKey == account.usernameKey })
            else { return refusal }
            state.adminAccounts[account.id] = account
            return nil
        }
    }

    func ensureRootAdminAccount(createdAt: Int64) {
        apply { state in
            let root = AdminAccount.root(createdAt: createdAt)
            if state.adminAccounts[root.id] == nil, !state.adminAccounts.values.contains(where: { $0.usernameKey == root.usernameKey }) {
                state.adminAccounts[root.id] = root
            }
            return nil
        }
    }

    func deleteAdminAccount(id: String, ifMissing refusal: any Error & Sendable, ifLastOwner lastOwner: any Error & Sendable) {
        apply { state in
            guard let account = state.adminAccounts[id] else { return refusal }
            if account.role == .owner, !state.adminAccounts.values.contains(where: { $0.role == .owner && $0.id != id }) { return lastOwner }
            state.adminAccounts[id] = nil
            state.adminTokens = state.adminTokens.filter { $0.value.accountID != id }
            state.adminPasskeys = state.adminPasskeys.filter { $0.value.accountID != id }
            return nil
        }
    }

    func insertAdminPasskey(_ passkey: AdminPasskey, ifRefused refusal: any Error & Sendable) {
        apply { state in
            guard state.adminAccounts[passkey.accountID] != nil, state.adminPasskeys[passkey.id] == nil,
                !state.adminPasskeys.values.contains(where: { $0.credentialID == passkey.credentialID })
            else { return refusal }
            state.adminPasskeys[passkey.id] = passkey
            return nil
        }
    }

    func useAdminPasskey(id: String, signCount: UInt32, newSignCount: UInt32, at: Int64, ifRaced refusal: any Error & Sendable) {
        apply { state in
            guard state.adminPasskeys[id]?.signCount == signCount else { return refusal }
            state.adminPasskeys[id]?.signCount = newSignCount
            state.adminPasskeys[id]?.lastUsedAt = at
            return nil
        }
    }

    func deleteAdminPasskey(id: String, accountID: String, ifMissing refusal: any Error & Sendable) {
        apply { state in
            guard state.adminPasskeys[id]?.accountID == accountID else { return refusal }
            state.adminPasskeys[id] = nil
            return nil
        }
    }

    func rememberRevokedAdminToken(hash: Data, id: String, at: Int64) {
        apply { state in
            if state.revokedAdminTokens[hash] == nil { state.revokedAdminTokens[hash] = at }
            return nil
        }
    }
}
