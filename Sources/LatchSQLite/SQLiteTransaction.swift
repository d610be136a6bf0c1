import LatchCore

/// The writes of one unit of work, run at once on the writer's connection (inside the job's savepoint).
///
/// Primitives do not throw: the first refusal or SQLite error is kept in ``stop`` and every later write is
/// skipped; ``SQLiteStore/write(_:)`` then throws it, rolling the unit back.
final class SQLiteTransaction {
    let db: SQLiteHandle
    /// Chains the audit records the unit writes.
    let chain: AuditChain
    /// The refusal or error that ended the unit.
    private(set) var stop: (any Error)?

    init(_ db: SQLiteHandle, chain: AuditChain) {
        self.db = db
        self.chain = chain
    }

    /// Runs `change` unless the unit has stopped; a returned refusal, or a thrown error, stops it.
    func apply(_ change: (SQLiteHandle) throws -> (any Error & Sendable)?) {
        guard stop == nil else { return }
        do {
            stop = try change(db)
        } catch {
            stop = error
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
