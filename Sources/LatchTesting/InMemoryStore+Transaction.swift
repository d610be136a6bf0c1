import Foundation
import LatchCore
import LatchModel

extension InMemoryStore {
    /// The writes of one unit, applied to a copy of the state; the first refusal stops them.
    final class Transaction: StoreTransaction {
        var state: State
        var refusal: (any Error & Sendable)?
        let chain: AuditChain

        init(_ state: State, chain: AuditChain) {
            self.state = state
            self.chain = chain
        }

        /// Runs `change` unless the unit was refused already; a returned refusal refuses it. Internal, not private:
        /// each domain's writes are an extension in its own `InMemoryStore+<Domain>.swift`.
        func apply(_ change: (inout State) -> (any Error & Sendable)?) {
            guard refusal == nil else { return }
            refusal = change(&state)
        }

        func consume(_ value: SingleUse, ifUnavailable refusal: any Error & Sendable) {
            apply { state in
                switch value {
                case .jti(let jti, let issuer, let until):
                    let key = JTI(issuer: issuer, jti: jti)
                    guard state.usedJTIs[key] == nil else { return refusal }
                    state.usedJTIs[key] = until
                }
                return nil
            }
        }

        func insertUser(_ user: User, ifTaken refusal: any Error & Sendable) {
            apply { state in
                let taken = state.users.values.contains {
                    $0.id == user.id || ($0.source == user.source && $0.username == user.username)
                        || (user.issuer != nil && $0.issuer == user.issuer && $0.subject == user.subject)
                }
                if taken { return refusal }
                state.users[user.id] = user
                return nil
            }
        }

        func requireUser(id: String, ifMissing refusal: any Error & Sendable) {
            apply { state in state.users[id] == nil ? refusal : nil }
        }

        func updateClaims(userID: String, claims: [String: JSONValue]) {
            apply { state in
                state.users[userID]?.claims = claims
                return nil
            }
        }

        func deleteUser(id: String, ifMissing refusal: any Error & Sendable) {
            apply { state in
                guard state.users.removeValue(forKey: id) != nil else { return refusal }
                state.deviceKeys = state.deviceKeys.filter { $0.key.userID != id }
                state.authenticators = state.authenticators.filter { $0.value.userID != id }
                state.outOfBand = state.outOfBand.filter { $0.value.userID != id }
                state.registrations = state.registrations.filter { $0.value.userID != id }
                for (sessionID, session) in state.sessions where session.userID == id { state.removeSession(id: sessionID) }
                state.webSessions = state.webSessions.filter { $0.value.userID != id }
                return nil
            }
        }

        func requireNoRegistration(id: String, ifExists refusal: any Error & Sendable) {
            apply { state in state.registrations[id] == nil ? nil : refusal }
        }

        func insertRegistration(_ record: RegistrationRecord, ifTaken refusal: any Error & Sendable) {
            apply { state in
                guard state.registrations[record.id] == nil else { return refusal }
                state.registrations[record.id] = record
                return nil
            }
        }

        func purgeExpired(now: Int64, limit: Int) -> WriteResult<Int> {
            let result = WriteResult(0)
            apply { state in
                let jtis = state.usedJTIs.filter { $0.value < now }.keys.prefix(limit)
                for jti in jtis { state.usedJTIs[jti] = nil }
                let sessions = state.sessionPurgeAt.filter { $0.value <= now }.keys.sorted().prefix(limit)
                for id in sessions { state.removeSession(id: id) }
                let transactions = state.outOfBand.filter { $0.value.expiresAt <= now - outOfBandRetention }.keys.sorted().prefix(limit)
                for id in transactions { state.outOfBand[id] = nil }
                let custom = state.customTransactions.filter { $0.value.expiresAt <= now - customTransactionRetention }.keys.sorted().prefix(limit)
                for id in custom { state.customTransactions[id] = nil }
                let web = state.webSessions.filter { $0.value.expiresAt <= now }.keys.sorted().prefix(limit)
                for id in web { state.webSessions[id] = nil }
                let tokens = state.adminTokens.filter { ($0.value.expiresAt ?? .max) <= now - adminTokenRetention }.keys.sorted().prefix(limit)
                for id in tokens { state.adminTokens[id] = nil }
                result.set(jtis.count + sessions.count + transactions.count + custom.count + web.count + tokens.count)
                return nil
            }
            return result
        }
    }
}
