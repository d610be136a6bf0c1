import Foundation
import LatchCore

/// What the writer does around each group commit, besides running its jobs (``SQLiteExecutor``). Called on the
/// writer's thread only.
protocol SQLiteBatchHooks: AnyObject {
    /// After `BEGIN IMMEDIATE`: the batch holds the database's write lock. Throwing fails the batch.
    func begin(_ db: SQLiteHandle) throws
    /// Before each job's savepoint.
    func jobStarting()
    /// After a job's savepoint was rolled back (its writes are gone).
    func jobRolledBack()
    /// Before `COMMIT`. Throwing rolls the whole batch back and fails its jobs.
    func finish(_ db: SQLiteHandle) throws
}

/// Seals the audit records a batch writes as they are inserted: each gets the next chain position and its chain MAC
/// at once, and the chain's head row is written once, before the batch commits.
///
/// Why this is commit order: the writer runs one batch at a time holding SQLite's write lock (every process's
/// writers, too, wait for it), its jobs one after another, and the batch commits as a whole — so the order records
/// are inserted in is the order they commit in, and nothing can commit between them. A job rolled back to its
/// savepoint takes its records with it, and the head goes back to where it was before the job.
///
/// It is an optimisation of the sealer, not a second chain: a batch seals at insert only when it starts with every
/// record sealed. Where some are not — rows an older binary or another process wrote, or one inserted by someone
/// without the chain's key — the batch writes plain rows, and the sealer (``SQLiteTransaction/sealAudit(limit:)``)
/// links them all in order, as before. Measured with `latch bench --writer-ceiling`: sealing each record where it
/// is written saves the sealer's second write of every audit row (the row grows by its position and MAC, which
/// split the pages written a moment before) — about a quarter of the writer's time per sign-in.
///
/// Writer-confined: only the writer's thread touches it, between `begin` and `finish` of one batch.
final class SQLiteAuditHead: SQLiteBatchHooks, @unchecked Sendable {
    typealias Head = (position: Int64, mac: Data)

    private let chain: AuditChain
    /// The head as this batch has it; nil while the batch writes plain rows.
    private var head: Head?
    private var changed = false
    private var beforeJob: (head: Head?, changed: Bool) = (nil, false)

    init(chain: AuditChain) {
        self.chain = chain
    }

    func begin(_ db: SQLiteHandle) throws {
        changed = false
        head = nil
        // The unique index on position holds the unsealed rows (NULL) first: one probe.
        guard try db.row("SELECT 1 FROM audit_log WHERE position IS NULL LIMIT 1") == nil,
            let row = try db.row("SELECT head_seq, head_mac FROM audit_head WHERE id = 1")
        else { return }
        head = (row.int(0), row.blob(1))
    }

    func jobStarting() {
        beforeJob = (head, changed)
    }

    func jobRolledBack() {
        (head, changed) = beforeJob
    }

    /// The position and chain MAC of the next record, whose canonical body is `body`; nil when this batch writes
    /// plain rows (the sealer links them).
    func seal(body: Data) -> Head? {
        guard let current = head else { return nil }
        let next: Head = (current.position + 1, chain.link(previous: current.mac, seq: current.position + 1, body: body))
        head = next
        changed = true
        return next
    }

    func finish(_ db: SQLiteHandle) throws {
        guard changed, let head else { return }
        try db.run("UPDATE audit_head SET head_seq = ?, head_mac = ? WHERE id = 1", [.int(head.position), .blob(head.mac)])
    }
}
