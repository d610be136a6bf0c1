import Foundation
import LatchCore
import LatchModel

/// Upstream identity providers and web sessions.
extension InMemoryStore.Transaction {
    func insertUpstreamIdP(_ idp: UpstreamIdP, ifTaken refusal: any Error & Sendable) {
        apply { state in
            guard state.upstreamIdPs[idp.id] == nil else { return refusal }
            state.upstreamIdPs[idp.id] = idp
            return nil
        }
    }

    func deleteUpstreamIdP(id: String, ifMissing refusal: any Error & Sendable) {
        apply { state in
            guard state.upstreamIdPs.removeValue(forKey: id) != nil else { return refusal }
            state.webSessions = state.webSessions.filter { $0.value.upstreamIdP != id }
            return nil
        }
    }

    func insertWebSession(_ session: WebSession) {
        apply { state in
            // As the SQL stores' foreign keys: the user and the upstream must exist.
            guard state.users[session.userID] != nil, state.upstreamIdPs[session.upstreamIdP] != nil else {
                return StoreUnavailableError("web_sessions: foreign key")
            }
            state.webSessions[session.id] = session
            return nil
        }
    }

    func endWebSession(id: String, at now: Int64) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { state in
            guard let session = state.webSessions[id], session.isActive(at: now) else { return nil }
            state.webSessions[id]?.endedAt = now
            result.set(1)
            return nil
        }
        return result
    }
}
