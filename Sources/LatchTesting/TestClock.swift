import Foundation
import LatchCore
import LatchModel

/// A clock that stands still until a test moves it — or, made with ``running()``, follows the system's time plus
/// whatever the test moved it by (for a server talking to a client that reads the system's clock).
public final class TestClock: Sendable {
    private let current: Locked<Date>
    /// For a running clock: the system time `current` was read at.
    private let runningSince: Date?

    /// Starts at `start` (default: a fixed instant in 2026).
    public init(start: Date = Date(timeIntervalSince1970: 1_790_000_000)) {
        current = Locked(start)
        runningSince = nil
    }

    private init(runningFrom start: Date) {
        current = Locked(start)
        runningSince = start
    }

    /// A clock at the system's time that keeps running; ``advance(by:)`` moves it ahead of the system's.
    public static func running() -> TestClock { TestClock(runningFrom: Date()) }

    /// The engines' view of this clock.
    public var clock: LatchClock { LatchClock { [self] in now } }

    /// The current instant.
    public var now: Date {
        let base = current.withLock { $0 }
        guard let runningSince else { return base }
        return base.addingTimeInterval(Date().timeIntervalSince(runningSince))
    }

    /// The current instant as NumericDate seconds.
    public var seconds: Int64 { Int64(now.timeIntervalSince1970) }

    /// Moves the clock forward.
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
