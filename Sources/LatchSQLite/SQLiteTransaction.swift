import LatchCore

/// The writes of one unit of work: recorded while its body runs in the caller's task, then run in order on the
/// writer's connection, inside the job's savepoint (``run(on:)``).
///
/// Recording first keeps the single writer thread for SQLite's own work: what a primitive can compute before it
/// runs (an audit record's entry MAC, its values) is computed in the caller, on any core, and only binding and
/// stepping statements waits for the writer. The ``UnitOfWork`` contract allows it — the body states writes and
/// never sees their effects (PostgreSQL records the same way).
///
/// Primitives do not throw: the first refusal or SQLite error is kept in ``stop`` and every later write is
/// skipped; ``SQLiteStore/write(_:)`` then throws it, rolling the unit back.
///
/// Built by one task, then handed to the writer thread, which alone runs it (the executor's queue lock orders the
/// hand-over); never used by two threads at once — hence `@unchecked Sendable`.
final class SQLiteTransaction: @unchecked Sendable {
    /// One recorded write: runs on the writer's connection and answers a refusal, or nil.
    typealias Step = (SQLiteHandle) throws -> (any Error & Sendable)?

    /// Gives the audit records the unit writes their entry MAC.
    let chain: AuditChain
    /// Seals them as they are inserted, when the batch does (``SQLiteAuditHead``).
    let head: SQLiteAuditHead?
    private var steps: [Step] = []
    /// The refusal or error that ended the unit.
    private(set) var stop: (any Error)?

    init(chain: AuditChain, head: SQLiteAuditHead?) {
        self.chain = chain
        self.head = head
    }

    /// Records `change`, to run after the writes recorded before it (unless one of those stopped the unit).
    func apply(_ change: @escaping Step) {
        steps.append(change)
    }

    /// Runs the recorded writes in order on the writer's connection; the first refusal, or thrown error, stops the
    /// unit and is kept in ``stop``.
    func run(on db: SQLiteHandle) {
        for step in steps {
            do {
                if let refusal = try step(db) {
                    stop = refusal
                    return
                }
            } catch {
                stop = error
                return
            }
        }
    }

    /// Runs one statement that changes at most one row; refuses when it changed none.
    func changeOne(_ sql: String, _ values: [SQLValue], orRefuse refusal: any Error & Sendable) {
        apply { db in try db.run(sql, values) == 0 ? refusal : nil }
    }

    /// Runs a statement whose changed-row count is reported.
    func counting(_ sql: String, _ values: [SQLValue]) -> WriteResult<Int> {
        let result = WriteResult(0)
        apply { db in
            result.set(try db.run(sql, values))
            return nil
        }
        return result
    }

    /// Refuses when a query finds a row (`ifFound: true`) or finds none (`false`).
    func check(_ sql: String, _ values: [SQLValue], ifFound: Bool, refuse refusal: any Error & Sendable) {
        apply { db in (try db.row(sql, values) != nil) == ifFound ? refusal : nil }
    }
}
