import Foundation
import LatchModel
import Testing

@Suite("Abandoning deadline")
struct DeadlineTests {
    struct TimedOut: Error, Equatable {}
    struct Failed: Error, Equatable {}

    /// A call that never returns and ignores cancellation, like a completion a library lost: its continuation is
    /// kept (so it is never resumed while the test runs) and released at the end.
    final class LostCallback: Sendable {
        let held = Locked<[CheckedContinuation<Int, Never>]>([])
        func call() async -> Int { await withCheckedContinuation { continuation in held.withLock { $0.append(continuation) } } }
        func release() { for continuation in held.withLock({ $0 }) { continuation.resume(returning: 0) } }
    }

    @Test("An operation that never returns and ignores cancellation: the caller gets the timeout error at the deadline")
    func lostCallback() async throws {
        let lost = LostCallback()
        defer { lost.release() }
        let started = ContinuousClock.now
        await #expect(throws: TimedOut.self) {
            _ = try await withAbandoningDeadline(.milliseconds(200), timeoutError: { TimedOut() }) { await lost.call() }
        }
        // No upper bound: under the whole suite on two cores the timer's task waited 96 s for a pool thread once.
        // What matters is that the call returns at all, with the timeout error, and not before the deadline.
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(200), "\(waited)")
    }

    @Test("In time: the operation's value or error; the caller's cancellation cancels the operation")
    func inTime() async throws {
        #expect(try await withAbandoningDeadline(.seconds(30), timeoutError: { TimedOut() }) { 42 } == 42)
        await #expect(throws: Failed.self) {
            try await withAbandoningDeadline(.seconds(30), timeoutError: { TimedOut() }) { () async throws -> Int in throw Failed() }
        }
        let caller = Task {
            try await withAbandoningDeadline(.seconds(60), timeoutError: { TimedOut() }) { () async throws -> Int in
                try await Task.sleep(for: .seconds(60))
                return 1
            }
        }
        caller.cancel()
        await #expect(throws: CancellationError.self) { _ = try await caller.value }
    }
}
