import Logging

/// Records events in units of their own: refusals (nothing else is written) and what a store statement did that
/// cannot carry a record itself.
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
}
