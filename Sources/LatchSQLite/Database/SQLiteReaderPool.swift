import Foundation
import LatchCore

/// Read connections, each owned by a thread of its own. A read is queued for the next free reader and the
/// caller's task suspends until it is done: a cooperative-pool thread never waits for a connection, a lock or
/// the disk (on 2 cores the pool has 2 threads, and one blocked read would stall half the server).
///
/// In WAL mode a reader never waits for the writer; readers see the last commit when their read begins.
final class SQLiteReaderPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [SQLiteJob] = []
    private var head = 0
    private var closed = false
    private let exited = DispatchGroup()

    /// Opens `count` connections with `open` (so a failure reaches the caller before any thread starts), then
    /// starts a reader thread for each.
    init(count: Int, open: () throws -> SQLiteHandle) throws {
        let handles = try (0..<count).map { _ in try open() }
        for (index, opened) in handles.enumerated() {
            // From here on only this reader's thread touches its connection.
            nonisolated(unsafe) let handle = opened
            exited.enter()
            let thread = Thread { [self] in
                while let job = take() {
                    do {
                        try job.body(handle)
                        job.finish(nil)
                    } catch {
                        job.finish(error)
                    }
                }
                handle.close()
                exited.leave()
            }
            // Linux thread names hold 15 characters.
            thread.name = "latch-db-read\(index)"
            thread.start()
        }
    }

    /// Runs `body` on a reader's connection and returns its result.
    func read<T>(_ body: @escaping (SQLiteHandle) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            nonisolated(unsafe) var value: T?
            let job = SQLiteJob(
                body: { value = try body($0) },
                finish: { error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else {
                        continuation.resume(returning: value!)
                    }
                })
            condition.lock()
            guard !closed else {
                condition.unlock()
                job.finish(StoreUnavailableError("the store is closed"))
                return
            }
            queue.append(job)
            condition.signal()
            condition.unlock()
        }
    }

    private func take() -> SQLiteJob? {
        condition.lock()
        defer { condition.unlock() }
        while head == queue.count && !closed { condition.wait() }
        guard head < queue.count else { return nil }
        let job = queue[head]
        head += 1
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        }
        return job
    }

    /// Lets the queued reads finish, then stops the threads and closes their connections.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
        exited.wait()
    }
}
