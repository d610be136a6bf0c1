import Foundation
import LatchCore
import Synchronization

/// A clock that stands still until a test moves it.
public final class TestClock: Sendable {
    private let current: Mutex<Date>

    /// Starts at `start` (default: a fixed instant in 2026).
    public init(start: Date = Date(timeIntervalSince1970: 1_790_000_000)) {
        current = Mutex(start)
    }

    /// The engines' view of this clock.
    public var clock: LatchClock { LatchClock { [self] in current.withLock { $0 } } }

    /// The current instant.
    public var now: Date { current.withLock { $0 } }

    /// The current instant as NumericDate seconds.
    public var seconds: Int64 { Int64(now.timeIntervalSince1970) }

    /// Moves the clock forward.
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
