import Logging

/// Records events in units of their own: refusals (nothing else is written); and makes the records a store writes
/// with a change of its own deciding (refresh token reuse).
public struct AuditRecorder: Sendable {
    let store: any UnitOfWork
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(store: any UnitOfWork, clock: LatchClock, random: RandomSource, logger: Logger = Logger(label: "latch.audit")) {
        self.store = store
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// Records one event now. A store failure is logged, not thrown: the caller goes on to answer what it is
    /// recording.
    public func recordAlone(
        _ kind: SecurityEvent.Kind, actor: String, userID: String? = nil, sessionID: String? = nil, clientID: String? = nil, detail: String? = nil
    ) async {
        let event = SecurityEvent.now(
            kind, actor: actor, userID: userID, sessionID: sessionID, clientID: clientID, detail: detail, clock: clock, random: random)
        await store.recordFailure(event, logger: logger)
    }

    /// What a store calls to make the record of a refresh token's reuse, in the unit that revokes its family. The
    /// request's origin is read now, in the request's task.
    public func reuseRecord(presented generation: Int64, clientID: String) -> ReuseRecord {
        let origin = AuditOrigin.current
        let clock = clock
        let random = random
        return { revoked in
            SecurityEvent.now(
                .refreshReuseDetected, actor: "anonymous", userID: revoked.userID, sessionID: revoked.id, clientID: clientID,
                detail: "generation=\(generation) current=\(revoked.generation)", clock: clock, random: random, origin: origin)
        }
    }
}
