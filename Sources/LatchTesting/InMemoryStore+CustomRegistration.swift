import Foundation
import LatchCore
import LatchModel

/// Custom providers and their transactions.
extension InMemoryStore.Transaction {
    func insertCustomProvider(_ provider: CustomProvider, ifTaken refusal: any Error & Sendable) {
        apply { state in
            guard state.customProviders[provider.id] == nil else { return refusal }
            state.customProviders[provider.id] = provider
            return nil
        }
    }

    func updateCustomProvider(_ provider: CustomProvider, ifMissing refusal: any Error & Sendable) {
        apply { state in
            guard let stored = state.customProviders[provider.id] else { return refusal }
            var updated = provider
            updated.createdAt = stored.createdAt
            state.customProviders[provider.id] = updated
            return nil
        }
    }

    func deleteCustomProvider(id: String) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { state in
            guard state.customProviders.removeValue(forKey: id) != nil else { return nil }
            state.customTransactions = state.customTransactions.filter { $0.value.providerID != id }
            result.set(1)
            return nil
        }
        return result
    }

    func insertCustomTransaction(_ transaction: CustomTransaction, ifTaken refusal: any Error & Sendable) {
        apply { state in
            guard state.customProviders[transaction.providerID] != nil, state.customTransactions[transaction.id] == nil else { return refusal }
            state.customTransactions[transaction.id] = transaction
            return nil
        }
    }

    func recordCustomAttempts(
        id: String, attempts: Int64, status: Int64?, initData: String?, at: Int64, ifUnavailable refusal: any Error & Sendable
    ) {
        apply { state in
            guard let stored = state.customTransactions[id], stored.state == .open, at < stored.expiresAt else { return refusal }
            state.customTransactions[id]?.attempts += attempts
            state.customTransactions[id]?.lastStatus = status
            if let initData { state.customTransactions[id]?.initData = initData }
            return nil
        }
    }

    func reserveCustomAttempt(id: String, at: Int64, ifUnavailable refusal: any Error & Sendable) -> WriteResult<Int64> {
        let result = WriteResult<Int64>(0)
        apply { state in
            guard let stored = state.customTransactions[id], stored.state == .open, at < stored.expiresAt else { return refusal }
            state.customTransactions[id]?.attempts += 1
            result.set(stored.attempts + 1)
            return nil
        }
        return result
    }

    func finishCustomTransaction(
        id: String, state final: CustomTransaction.State, userID: String?, registrationID: String?, status: Int64?, at: Int64,
        ifUnavailable refusal: any Error & Sendable
    ) {
        precondition(final.isFinal, "a custom transaction is finished in a final state")
        apply { state in
            guard let stored = state.customTransactions[id], stored.state == .open, at < stored.expiresAt else { return refusal }
            state.customTransactions[id]?.state = final
            state.customTransactions[id]?.userID = userID
            state.customTransactions[id]?.registrationID = registrationID
            state.customTransactions[id]?.lastStatus = status
            state.customTransactions[id]?.finishedAt = at
            return nil
        }
    }
}
