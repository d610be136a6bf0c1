import Crypto
import Foundation

/// The file `latch admin backup` writes and `latch admin restore` reads: a small length-prefixed container.
///
/// ```
/// header   "LATCHBAK" (8 bytes) | format version: UInt16 = 1 | flags: UInt16 = 0
/// member   tag 0x4D ('M') | name length: UInt8 | name (ASCII) | size: UInt64 | size bytes
///          — manifest.json, then latch.sqlite, then master.key when the key is a file; each once, in this order
/// trailer  tag 0x45 ('E') | SHA-256 of every byte before this tag (32 bytes) — and then the end of the file
/// ```
/// Integers are big-endian. The file is untrusted on restore: a member name outside the three above, a member out
/// of order or repeated, a size over its member's limit, a short file, a wrong digest or a byte after the trailer
/// is refused. Names are never used as paths — each maps to a fixed file name — so no path can escape the folder.
public enum BackupArchive {
    public static let magic: [UInt8] = Array("LATCHBAK".utf8)
    public static let formatVersion: UInt16 = 1
    static let memberTag: UInt8 = 0x4D
    static let endTag: UInt8 = 0x45

    /// The members a backup holds, in their order.
    public enum Member: String, CaseIterable, Sendable {
        case manifest = "manifest.json"
        case database = "latch.sqlite"
        case masterKey = "master.key"

        /// The largest size accepted for this member on restore.
        func maximumBytes(_ limits: Limits) -> UInt64 {
            switch self {
            case .manifest: 64 * 1024
            case .database: limits.maximumDatabaseBytes
            case .masterKey: 1024
            }
        }

        var order: Int { Self.allCases.firstIndex(of: self)! }
    }

    /// Limits applied to an untrusted backup.
    public struct Limits: Sendable {
        /// The largest database accepted (default 64 GiB).
        public var maximumDatabaseBytes: UInt64
        public init(maximumDatabaseBytes: UInt64 = 64 << 30) { self.maximumDatabaseBytes = maximumDatabaseBytes }
    }

    /// Writes a backup through `output`, hashing as it goes.
    public struct Writer {
        private let output: ([UInt8]) throws -> Void
        private var hash = SHA256()
        private var last = -1

        public init(output: @escaping ([UInt8]) throws -> Void) throws {
            self.output = output
            try emit(BackupArchive.magic + BackupArchive.bytes(BackupArchive.formatVersion) + BackupArchive.bytes(UInt16(0)))
        }

        private mutating func emit(_ bytes: [UInt8]) throws {
            hash.update(data: bytes)
            try output(bytes)
        }

        private mutating func begin(_ member: Member, size: UInt64) throws {
            precondition(member.order > last, "backup members are written once each, in order")
            last = member.order
            let name = Array(member.rawValue.utf8)
            try emit([BackupArchive.memberTag, UInt8(name.count)] + name + BackupArchive.bytes(size))
        }

        /// Adds a member held in memory.
        public mutating func add(_ member: Member, bytes: [UInt8]) throws {
            try begin(member, size: UInt64(bytes.count))
            try emit(bytes)
        }

        /// Adds a member from a file, streamed in 1 MiB chunks; the file must not change meanwhile.
        public mutating func add(_ member: Member, file path: String) throws {
            guard let handle = FileHandle(forReadingAtPath: path) else { throw BackupFormatError("\(path) cannot be read") }
            defer { try? handle.close() }
            let size = try handle.seekToEnd()
            try handle.seek(toOffset: 0)
            try begin(member, size: size)
            var remaining = size
            while remaining > 0 {
                guard let chunk = try handle.read(upToCount: Int(min(remaining, 1 << 20))), !chunk.isEmpty else {
                    throw BackupFormatError("\(path) shrank while it was being copied")
                }
                try emit(Array(chunk))
                remaining -= UInt64(chunk.count)
            }
        }

        /// Writes the trailer.
        public mutating func finish() throws {
            let tag = [BackupArchive.endTag]
            hash.update(data: tag)
            try output(tag + Array(hash.finalize()))
        }
    }

    /// Reads a backup from `read` (which returns at most the count asked, fewer only at the end of the file),
    /// handing each member's bytes to the sink `open` returns for it. Returns the members read, once the digest
    /// checked and the end of the file was reached; throws ``BackupFormatError`` on anything else. What a sink was
    /// given before a failure must be discarded by the caller.
    public static func read(
        limits: Limits = Limits(), from read: (Int) throws -> [UInt8], open: (Member, UInt64) throws -> ([UInt8]) throws -> Void
    ) throws -> [Member] {
        var hash = SHA256()
        func exactly(_ count: Int, _ what: String) throws -> [UInt8] {
            let bytes = try read(count)
            guard bytes.count == count else { throw BackupFormatError("the file ends inside \(what): it is truncated or not a Latch backup") }
            return bytes
        }
        func hashed(_ count: Int, _ what: String) throws -> [UInt8] {
            let bytes = try exactly(count, what)
            hash.update(data: bytes)
            return bytes
        }
        let header = try hashed(12, "the header")
        guard Array(header[0..<8]) == magic else { throw BackupFormatError("not a Latch backup (no LATCHBAK header)") }
        let version = integer(header[8..<10])
        guard version == UInt64(formatVersion) else {
            throw BackupFormatError("backup format version \(version): this Latch reads version \(formatVersion)")
        }
        guard integer(header[10..<12]) == 0 else { throw BackupFormatError("unknown flags in the backup header") }
        var members: [Member] = []
        while true {
            let tag = try hashed(1, "a member's header")[0]
            if tag == endTag { break }
            guard tag == memberTag, members.count < Member.allCases.count else { throw BackupFormatError("unexpected byte \(tag) where a member starts") }
            let length = Int(try hashed(1, "a member's header")[0])
            let nameBytes = try hashed(length, "a member's name")
            guard let name = String(bytes: nameBytes, encoding: .ascii), let member = Member(rawValue: name) else {
                throw BackupFormatError("unknown member \(String(decoding: nameBytes.prefix(64), as: UTF8.self).debugDescription)")
            }
            guard member.order > (members.last?.order ?? -1) else { throw BackupFormatError("member \(name) is repeated or out of order") }
            let size = integer(try hashed(8, "a member's header")[...])
            guard size <= member.maximumBytes(limits) else {
                throw BackupFormatError("member \(name) is \(size) bytes, over its limit of \(member.maximumBytes(limits))")
            }
            let sink = try open(member, size)
            var remaining = size
            while remaining > 0 {
                let chunk = try hashed(Int(min(remaining, 1 << 20)), "member \(name)")
                try sink(chunk)
                remaining -= UInt64(chunk.count)
            }
            members.append(member)
        }
        let digest = try exactly(32, "the trailer")
        guard digest == Array(hash.finalize()) else { throw BackupFormatError("the backup's SHA-256 does not match: the file is damaged or was altered") }
        guard try read(1).isEmpty else { throw BackupFormatError("bytes follow the backup's trailer") }
        guard members.first == .manifest, members.contains(.database) else {
            throw BackupFormatError("the backup lacks its manifest or its database")
        }
        return members
    }

    static func bytes<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }

    static func integer(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// What a backup says about itself (its `manifest.json` member).
public struct BackupManifest: Codable, Sendable, Equatable {
    /// Always "latch-backup".
    public var format: String
    /// The Latch that wrote it.
    public var latchVersion: String
    /// When it was made (Unix seconds).
    public var createdAt: Int64
    /// Applied migrations in the database, and the last one's name.
    public var schemaVersion: Int
    public var lastMigration: String
    /// Whether `master.key` is in the backup (false: the key-encryption key came from configuration, and must be
    /// supplied again the same way).
    public var masterKey: Bool

    public static let format = "latch-backup"
}

/// A backup file that cannot be read: damaged, altered, or not a backup.
public struct BackupFormatError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
