/// Runs `operation` for at most `limit`: past it, `timeoutError()` is thrown and the operation is cancelled and
/// *abandoned* — not awaited.
///
/// A task group cannot do this: leaving it awaits every child, so an operation that ignores cancellation (a call
/// stuck on a dead connection, a callback a library never delivers) would hold the caller forever. Here the
/// operation runs in a task of its own and the caller is resumed by whichever comes first, the operation's result
/// or the timer; the loser is dropped. When the caller itself is cancelled, the operation is cancelled too (and its
/// result, probably a `CancellationError`, is what the caller gets).
public func withAbandoningDeadline<T: Sendable>(
    _ limit: Duration, timeoutError: @escaping @Sendable () -> any Error, _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let work = Task { try await operation() }
    let outcome = FirstResult<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            outcome.install(continuation)
            let timer = Task {
                try await Task.sleep(for: limit)
                if outcome.resolve(.failure(timeoutError())) { work.cancel() }
            }
            Task {
                let result = await work.result
                // The usual case: done in time. The timer must not linger (thousands of sleeping tasks under load).
                timer.cancel()
                outcome.resolve(result)
            }
        }
    } onCancel: {
        work.cancel()
    }
}

/// Resumes a continuation with the first of several racing results; later ones are dropped.
final class FirstResult<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var pending: Result<T, any Error>?
        var done = false
    }

    private let state = Locked(State())

    /// Installs the continuation (a result that arrived first is delivered at once).
    func install(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLock { state in
            if let pending = state.pending {
                state.done = true
                return pending
            }
            state.continuation = continuation
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    /// Offers a result; `true` when it won.
    @discardableResult
    func resolve(_ result: Result<T, any Error>) -> Bool {
        let (won, continuation): (Bool, CheckedContinuation<T, any Error>?) = state.withLock { state in
            guard !state.done, state.pending == nil else { return (false, nil) }
            guard let continuation = state.continuation else {
                state.pending = result
                return (true, nil)
            }
            state.done = true
            state.continuation = nil
            return (true, continuation)
        }
        continuation?.resume(with: result)
        return won
    }
}
