import Foundation
import LatchCore

/// Read connections, checked out by the reading task and used on its own thread. A read waits for a free
/// connection asynchronously (its task suspends; no thread blocks), and a returned connection goes straight
/// to the longest waiter.
///
/// In WAL mode a reader never waits for the writer; a point read is a few microseconds of CPU from SQLite's
/// page cache, less than handing it to another thread and back.
final class SQLiteReaderPool: @unchecked Sendable {
    private let lock = NSLock()
    private var idle: [SQLiteHandle]
    private var waiters: [CheckedContinuation<SQLiteHandle, any Error>] = []
    private var waiterHead = 0
    private var closed = false

    init(count: Int, open: () throws -> SQLiteHandle) throws {
        idle = try (0..<count).map { _ in try open() }
    }

    /// Runs `body` on a free connection and returns its result.
    func read<T>(_ body: (SQLiteHandle) throws -> T) async throws -> T {
        let handle = try await checkOut()
        defer { checkIn(handle) }
        return try body(handle)
    }

    private func checkOut() async throws -> SQLiteHandle {
        if let handle = lock.withLock({ idle.popLast() }) { return handle }
        return try await withCheckedThrowingContinuation { continuation in
            lock.lock()
            if closed {
                lock.unlock()
                continuation.resume(throwing: StoreUnavailableError("the store is closed"))
            } else if let handle = idle.popLast() {
                lock.unlock()
                continuation.resume(returning: handle)
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
        }
    }

    private func checkIn(_ handle: SQLiteHandle) {
        lock.lock()
        if closed {
            lock.unlock()
            handle.close()
            return
        }
        if waiterHead < waiters.count {
            let waiter = waiters[waiterHead]
            waiterHead += 1
            if waiterHead == waiters.count {
                waiters.removeAll(keepingCapacity: true)
                waiterHead = 0
            }
            lock.unlock()
            waiter.resume(returning: handle)
            return
        }
        idle.append(handle)
        lock.unlock()
    }

    /// Closes the idle connections (busy ones close as they come back) and fails the waiters.
    func close() {
        lock.lock()
        closed = true
        let handles = idle
        idle.removeAll()
        let pending = waiters[waiterHead...]
        waiters.removeAll()
        waiterHead = 0
        lock.unlock()
        for handle in handles { handle.close() }
        for waiter in pending { waiter.resume(throwing: StoreUnavailableError("the store is closed")) }
    }
}
