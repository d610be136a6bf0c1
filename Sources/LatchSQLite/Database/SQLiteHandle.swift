import CLatchSQLiteShim
import Foundation
import LatchCore
import SQLiteNIO
import VaporCSQLite

// sqlite-nio vendors SQLite with prefixed symbols; Latch drives that C API directly from dedicated threads
// (statement cache, group commit) instead of through SQLiteNIO's per-query futures.

/// A value bound to or read from SQLite.
enum SQLValue: Sendable, Hashable {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob(Data)
}

extension SQLValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByNilLiteral {
    init(stringLiteral value: String) { self = .text(value) }
    init(integerLiteral value: Int64) { self = .int(value) }
    init(nilLiteral: ()) { self = .null }
}

extension Optional where Wrapped == String {
    var sql: SQLValue { map(SQLValue.text) ?? .null }
}

extension Optional where Wrapped == Int64 {
    var sql: SQLValue { map(SQLValue.int) ?? .null }
}

/// One result row.
struct SQLRow: Sendable {
    let values: [SQLValue]

    func int(_ index: Int) -> Int64 {
        if case .int(let value) = values[index] { return value }
        return 0
    }

    func optionalInt(_ index: Int) -> Int64? {
        if case .int(let value) = values[index] { return value }
        return nil
    }

    func text(_ index: Int) -> String {
        if case .text(let value) = values[index] { return value }
        return ""
    }

    func optionalText(_ index: Int) -> String? {
        if case .text(let value) = values[index] { return value }
        return nil
    }

    func blob(_ index: Int) -> Data {
        switch values[index] {
        case .blob(let value): value
        case .text(let value): Data(value.utf8)
        default: Data()
        }
    }

    func optionalBlob(_ index: Int) -> Data? {
        if case .null = values[index] { return nil }
        return blob(index)
    }
}

/// An error reported by SQLite.
struct SQLiteError: Error, CustomStringConvertible {
    let code: Int32
    let message: String
    var description: String { "SQLite error \(code): \(message)" }

    /// The primary result code (the low byte of an extended code).
    var primaryCode: Int32 { code & 0xFF }
}

private let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A SQLite connection. Not thread-safe: one thread uses it at a time — the writer's thread, the checkpointer's,
/// or the task that checked it out of the reader pool (which is what makes handing it between threads sound).
final class SQLiteHandle: @unchecked Sendable {
    private var db: OpaquePointer?
    private var statements: [String: OpaquePointer] = [:]

    /// Opens (creating when `create`) the database at `path`; with `readOnly`, for reading only (such a connection
    /// never checkpoints or removes the WAL when it closes).
    init(path: String, create: Bool, readOnly: Bool = false) throws {
        var handle: OpaquePointer?
        let flags = (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0)) | SQLITE_OPEN_NOMUTEX
        let result = sqlite_nio_sqlite3_open_v2(path, &handle, flags, nil)
        guard result == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite_nio_sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite_nio_sqlite3_close(handle)
            throw SQLiteError(code: result, message: message)
        }
        db = handle
        sqlite_nio_sqlite3_extended_result_codes(handle, 1)
        // Plans that do not depend on bound values: no re-prepare on every bind of a cached statement.
        _ = latch_sqlite_enable_qpsg(UnsafeMutableRawPointer(handle))
    }

    deinit { close() }

    func close() {
        for statement in statements.values { sqlite_nio_sqlite3_finalize(statement) }
        statements.removeAll()
        if let db { sqlite_nio_sqlite3_close_v2(db) }
        db = nil
    }

    /// Runs `body` with the raw connection, for the C APIs this type does not wrap (the backup API).
    func withConnection<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        guard let db else { throw SQLiteError(code: SQLITE_MISUSE, message: "the connection is closed") }
        return try body(db)
    }

    private func error(_ code: Int32) -> SQLiteError {
        SQLiteError(code: code, message: db.map { String(cString: sqlite_nio_sqlite3_errmsg($0)) } ?? "closed")
    }

    /// Runs one or more statements without parameters.
    func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let result = sqlite_nio_sqlite3_exec(db, sql, nil, nil, &message)
        if result != SQLITE_OK {
            let text = message.map { String(cString: $0) } ?? "error"
            sqlite_nio_sqlite3_free(message)
            throw SQLiteError(code: result, message: text)
        }
    }

    private func prepared(_ sql: String) throws -> OpaquePointer {
        if let statement = statements[sql] { return statement }
        var statement: OpaquePointer?
        let result = sqlite_nio_sqlite3_prepare_v3(db, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard result == SQLITE_OK, let statement else { throw error(result) }
        statements[sql] = statement
        return statement
    }

    private func bind(_ statement: OpaquePointer, _ values: [SQLValue]) throws {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let result: Int32
            switch value {
            case .null: result = sqlite_nio_sqlite3_bind_null(statement, index)
            case .int(let int): result = sqlite_nio_sqlite3_bind_int64(statement, index, int)
            case .double(let double): result = sqlite_nio_sqlite3_bind_double(statement, index, double)
            case .text(let text):
                result = sqlite_nio_sqlite3_bind_text64(
                    statement, index, text, UInt64(text.utf8.count), SQLITE_TRANSIENT, UInt8(SQLITE_UTF8))
            case .blob(let data):
                result = data.withUnsafeBytes {
                    sqlite_nio_sqlite3_bind_blob64(statement, index, $0.baseAddress, UInt64($0.count), SQLITE_TRANSIENT)
                }
            }
            guard result == SQLITE_OK else { throw error(result) }
        }
    }

    private func column(_ statement: OpaquePointer, _ index: Int32) -> SQLValue {
        switch sqlite_nio_sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER: return .int(sqlite_nio_sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT: return .double(sqlite_nio_sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            let count = Int(sqlite_nio_sqlite3_column_bytes(statement, index))
            guard let pointer = sqlite_nio_sqlite3_column_text(statement, index) else { return .text("") }
            return .text(String(decoding: UnsafeBufferPointer(start: pointer, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            let count = Int(sqlite_nio_sqlite3_column_bytes(statement, index))
            guard let pointer = sqlite_nio_sqlite3_column_blob(statement, index) else { return .blob(Data()) }
            return .blob(Data(bytes: pointer, count: count))
        default: return .null
        }
    }

    /// How many times the cached statement for `sql` was re-prepared (0 when it was never prepared).
    func reprepareCount(_ sql: String) -> Int32 {
        statements[sql].map { sqlite_nio_sqlite3_stmt_status($0, SQLITE_STMTSTATUS_REPREPARE, 0) } ?? 0
    }

    /// Runs a query and returns every row.
    func query(_ sql: String, _ values: [SQLValue] = []) throws -> [SQLRow] {
        let statement = try prepared(sql)
        defer {
            sqlite_nio_sqlite3_reset(statement)
            sqlite_nio_sqlite3_clear_bindings(statement)
        }
        try bind(statement, values)
        var rows: [SQLRow] = []
        let columns = sqlite_nio_sqlite3_column_count(statement)
        while true {
            let result = sqlite_nio_sqlite3_step(statement)
            if result == SQLITE_DONE { break }
            guard result == SQLITE_ROW else { throw error(result) }
            rows.append(SQLRow(values: (0..<columns).map { column(statement, $0) }))
        }
        return rows
    }

    /// The first row of a query, if any.
    func row(_ sql: String, _ values: [SQLValue] = []) throws -> SQLRow? {
        try query(sql, values).first
    }

    /// Runs a statement and returns how many rows it changed.
    @discardableResult
    func run(_ sql: String, _ values: [SQLValue] = []) throws -> Int {
        let statement = try prepared(sql)
        defer {
            sqlite_nio_sqlite3_reset(statement)
            sqlite_nio_sqlite3_clear_bindings(statement)
        }
        try bind(statement, values)
        let result = sqlite_nio_sqlite3_step(statement)
        guard result == SQLITE_DONE || result == SQLITE_ROW else { throw error(result) }
        return Int(sqlite_nio_sqlite3_changes(db))
    }
}
