import Foundation
import LatchCore

/// Read connections, used on the calling thread.
///
/// In WAL mode a reader never waits for the writer (automatic checkpoints are passive), and a point read costs
/// a few microseconds, less than handing it to another thread and back. A caller checks a connection out,
/// reads, and returns it; when all are busy it waits for one.
final class SQLiteReaderPool: @unchecked Sendable {
    private let condition = NSCondition()
    private var idle: [SQLiteHandle]
    private var closed = false

    init(count: Int, open: () throws -> SQLiteHandle) throws {
        idle = try (0..<count).map { _ in try open() }
    }

    func read<T>(_ body: (SQLiteHandle) throws -> T) throws -> T {
        condition.lock()
        while idle.isEmpty && !closed { condition.wait() }
        guard !closed, let handle = idle.popLast() else {
            condition.unlock()
            throw StoreUnavailableError("the store is closed")
        }
        condition.unlock()
        defer {
            condition.lock()
            idle.append(handle)
            condition.signal()
            condition.unlock()
        }
        return try body(handle)
    }

    /// Closes the idle connections; busy ones close as they come back.
    func close() {
        condition.lock()
        closed = true
        for handle in idle { handle.close() }
        idle.removeAll()
        condition.broadcast()
        condition.unlock()
    }
}
