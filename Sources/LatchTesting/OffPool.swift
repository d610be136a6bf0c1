import Foundation

/// Runs blocking work — opening a database (its migrations commit and fsync), closing one (it waits for its writer
/// thread) — on a thread of its own and awaits it, so that a test's cooperative-pool thread is never blocked: the
/// pool has one thread per core (two on CI), and every other test waits while one is blocked.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
