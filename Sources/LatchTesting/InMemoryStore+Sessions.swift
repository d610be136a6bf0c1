import Foundation
import LatchCore
import LatchModel

/// Sessions: opened, revoked, renewed; the consumers an issuer login adds to one.
extension InMemoryStore.Transaction {
    func insertSession(_ session: Session) {
        apply { state in
            state.sessions[session.id] = session
            state.sessionPurgeAt[session.id] = session.expiresAt
            return nil
        }
    }

    private func revoke(where matches: (Session, InMemoryStore.State) -> Bool, at now: Int64, liveOnly: Bool) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { state in
            var count = 0
            for (id, session) in state.sessions where matches(session, state) && session.revokedAt == nil && (!liveOnly || session.expiresAt > now) {
                state.sessions[id]?.revokedAt = now
                state.sessionPurgeAt[id] = min(state.sessionPurgeAt[id] ?? .max, now + revokedSessionRetention)
                count += 1
            }
            result.set(count)
            return nil
        }
        return result
    }

    func revokeSession(id: String, at now: Int64) -> WriteResult<Int> {
        revoke(where: { session, _ in session.id == id }, at: now, liveOnly: false)
    }

    func revokeSessions(userID: String, at now: Int64) -> WriteResult<Int> {
        revoke(where: { session, _ in session.userID == userID }, at: now, liveOnly: true)
    }

    func insertSessionConsumers(sessionID: String, _ pairs: [ConsumerPair], at: Int64) {
        guard !pairs.isEmpty else { return }
        apply { state in
            guard state.sessions[sessionID] != nil else { preconditionFailure("consumers of an unknown session") }
            state.sessionConsumers[sessionID, default: []].formUnion(pairs)
            return nil
        }
    }

    func renewLogin(sessionID: String, authTime: Int64, expiresAt: Int64, ifUnavailable refusal: any Error & Sendable) {
        apply { state in
            guard let session = state.sessions[sessionID], session.revokedAt == nil, session.expiresAt > authTime else { return refusal }
            state.sessions[sessionID]?.authTime = authTime
            state.sessions[sessionID]?.expiresAt = expiresAt
            state.sessionPurgeAt[sessionID] = expiresAt
            return nil
        }
    }

    func revokeSessions(holdingAny pairs: [ConsumerPair], at now: Int64) -> WriteResult<Int> {
        let wanted = Set(pairs)
        return revoke(where: { session, state in !(state.sessionConsumers[session.id] ?? []).isDisjoint(with: wanted) }, at: now, liveOnly: true)
    }
}
