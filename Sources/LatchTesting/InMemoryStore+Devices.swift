import Foundation
import LatchCore
import LatchModel

/// Device keys, out-of-band transactions, authenticators and PIN attempts.
extension InMemoryStore.Transaction {
    func insertDeviceKey(_ key: DeviceKey, ifTaken refusal: any Error & Sendable) {
        apply { state in
            let id = InMemoryStore.DeviceKeyID(userID: key.userID, keyID: key.keyID)
            guard state.users[key.userID] != nil else { preconditionFailure("device key of an unknown user") }
            guard state.deviceKeys[id] == nil else { return refusal }
            state.deviceKeys[id] = key
            return nil
        }
    }

    func insertOutOfBandTransaction(_ transaction: OutOfBandTransaction, ifTaken refusal: any Error & Sendable) {
        apply { state in
            guard state.users[transaction.userID] != nil, state.outOfBand[transaction.id] == nil,
                !state.outOfBand.values.contains(where: {
                    $0.tokenHash == transaction.tokenHash || $0.statusTokenHash == transaction.statusTokenHash
                })
            else { return refusal }
            state.outOfBand[transaction.id] = transaction
            return nil
        }
    }

    func redeemOutOfBandTransaction(id: String, at: Int64, ifUnavailable refusal: any Error & Sendable) {
        apply { state in
            guard let stored = state.outOfBand[id], stored.state == .pending, at < stored.expiresAt else { return refusal }
            state.outOfBand[id]?.state = .redeemed
            state.outOfBand[id]?.redeemedAt = at
            return nil
        }
    }

    func completeOutOfBandTransaction(
        id: String, state final: OutOfBandTransaction.State, authenticatorID: String?, at: Int64, ifUnavailable refusal: any Error & Sendable
    ) {
        apply { state in
            guard state.outOfBand[id]?.state == .redeemed else { return refusal }
            state.outOfBand[id]?.state = final
            state.outOfBand[id]?.completedAt = at
            state.outOfBand[id]?.authenticatorID = authenticatorID
            return nil
        }
    }

    func insertAuthenticator(_ authenticator: Authenticator, ifTaken refusal: any Error & Sendable) {
        apply { state in
            guard state.users[authenticator.userID] != nil, state.authenticators[authenticator.id] == nil,
                !state.authenticators.values.contains(where: { $0.credentialID == authenticator.credentialID })
            else { return refusal }
            state.authenticators[authenticator.id] = authenticator
            return nil
        }
    }

    func recordAuthenticatorUse(id: String, signCount: UInt32, failedAttempts: Int?, at: Int64, ifChanged refusal: any Error & Sendable) {
        apply { state in
            guard let stored = state.authenticators[id], stored.signCount < signCount || (stored.signCount == 0 && signCount == 0),
                failedAttempts.map({ stored.failedAttempts == $0 }) ?? true
            else { return refusal }
            state.authenticators[id]?.signCount = signCount
            state.authenticators[id]?.lastUsedAt = at
            state.authenticators[id]?.failedAttempts = 0
            state.authenticators[id]?.lastFailedAt = nil
            return nil
        }
    }

    func deleteAuthenticators(userID: String) {
        apply { state in
            state.authenticators = state.authenticators.filter { $0.value.userID != userID }
            return nil
        }
    }

    func reservePinAttempt(id: String, maxAttempts: Int, coolDowns: [Int64], at: Int64, ifRefused refusal: any Error & Sendable) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { state in
            guard let stored = state.authenticators[id], stored.failedAttempts < maxAttempts else { return refusal }
            let wait = PinPolicy.coolDown(after: stored.failedAttempts, of: coolDowns)
            if stored.failedAttempts > 0, wait > 0, let last = stored.lastFailedAt, last.adding(seconds: wait) > at { return refusal }
            state.authenticators[id]?.failedAttempts = stored.failedAttempts + 1
            state.authenticators[id]?.lastFailedAt = max(stored.lastFailedAt ?? at, at)
            result.set(stored.failedAttempts + 1)
            return nil
        }
        return result
    }

    func releasePinAttempt(id: String) {
        apply { state in
            if let stored = state.authenticators[id], stored.failedAttempts > 0 { state.authenticators[id]?.failedAttempts = stored.failedAttempts - 1 }
            return nil
        }
    }

    func unlockAuthenticator(id: String, userID: String, ifMissing refusal: any Error & Sendable) {
        apply { state in
            guard state.authenticators[id]?.userID == userID else { return refusal }
            state.authenticators[id]?.failedAttempts = 0
            state.authenticators[id]?.lastFailedAt = nil
            return nil
        }
    }

    func replaceAuthenticatorKey(
        id: String, oldPublicKeyCOSE: Data, publicKeyCOSE: Data, signCount: UInt32, at: Int64, ifChanged refusal: any Error & Sendable
    ) {
        apply { state in
            guard state.authenticators[id]?.publicKeyCOSE == oldPublicKeyCOSE else { return refusal }
            state.authenticators[id]?.publicKeyCOSE = publicKeyCOSE
            state.authenticators[id]?.signCount = signCount
            state.authenticators[id]?.failedAttempts = 0
            state.authenticators[id]?.lastFailedAt = nil
            state.authenticators[id]?.lastUsedAt = at
            return nil
        }
    }

    func renameAuthenticator(id: String, userID: String, name: String, ifMissing refusal: any Error & Sendable) {
        apply { state in
            guard state.authenticators[id]?.userID == userID else { return refusal }
            state.authenticators[id]?.name = name
            return nil
        }
    }

    func deleteAuthenticator(id: String, userID: String, ifMissing refusal: any Error & Sendable) {
        apply { state in
            guard state.authenticators[id]?.userID == userID else { return refusal }
            state.authenticators[id] = nil
            return nil
        }
    }

    func advanceSignCount(userID: String, keyID: String, to signCount: UInt32, ifNotGreater refusal: any Error & Sendable) {
        apply { state in
            let id = InMemoryStore.DeviceKeyID(userID: userID, keyID: keyID)
            guard let stored = state.deviceKeys[id]?.attestation, stored.signCount < signCount else { return refusal }
            state.deviceKeys[id]?.attestation?.signCount = signCount
            return nil
        }
    }
}
