import Foundation
import LatchCore
import LatchModel
import LatchSQLite

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `latch admin backup` / `restore` for a SQLite deployment: the database (an online copy through SQLite's backup
/// API, consistent while `latch serve` runs) and `master.key`, in one ``BackupArchive`` file. Never the lock file,
/// the WAL or its index: the copy already holds every committed write.
public enum DeploymentBackup {
    /// A backup written.
    public struct Made: Sendable {
        public let path: String
        public let bytes: Int64
        public let manifest: BackupManifest
    }

    /// A backup restored.
    public struct Restored: Sendable {
        public let folder: String
        public let manifest: BackupManifest
        /// Refresh-token families the restore ended (0 with `keepSessions`).
        public let endedSessions: Int
    }

    /// Writes a backup of `configuration`'s data folder to `out`, a new file created with mode 0600 (an existing
    /// file is refused, never overwritten). Refuses PostgreSQL (``BackupNotApplicableError``) and a folder without a
    /// deployment (``NoDeploymentError``); creates nothing in the data folder.
    public static func make(configuration: LatchConfiguration, out: String, now: Int64) throws -> Made {
        guard configuration.databaseURL == nil else { throw BackupNotApplicableError() }
        try DeploymentFolder.requireDeployment(configuration, hint: "Give the folder `latch serve` uses with --data-dir (backup never creates one).")
        let folder = configuration.dataDirectory
        try DataFolder.checkPermissions(folder)
        let keyPath = (folder as NSString).appendingPathComponent("master.key")
        var masterKey: [UInt8]?
        if FileManager.default.fileExists(atPath: keyPath) {
            try DataFolder.checkPermissions(folder, keyFile: keyPath)
            // Checked to be a key (never printed), as the server reads it.
            guard let data = FileManager.default.contents(atPath: keyPath), let text = String(data: data, encoding: .utf8),
                let key = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count == 32
            else {
                throw ConfigurationError(key: "keys.encryptionKey", source: "file \(DataFolder.absolute(keyPath))", problem: "must hold base64 of 32 bytes")
            }
            masterKey = Array(data)
        }

        let output = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard output >= 0 else {
            let reason = errno == EEXIST ? "exists (a backup never overwrites a file)" : String(cString: strerror(errno))
            throw ConfigurationError(key: "--out", problem: "\(DataFolder.absolute(out)): \(reason)")
        }
        var written = false
        // The database copy is made beside the output (same file system, a folder of our own, 0700), then removed.
        var template = Array(((DataFolder.absolute(out) as NSString).deletingLastPathComponent as NSString).appendingPathComponent(".latch-backup-XXXXXX").utf8CString)
        guard let scratch = template.withUnsafeMutableBufferPointer({ buffer in mkdtemp(buffer.baseAddress!).map { String(cString: $0) } }) else {
            close(output)
            unlink(out)
            throw ConfigurationError(key: "--out", problem: "no temporary folder can be made beside \(DataFolder.absolute(out)): \(String(cString: strerror(errno)))")
        }
        defer {
            try? FileManager.default.removeItem(atPath: scratch)
            close(output)
            if !written { unlink(out) }
        }
        let copy = (scratch as NSString).appendingPathComponent("latch.sqlite")
        let summary = try SQLiteBackup.copy(from: (folder as NSString).appendingPathComponent("latch.sqlite"), to: copy)
        let manifest = BackupManifest(
            format: BackupManifest.format, latchVersion: LatchVersion.current, createdAt: now, schemaVersion: summary.schemaVersion,
            lastMigration: summary.lastMigration, masterKey: masterKey != nil)
        var bytes: Int64 = 0
        var writer = try BackupArchive.Writer { chunk in
            try writeAll(output, chunk, path: out)
            bytes += Int64(chunk.count)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try writer.add(.manifest, bytes: Array(try encoder.encode(manifest)))
        try writer.add(.database, file: copy)
        if let masterKey { try writer.add(.masterKey, bytes: masterKey) }
        try writer.finish()
        guard fsync(output) == 0 else { throw ConfigurationError(key: "--out", problem: "\(out) could not be flushed to disk: \(String(cString: strerror(errno)))") }
        written = true
        return Made(path: DataFolder.absolute(out), bytes: bytes, manifest: manifest)
    }

    /// Restores the backup `from` into `folder`, which must be empty or not exist (it is created 0700); files are
    /// written 0600. The file is checked as untrusted (``BackupArchive``), then the database (SQLite's integrity
    /// check, a Latch schema no newer than this binary). Unless `keepSessions`, every session is ended (see
    /// docs/operations.md#backup-and-restore). On any failure nothing restored is left behind.
    public static func restore(from: String, into folder: String, keepSessions: Bool, now: Int64, limits: BackupArchive.Limits = .init()) throws -> Restored {
        let folder = DataFolder.absolute(folder)
        var isFolder: ObjCBool = false
        var created = false
        if FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) {
            guard isFolder.boolValue else { throw ConfigurationError(key: "--data-dir", problem: "\(folder) is a file, not a folder") }
            let entries = try FileManager.default.contentsOfDirectory(atPath: folder)
            guard entries.isEmpty else {
                throw ConfigurationError(
                    key: "--data-dir", problem: "\(folder) is not empty (\(entries.sorted().prefix(5).joined(separator: ", "))): restore makes a new data folder, so give an empty or new one")
            }
            try DataFolder.checkPermissions(folder)
        } else {
            try DataFolder.create(folder)
            created = true
        }
        guard let input = FileHandle(forReadingAtPath: from) else {
            if created { rmdir(folder) }
            throw ConfigurationError(key: "--from", problem: "\(DataFolder.absolute(from)) cannot be read")
        }
        defer { try? input.close() }
        let databasePath = (folder as NSString).appendingPathComponent("latch.sqlite")
        let keyPath = (folder as NSString).appendingPathComponent("master.key")
        var descriptors: [Int32] = []
        func cleanUp() {
            for descriptor in descriptors { close(descriptor) }
            descriptors = []
            for name in ["latch.sqlite", "latch.sqlite-wal", "latch.sqlite-shm", "latch.sqlite-journal", "master.key"] {
                unlink((folder as NSString).appendingPathComponent(name))
            }
            if created { rmdir(folder) }
        }
        do {
            var manifestBytes: [UInt8] = []
            var keyBytes: [UInt8] = []
            _ = try BackupArchive.read(
                limits: limits,
                from: { count in
                    guard let data = try input.read(upToCount: count) else { return [] }
                    return Array(data)
                },
                open: { member, _ in
                    switch member {
                    case .manifest: return { manifestBytes += $0 }
                    case .masterKey: return { keyBytes += $0 }
                    case .database:
                        let descriptor = try createPrivate(databasePath)
                        descriptors.append(descriptor)
                        return { try writeAll(descriptor, $0, path: databasePath) }
                    }
                })
            // The whole file was read and its digest matched: now what it says.
            guard let manifest = try? JSONDecoder().decode(BackupManifest.self, from: Data(manifestBytes)), manifest.format == BackupManifest.format else {
                throw BackupFormatError("the backup's manifest is not a Latch backup manifest")
            }
            guard manifest.masterKey == !keyBytes.isEmpty else {
                throw BackupFormatError("the manifest says master.key is \(manifest.masterKey ? "" : "not ")included, the backup says otherwise")
            }
            if !keyBytes.isEmpty {
                guard let text = String(bytes: keyBytes, encoding: .utf8),
                    let key = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count == 32
                else { throw BackupFormatError("the backup's master.key is not base64 of 32 bytes") }
            }
            for descriptor in descriptors {
                guard fsync(descriptor) == 0 else { throw ConfigurationError(key: "--data-dir", problem: "\(databasePath) could not be flushed: \(String(cString: strerror(errno)))") }
                close(descriptor)
            }
            descriptors = []
            let summary: SQLiteBackup.Summary
            do {
                summary = try SQLiteBackup.verify(databasePath)
            } catch {
                // Not a database, a damaged one, or one of a newer Latch: the file is unusable, whatever SQLite says.
                throw BackupFormatError("the backup's database cannot be used: \(error)")
            }
            guard summary.schemaVersion == manifest.schemaVersion, summary.lastMigration == manifest.lastMigration else {
                throw BackupFormatError("the manifest names schema version \(manifest.schemaVersion), the database holds \(summary.schemaVersion)")
            }
            if !keyBytes.isEmpty {
                let descriptor = try createPrivate(keyPath)
                descriptors.append(descriptor)
                try writeAll(descriptor, keyBytes, path: keyPath)
                guard fsync(descriptor) == 0 else { throw ConfigurationError(key: "--data-dir", problem: "\(keyPath) could not be flushed") }
                close(descriptor)
                descriptors = []
            }
            let ended = try keepSessions ? 0 : SQLiteBackup.endSessions(databasePath, at: now)
            // The new names, durable in the folder.
            let folderDescriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if folderDescriptor >= 0 {
                _ = fsync(folderDescriptor)
                close(folderDescriptor)
            }
            return Restored(folder: folder, manifest: manifest, endedSessions: ended)
        } catch {
            cleanUp()
            throw error
        }
    }

    /// A new file, mode 0600, never an existing one or a link.
    private static func createPrivate(_ path: String) throws -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw ConfigurationError(key: "--data-dir", problem: "\(path) cannot be created: \(String(cString: strerror(errno)))") }
        return descriptor
    }

    private static func writeAll(_ descriptor: Int32, _ bytes: [UInt8], path: String) throws {
        var offset = 0
        // Bounded: each round writes at least one byte or fails.
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard count > 0 else { throw ConfigurationError(key: "data", problem: "\(path) could not be written: \(String(cString: strerror(errno))); is the disk full?") }
            offset += count
        }
    }
}

/// `latch admin backup` on a PostgreSQL deployment: the database is not in the data folder.
public struct BackupNotApplicableError: Error, CustomStringConvertible {
    public init() {}
    public var description: String {
        "latch admin backup copies a SQLite deployment; this one runs on PostgreSQL (database.url). Back it up with pg_dump and "
            + "the deployment's master.key (or its configured keys.encryptionKey): see docs/operations.md#postgresql"
    }
}
