import LatchModel
import Tracing

#if os(Linux)
import Synchronization
#else
import Atomics
#endif

/// Whether Latch makes spans: off unless the deployment exports them (`tracing.enabled`). Off, a span costs nothing —
/// not even the no-op tracer's lookup under the instrumentation system's lock, which measurably slowed the hot path
/// (4–8 % on sign-ins and refreshes, several spans a request).
public enum LatchTracing {
    // Read on every span: on Linux a stdlib `Atomic` stored inline (a `ManagedAtomic` is a class whose shared reference
    // count every reader touched, −10 to −15 % on sign-ins and refreshes); `Atomic` needs macOS 15, so Apple
    // platforms (development machines) use swift-atomics.
    #if os(Linux)
    private static let enabled = Atomic<Bool>(false)
    #else
    private static let enabled = ManagedAtomic<Bool>(false)
    #endif

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
