import Foundation
import LatchCore
import VaporCSQLite

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Online copies of the embedded database (`latch admin backup` / `restore`), through SQLite's backup API
/// (<https://sqlite.org/backup.html>).
public enum SQLiteBackup {
    /// What a copy holds.
    public struct Summary: Sendable, Equatable {
        /// Applied migrations (the schema version).
        public let schemaVersion: Int
        /// The name of the last applied migration.
        public let lastMigration: String
        /// The copy's size in bytes.
        public let bytes: Int64
    }

    /// Copies the database at `source` into a new file `destination` (created 0600; it must not exist) while other
    /// processes — a running `latch serve` — keep reading and writing it.
    ///
    /// The whole database is copied in one `sqlite3_backup_step(-1)`: one read transaction, so the copy is the
    /// database as of one commit (WAL mode lets the server's writer go on meanwhile; a copy made in several steps
    /// would restart whenever another process writes). The copy is then switched out of WAL mode, so it is one
    /// self-contained file, and checked (`PRAGMA quick_check`, a Latch schema this binary knows).
    public static func copy(from source: String, to destination: String) throws -> Summary {
        guard FileManager.default.fileExists(atPath: source) else { throw SQLiteError(code: SQLITE_CANTOPEN, message: "\(source) does not exist") }
        // Exclusive create with mode 0600 before SQLite opens it: never readable by others, never another file.
        let descriptor = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SQLiteError(code: SQLITE_CANTOPEN, message: "\(destination): \(String(cString: strerror(errno)))") }
        close(descriptor)
        do {
            // Read-only: the data folder is not written (no checkpoint, no WAL removal when this connection closes).
            let from = try SQLiteHandle(path: source, create: false, readOnly: true)
            defer { from.close() }
            // The server's writer may hold the lock for a group commit: wait for it rather than fail.
            try from.execute("PRAGMA busy_timeout = 10000;")
            let to = try SQLiteHandle(path: destination, create: false)
            defer { to.close() }
            try from.withConnection { fromDB in
                try to.withConnection { toDB in
                    guard let backup = sqlite_nio_sqlite3_backup_init(toDB, "main", fromDB, "main") else {
                        throw SQLiteError(code: sqlite_nio_sqlite3_errcode(toDB), message: String(cString: sqlite_nio_sqlite3_errmsg(toDB)))
                    }
                    // Busy or locked: the server is committing; retry a bounded number of times (about 10 s).
                    var result = SQLITE_OK
                    for _ in 0..<200 {
                        result = sqlite_nio_sqlite3_backup_step(backup, -1)
                        guard result == SQLITE_BUSY || result == SQLITE_LOCKED else { break }
                        usleep(50_000)
                    }
                    let finished = sqlite_nio_sqlite3_backup_finish(backup)
                    guard result == SQLITE_DONE else {
                        throw SQLiteError(code: result, message: "the backup did not complete: \(String(cString: sqlite_nio_sqlite3_errstr(result)))")
                    }
                    guard finished == SQLITE_OK else { throw SQLiteError(code: finished, message: String(cString: sqlite_nio_sqlite3_errmsg(toDB))) }
                }
            }
            // One file: no -wal beside it.
            _ = try to.query("PRAGMA journal_mode = DELETE")
            let summary = try check(to)
            to.close()
            return Summary(schemaVersion: summary.0, lastMigration: summary.1, bytes: fileSize(destination))
        } catch {
            unlink(destination)
            throw error
        }
    }

    /// Checks a database file (one restored from a backup, which may have been tampered with): SQLite's
    /// `integrity_check`, and a Latch schema no newer than this binary whose migration names match its own.
    public static func verify(_ path: String) throws -> Summary {
        let handle = try SQLiteHandle(path: path, create: false)
        defer { handle.close() }
        try handle.execute("PRAGMA query_only = 1;")
        let rows = try handle.query("PRAGMA integrity_check")
        guard rows.count == 1, rows[0].text(0) == "ok" else {
            throw MigrationError("the database fails SQLite's integrity check: \(rows.prefix(3).map { $0.text(0) }.joined(separator: "; "))")
        }
        let summary = try check(handle)
        return Summary(schemaVersion: summary.0, lastMigration: summary.1, bytes: fileSize(path))
    }

    /// Ends every session of a restored database at `now`: refresh-token families (their tokens then answer
    /// `invalid_grant`, so none rotated away after the backup can come back) and hosted-page browser sessions.
    /// Returns how many refresh-token families it ended.
    public static func endSessions(_ path: String, at now: Int64) throws -> Int {
        let handle = try SQLiteHandle(path: path, create: false)
        defer { handle.close() }
        try handle.execute("PRAGMA busy_timeout = 5000;")
        try handle.run("BEGIN IMMEDIATE")
        do {
            let ended = try handle.run(
                "UPDATE sessions SET revoked_at = ?1, purge_at = min(purge_at, ?1 + \(revokedSessionRetention)) WHERE revoked_at IS NULL AND expires_at > ?1", [.int(now)])
            try handle.run("UPDATE web_sessions SET ended_at = ?1 WHERE ended_at IS NULL AND expires_at > ?1", [.int(now)])
            try handle.run("COMMIT")
            return ended
        } catch {
            _ = try? handle.run("ROLLBACK")
            throw error
        }
    }

    /// The applied migrations, checked against this binary's list.
    private static func check(_ handle: SQLiteHandle) throws -> (Int, String) {
        guard try handle.row("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'latch_migrations'") != nil else {
            throw MigrationError("the database holds no Latch schema (no latch_migrations table)")
        }
        let applied = try handle.query("SELECT version, name FROM latch_migrations ORDER BY version")
        guard !applied.isEmpty else { throw MigrationError("the database's Latch schema has no migration applied") }
        guard applied.count <= Migrations.all.count else {
            throw MigrationError(
                "the database schema (version \(applied.count)) is newer than this Latch (\(Migrations.all.count)); use the Latch that made it, or a newer one")
        }
        for (index, row) in applied.enumerated() where row.int(0) != Int64(index + 1) || row.text(1) != Migrations.all[index].name {
            throw MigrationError("migration \(index + 1) in the database is \(row.text(1)), expected \(Migrations.all[index].name)")
        }
        return (applied.count, applied[applied.count - 1].text(1))
    }

    private static func fileSize(_ path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}
