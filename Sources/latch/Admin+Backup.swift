import ArgumentParser
import Foundation
import LatchApp
import LatchCore

extension Admin {
    /// `latch admin backup --data-dir DIR --out FILE`: an online copy of a SQLite deployment.
    struct Backup: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy a SQLite deployment (database and master.key) into one file, while the server runs on it.",
            discussion: """
                Works on the data folder, not through the API. The database is copied with SQLite's online backup API \
                (one consistent snapshot; the server keeps serving), master.key beside it; the lock file is not copied. \
                FILE is created with mode 0600 and must not exist. A key-encryption key given by configuration \
                (LATCH_KEYS_ENCRYPTION_KEY, keys.encryptionKey) is not in the backup: keep it with the backup. On \
                PostgreSQL (database.url) this exits 14: use pg_dump and the key files (docs/operations.md#postgresql). \
                A folder without a deployment exits 13.
                """)
        @OptionGroup var deployment: DeploymentOptions
        @Option(help: "The backup file to create (mode 0600; an existing file is refused).") var out: String

        func run() async throws {
            let configuration = try await deployment.load()
            let made = try DeploymentBackup.make(configuration: configuration, out: out, now: Int64(Date().timeIntervalSince1970))
            print("backup written: \(made.path) (\(made.bytes) bytes, schema version \(made.manifest.schemaVersion) \(made.manifest.lastMigration))")
            if !made.manifest.masterKey {
                print("note: the key-encryption key comes from configuration and is NOT in this backup; a restore needs that same key")
            }
        }
    }

    /// `latch admin restore --from FILE --data-dir NEWDIR`.
    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make a new data folder from a backup (`latch admin backup`); then start `latch serve` on it.",
            discussion: """
                Works on files only, not through the API. NEWDIR must be empty or not exist: it is created 0700, its \
                files 0600. The backup is checked (format, SHA-256, sizes, SQLite's integrity check, a schema this Latch \
                knows) before anything is kept. Every session is ended, so that no refresh token rotated or revoked \
                after the backup works again; users sign in again (docs/operations.md#backup-and-restore).
                """)
        @Option(help: "The backup file.") var from: String
        @Option(help: "The new data folder (empty or missing).") var dataDir: String
        @Flag(help: "Keep sessions live: only for a backup taken while no server ran on the folder and that no server used afterwards.")
        var keepSessions = false

        func run() async throws {
            let restored: DeploymentBackup.Restored
            do {
                restored = try DeploymentBackup.restore(from: from, into: dataDir, keepSessions: keepSessions, now: Int64(Date().timeIntervalSince1970))
            } catch let error as MigrationError {
                // The database inside is damaged or of a newer Latch: a bad file, like any other refusal of it.
                throw BackupFormatError(error.description)
            }
            let manifest = restored.manifest
            let made = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(manifest.createdAt)))
            print("restored into \(restored.folder): backup of \(made) by latch \(manifest.latchVersion), schema version \(manifest.schemaVersion)")
            print(keepSessions ? "sessions kept" : "sessions ended: \(restored.endedSessions) refresh-token families; users sign in again")
            if !manifest.masterKey {
                print("note: this backup holds no master.key: start the server with the key-encryption key the deployment used (LATCH_KEYS_ENCRYPTION_KEY or keys.encryptionKey)")
            }
        }
    }
}
