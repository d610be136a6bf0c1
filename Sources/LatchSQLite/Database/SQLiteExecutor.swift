import Foundation
import LatchCore

/// A unit of work for a connection's thread.
final class SQLiteJob: @unchecked Sendable {
    let body: (SQLiteHandle) throws -> Void
    let finish: ((any Error)?) -> Void
    var error: (any Error)?

    init(body: @escaping (SQLiteHandle) throws -> Void, finish: @escaping ((any Error)?) -> Void) {
        self.body = body
        self.finish = finish
    }
}

/// Holds a job's result between the connection's thread and the awaiting task.
private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// The writer thread: owns the write connection and runs jobs on it.
///
/// The writer runs **group commit**: it takes every queued write (up to `maximumBatch`), runs each inside its
/// own savepoint within one `BEGIN IMMEDIATE … COMMIT`, and completes the waiting requests only after that
/// commit returned — with `synchronous=FULL`, after the WAL was flushed to disk. One fsync then covers many
/// requests, and no request is acknowledged before its write is durable. A job that throws is rolled back to
/// its savepoint without disturbing the others; a failed commit fails every job of the batch.
final class SQLiteExecutor: @unchecked Sendable {
    private let condition = NSCondition()
    private var queue: [SQLiteJob] = []
    private var head = 0
    private var stopping = false
    private var running = 0
    private let maximumBatch: Int
    /// Told of every group commit and failed commit.
    let observers = StoreObservers()
    /// Called around each batch, on the writer's thread.
    private let hooks: (any SQLiteBatchHooks)?
    private let exited = DispatchGroup()

    /// Starts the thread; its connection is made on it by `open`.
    init(maximumBatch: Int, name: String, hooks: (any SQLiteBatchHooks)? = nil, open: @escaping @Sendable () throws -> SQLiteHandle) throws {
        self.maximumBatch = maximumBatch
        self.hooks = hooks
        let ready = DispatchGroup()
        let failure = ResultBox<any Error>()
        ready.enter()
        exited.enter()
        let thread = Thread { [self] in
            // The writer is the thread to watch in `top -H` and profiles: one core's worth is its ceiling.
            nameCurrentThread(name)
            let handle: SQLiteHandle
            do {
                handle = try open()
            } catch {
                failure.value = error
                ready.leave()
                exited.leave()
                return
            }
            ready.leave()
            loop(handle)
            handle.close()
            exited.leave()
        }
        thread.start()
        ready.wait()
        if let error = failure.value {
            shutdown()
            throw error
        }
    }

    /// Runs `body` in the next group commit and returns its result once committed.
    func run<T>(_ body: @escaping (SQLiteHandle) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let box = ResultBox<T>()
            let job = SQLiteJob(
                body: { box.value = try body($0) },
                finish: { error in
                    if let error {
                        continuation.resume(throwing: error)
                    } else {
                        continuation.resume(returning: box.value!)
                    }
                })
            condition.lock()
            guard !stopping else {
                condition.unlock()
                job.finish(StoreUnavailableError("the store is closed"))
                return
            }
            queue.append(job)
            condition.signal()
            condition.unlock()
        }
    }

    /// Stops the threads after the queued jobs ran, and waits for them.
    func shutdown() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
        exited.wait()
    }

    private func take(_ limit: Int) -> [SQLiteJob]? {
        condition.lock()
        defer { condition.unlock() }
        while head == queue.count && !stopping { condition.wait() }
        if head == queue.count { return nil }
        let end = min(queue.count, head + limit)
        let batch = Array(queue[head..<end])
        head = end
        if head == queue.count {
            queue.removeAll(keepingCapacity: true)
            head = 0
        }
        return batch
    }

    private func loop(_ handle: SQLiteHandle) {
        while let batch = take(maximumBatch) { commit(batch, on: handle) }
    }

    private func commit(_ batch: [SQLiteJob], on handle: SQLiteHandle) {
        let started = ContinuousClock.now
        let observer = observers.observer
        do {
            try handle.run("BEGIN IMMEDIATE")
            try hooks?.begin(handle)
        } catch {
            _ = try? handle.run("ROLLBACK")
            observer?.failed("commit")
            for job in batch { job.finish(StoreUnavailableError("cannot begin a transaction: \(error)")) }
            return
        }
        for job in batch {
            do {
                hooks?.jobStarting()
                try handle.run("SAVEPOINT job")
                do {
                    try job.body(handle)
                } catch {
                    job.error = error
                    try handle.run("ROLLBACK TO job")
                    hooks?.jobRolledBack()
                }
                try handle.run("RELEASE job")
            } catch {
                // The transaction itself is broken: give up on the whole batch.
                _ = try? handle.run("ROLLBACK")
                observer?.failed("commit")
                for job in batch { job.finish(StoreUnavailableError("transaction failed: \(error)")) }
                return
            }
        }
        do {
            try hooks?.finish(handle)
            try handle.run("COMMIT")
        } catch {
            _ = try? handle.run("ROLLBACK")
            observer?.failed("commit")
            for job in batch { job.finish(StoreUnavailableError("commit failed: \(error)")) }
            return
        }
        if let observer {
            let elapsed = ContinuousClock.now - started
            observer.committed(units: batch.count, nanoseconds: elapsed.nanoseconds)
        }
        for job in batch { job.finish(job.error) }
    }
}
