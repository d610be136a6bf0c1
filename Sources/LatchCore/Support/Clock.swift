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
