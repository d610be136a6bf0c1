import CLatchSQLiteShim
import Foundation
import Logging

/// Copies the WAL back into the database file from its own thread and connection.
///
/// SQLite's automatic checkpoint runs inside the committing writer — with `synchronous=FULL` that adds a
/// database-file fsync to some commits and stalls every request waiting on that group. The writer therefore
/// turns it off (`wal_autocheckpoint=0`) and this thread runs a PASSIVE checkpoint every `interval`, which
/// never blocks the writer or readers. The WAL restarts from the beginning once fully checkpointed.
final class SQLiteCheckpointer: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopping = false
    private let exited = DispatchGroup()

    init(path: String, interval: TimeInterval, logger: Logger) throws {
        // Opened here so a failure reaches the caller; from then on only the thread below touches it.
        let handle = try SQLiteHandle(path: path, create: false)
        try handle.execute("PRAGMA busy_timeout = 5000;")
        exited.enter()
        let thread = Thread { [self] in
            nameCurrentThread("latch-db-ckpt")
            defer {
                // A last checkpoint, so a clean shutdown leaves little in the WAL.
                _ = try? handle.query("PRAGMA wal_checkpoint(PASSIVE)")
                handle.close()
                exited.leave()
            }
            while true {
                condition.lock()
                if !stopping { _ = condition.wait(until: Date().addingTimeInterval(interval)) }
                let stop = stopping
                condition.unlock()
                if stop { return }
                do {
                    _ = try handle.query("PRAGMA wal_checkpoint(PASSIVE)")
                } catch {
                    logger.warning("checkpoint failed", metadata: ["error": "\(error)"])
                }
            }
        }
        thread.start()
    }

    func shutdown() {
        condition.lock()
        stopping = true
        condition.signal()
        condition.unlock()
        exited.wait()
    }
}

/// Names the calling thread where the system shows it. Foundation's `Thread.name` does not reach the system on
/// Linux, so a database thread would show as the dispatch worker that created it.
func nameCurrentThread(_ name: String) {
    latch_name_current_thread(name)
}
