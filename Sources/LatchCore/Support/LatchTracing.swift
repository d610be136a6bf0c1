import Atomics
import LatchModel
import Tracing

/// Whether Latch makes spans: off unless the deployment exports them (`tracing.enabled`). Off, a span costs nothing —
/// not even the no-op tracer's lookup under the instrumentation system's lock, which measurably slowed the hot path
/// (4–8 % on sign-ins and refreshes, several spans a request).
public enum LatchTracing {
    private static let enabled = ManagedAtomic<Bool>(false)

    /// Whether spans are made.
    public static var isEnabled: Bool { enabled.load(ordering: .relaxed) }

    /// Makes spans from now on (once the tracer is bootstrapped); `false` stops (tests).
    public static func setEnabled(_ on: Bool) { enabled.store(on, ordering: .relaxed) }

    /// `body` inside a span named `name` when tracing is on; without one (nil) when off.
    public static func span<T>(
        _ name: @autoclosure () -> String, ofKind kind: SpanKind = .internal, _ body: ((any Span)?) async throws -> T
    ) async rethrows -> T {
        guard isEnabled else { return try await body(nil) }
        return try await withSpan(name(), ofKind: kind) { span in try await body(span) }
    }
}
