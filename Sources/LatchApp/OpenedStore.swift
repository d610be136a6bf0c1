import Foundation
import LatchCore
import LatchPostgres
import LatchSQLite
import Logging
import ServiceLifecycle

/// The store a configuration names — PostgreSQL for `database.url`, else SQLite in the data folder — with the
/// service that keeps it open while Latch runs.
public struct OpenedStore: Sendable {
    public let store: any LatchStore
    /// Runs for as long as the store is used: PostgreSQL's connection pool; for SQLite, the close at shutdown.
    let service: any Service
    /// Readies the store once its service runs (PostgreSQL: reachability check and migrations).
    let prepare: @Sendable () async throws -> Void

    /// Opens the store. SQLite is opened (and migrated) at once; PostgreSQL only parses its URL here.
    ///
    /// With `create` false (commands that work on an existing deployment) a data folder without a database is
    /// refused instead of being made into an empty deployment.
    public static func open(_ configuration: LatchConfiguration, logger: Logger, create: Bool = true) throws -> OpenedStore {
        if let url = configuration.databaseURL?.value {
            let store = try PostgresStore(
                url: url, poolSize: configuration.databasePoolSize, operationTimeout: .seconds(configuration.databaseTimeout), logger: logger)
            return OpenedStore(store: store, service: PostgresPool(store: store), prepare: { try await store.prepare() })
        }
        let folder = configuration.dataDirectory
        if create {
            try DataFolder.create(folder)
        } else if !FileManager.default.fileExists(atPath: (folder as NSString).appendingPathComponent("latch.sqlite")) {
            throw ConfigurationError(
                key: "data.dir", problem: "names \(DataFolder.absolute(folder)), which holds no Latch data: run `latch serve` there first, or give --data-dir")
        }
        try DataFolder.checkPermissions(folder)
        let store = try SQLiteStore(directory: folder, logger: logger)
        return OpenedStore(store: store, service: SQLiteCloser(store: store), prepare: {})
    }

    /// Runs the store around `body` (for commands that use it briefly, such as `latch keys`).
    public func whileRunning<T: Sendable>(_ body: @Sendable (any LatchStore) async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [service] in try await service.run() }
            defer { group.cancelAll() }
            try await prepare()
            return try await body(store)
        }
    }
}

/// PostgreSQL's connection pool as a service.
struct PostgresPool: Service, CustomStringConvertible {
    var description: String { "PostgresPool" }
    let store: PostgresStore
    func run() async throws { await store.run() }
}

/// Closes the SQLite store at shutdown, after the services that use it have stopped (a service group stops its
/// services in reverse order).
struct SQLiteCloser: Service, CustomStringConvertible {
    var description: String { "SQLiteCloser" }
    let store: SQLiteStore
    func run() async throws {
        try? await gracefulShutdown()
        store.close()
    }
}

/// The data folder: created 0700 with its parents, or refused with the reason, naming `data.dir`.
public enum DataFolder {
    static func create(_ path: String) throws {
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw ConfigurationError(key: "data.dir", problem: "\(absolute(path)) cannot be created: \(reason(path))")
        }
    }

    /// `path` made absolute (from the working folder) and standardized, for messages.
    public static func absolute(_ path: String) -> String {
        let full = path.hasPrefix("/") ? path : (FileManager.default.currentDirectoryPath as NSString).appendingPathComponent(path)
        return (full as NSString).standardizingPath
    }

    /// Refuses, as ssh does for its keys, a data folder that others may write (they could swap the database or
    /// master.key) and a `master.key` that others may read or write; the message gives the fix.
    static func checkPermissions(_ folder: String, keyFile: String? = nil) throws {
        let files = FileManager.default
        if let mode = (try? files.attributesOfItem(atPath: folder))?[.posixPermissions] as? Int, mode & 0o022 != 0 {
            throw ConfigurationError(
                key: "data.dir",
                problem: "names \(absolute(folder)), which others may write (mode \(String(mode & 0o777, radix: 8))): run chmod 700 \(absolute(folder))")
        }
        if let keyFile, let attributes = try? files.attributesOfItem(atPath: keyFile) {
            let mode = attributes[.posixPermissions] as? Int ?? 0
            guard mode & 0o077 == 0 else {
                throw ConfigurationError(
                    key: "keys.encryptionKey", source: "file \(absolute(keyFile))",
                    problem: "may be read by others (mode \(String(mode & 0o777, radix: 8))): run chmod 600 \(absolute(keyFile)), and rotate the key if others could read it")
            }
            let owner = (attributes[.ownerAccountID] as? NSNumber)?.uint32Value
            guard owner == nil || owner == getuid() else {
                throw ConfigurationError(
                    key: "keys.encryptionKey", source: "file \(absolute(keyFile))",
                    problem: "belongs to another user (uid \(owner!)): run chown \(getuid()) \(absolute(keyFile))")
            }
        }
    }

    /// Why a folder cannot be made: the nearest existing ancestor is a file, or may not be written.
    static func reason(_ path: String) -> String {
        var ancestor = absolute(path)
        while !FileManager.default.fileExists(atPath: ancestor), ancestor != "/" { ancestor = (ancestor as NSString).deletingLastPathComponent }
        var isFolder: ObjCBool = false
        _ = FileManager.default.fileExists(atPath: ancestor, isDirectory: &isFolder)
        if !isFolder.boolValue { return "\(ancestor) is a file, not a folder" }
        if !FileManager.default.isWritableFile(atPath: ancestor) { return "\(ancestor) may not be written by this user" }
        return "check the path and its permissions"
    }
}
