import Foundation

/// The source of "now" for every engine. `.system` in production; tests pass a fixed or stepping clock.
public struct LatchClock: Sendable {
    private let read: @Sendable () -> Date

    public init(_ read: @escaping @Sendable () -> Date) { self.read = read }

    /// The wall clock.
    public static let system = LatchClock { Date() }

    /// The current time.
    public func now() -> Date { read() }

    /// The current time as a JWT NumericDate (whole seconds since the epoch).
    public func seconds() -> Int64 { Int64(read().timeIntervalSince1970.rounded(.down)) }
}

extension Int64 {
    /// `self + seconds`, held at `Int64.max` / `Int64.min` instead of trapping: an expiry computed from a huge
    /// lifetime means "never", not a crash.
    public func adding(seconds: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(seconds)
        return overflow ? (seconds > 0 ? .max : .min) : sum
    }
}
