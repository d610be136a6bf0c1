import Crypto
import Foundation
import LatchApp
import LatchCore
import LatchTesting
import Logging
import Testing

/// Reads from bytes in memory, as the archive reader expects.
private final class MemorySource {
    let bytes: [UInt8]
    var offset = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    func read(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, offset + count)
        defer { offset = end }
        return Array(bytes[offset..<end])
    }
}

/// A deterministic generator (SplitMix64), so a failing mutation can be replayed.
private struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Warnings and errors only: the test run's output stays readable.
private let quietLogger: Logger = {
    var logger = Logger(label: "test")
    logger.logLevel = .warning
    return logger
}()

@Suite("Backup file format")
struct BackupArchiveTests {
    static let manifest = Array(#"{"format":"latch-backup"}"#.utf8)
    static let database = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 7) }
    static let key = Array((Data(repeating: 7, count: 32).base64EncodedString() + "\n").utf8)

    static func archive(key: Bool = true) throws -> [UInt8] {
        var out: [UInt8] = []
        var writer = try BackupArchive.Writer { out += $0 }
        try writer.add(.manifest, bytes: manifest)
        try writer.add(.database, bytes: database)
        if key { try writer.add(.masterKey, bytes: Self.key) }
        try writer.finish()
        return out
    }

    /// Reads `bytes`, returning the members' contents; also checks that no sink got more than the member declared.
    static func read(_ bytes: [UInt8], limits: BackupArchive.Limits = .init()) throws -> [BackupArchive.Member: [UInt8]] {
        let source = MemorySource(bytes)
        var contents: [BackupArchive.Member: [UInt8]] = [:]
        var declared: [BackupArchive.Member: UInt64] = [:]
        _ = try BackupArchive.read(limits: limits, from: source.read) { member, size in
            declared[member] = size
            return { contents[member, default: []] += $0 }
        }
        for (member, bytes) in contents { #expect(UInt64(bytes.count) == declared[member]) }
        return contents
    }

    /// A file in the format with any members, names and sizes, and a correct digest: structure checks, not the digest, must refuse it.
    static func raw(header: [UInt8]? = nil, members: [(name: String, size: UInt64?, bytes: [UInt8])], trailing: [UInt8] = []) -> [UInt8] {
        var out = header ?? (Array("LATCHBAK".utf8) + [0, 1, 0, 0])
        for member in members {
            let name = Array(member.name.utf8)
            out += [0x4D, UInt8(name.count)] + name
            out += withUnsafeBytes(of: (member.size ?? UInt64(member.bytes.count)).bigEndian) { Array($0) }
            out += member.bytes
        }
        out += [0x45]
        return out + Array(SHA256.hash(data: out)) + trailing
    }

    static func expectRefused(_ bytes: [UInt8], limits: BackupArchive.Limits = .init(), saying text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try read(bytes, limits: limits)
            Issue.record("accepted", sourceLocation: sourceLocation)
        } catch let error as BackupFormatError {
            #expect(error.description.contains(text), "\(error)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test("A backup reads back member for member; master.key is optional")
    func roundTrip() throws {
        let contents = try Self.read(try Self.archive())
        #expect(contents == [.manifest: Self.manifest, .database: Self.database, .masterKey: Self.key])
        let withoutKey = try Self.read(try Self.archive(key: false))
        #expect(withoutKey == [.manifest: Self.manifest, .database: Self.database])
        #expect(try Self.archive().prefix(12) == ArraySlice(Array("LATCHBAK".utf8) + [0, 1, 0, 0]))
    }

    @Test("Every truncation is refused")
    func truncations() throws {
        let archive = try Self.archive()
        for length in 0..<archive.count {
            #expect(throws: BackupFormatError.self) { _ = try Self.read(Array(archive.prefix(length))) }
        }
    }

    @Test("Structure is checked even where the digest matches: names, order, repeats, sizes, header, trailing bytes")
    func structure() throws {
        let m = (name: "manifest.json", size: UInt64?.none, bytes: Self.manifest)
        let d = (name: "latch.sqlite", size: UInt64?.none, bytes: Self.database)
        #expect(try Self.read(Self.raw(members: [m, d])).count == 2)
        Self.expectRefused(Self.raw(members: [m, (name: "../../etc/passwd", size: nil, bytes: [1, 2])]), saying: "unknown member")
        Self.expectRefused(Self.raw(members: [m, (name: "/tmp/latch.sqlite", size: nil, bytes: [1])]), saying: "unknown member")
        Self.expectRefused(Self.raw(members: [m, (name: "latch.sqlite-wal", size: nil, bytes: [1])]), saying: "unknown member")
        Self.expectRefused(Self.raw(members: [m, (name: "latch.lock", size: nil, bytes: [1])]), saying: "unknown member")
        Self.expectRefused(Self.raw(members: [m, d, d]), saying: "repeated or out of order")
        Self.expectRefused(Self.raw(members: [d, m]), saying: "repeated or out of order")
        Self.expectRefused(Self.raw(members: [m]), saying: "lacks its manifest or its database")
        Self.expectRefused(Self.raw(members: [d]), saying: "lacks its manifest or its database")
        Self.expectRefused(Self.raw(members: [m, d], trailing: [0]), saying: "bytes follow")
        Self.expectRefused(Self.raw(header: Array("LATCHBAX".utf8) + [0, 1, 0, 0], members: [m, d]), saying: "not a Latch backup")
        Self.expectRefused(Self.raw(header: Array("LATCHBAK".utf8) + [0, 2, 0, 0], members: [m, d]), saying: "format version 2")
        Self.expectRefused(Self.raw(header: Array("LATCHBAK".utf8) + [0, 1, 0, 1], members: [m, d]), saying: "unknown flags")
        // Sizes over a member's limit are refused from the header, before anything is read or handed on.
        Self.expectRefused(
            Self.raw(members: [m, (name: "latch.sqlite", size: UInt64.max, bytes: [])]), saying: "over its limit")
        Self.expectRefused(
            Self.raw(members: [m, d]), limits: .init(maximumDatabaseBytes: UInt64(Self.database.count - 1)), saying: "over its limit")
        Self.expectRefused(Self.raw(members: [(name: "manifest.json", size: nil, bytes: Array(repeating: 0x20, count: 64 * 1024 + 1)), d]), saying: "over its limit")
        Self.expectRefused(Self.raw(members: [m, d, (name: "master.key", size: nil, bytes: Array(repeating: 0x41, count: 1025))]), saying: "over its limit")
        // A declared size larger than what follows: the file ends inside the member.
        Self.expectRefused(Self.raw(members: [m, (name: "latch.sqlite", size: 1_000_000, bytes: [1, 2, 3])]), saying: "ends inside")
        // A changed byte anywhere is caught by the digest.
        var altered = try Self.archive()
        altered[40] ^= 0x01
        Self.expectRefused(altered, saying: "SHA-256 does not match")
    }

    @Test("Fuzz (bounded): 4,000 mutated backups — flipped, inserted, deleted, duplicated bytes — are all refused cleanly")
    func mutations() throws {
        let original = try Self.archive()
        var random = SeededGenerator(state: 0x1A7C_4BAC)
        let deadline = Date().addingTimeInterval(60)
        var refused = 0
        for round in 0..<4000 {
            guard Date() < deadline else { break }
            var bytes = original
            for _ in 0..<Int.random(in: 1...3, using: &random) {
                switch Int.random(in: 0..<5, using: &random) {
                case 0: bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
                case 1: bytes.insert(UInt8.random(in: 0...255, using: &random), at: Int.random(in: 0...bytes.count, using: &random))
                case 2 where bytes.count > 1: bytes.remove(at: Int.random(in: 0..<bytes.count, using: &random))
                case 3:
                    let start = Int.random(in: 0..<bytes.count, using: &random)
                    let end = min(bytes.count, start + Int.random(in: 1...32, using: &random))
                    bytes.insert(contentsOf: bytes[start..<end], at: Int.random(in: 0...bytes.count, using: &random))
                default:
                    // A size field set to something large: the limits must hold.
                    let at = Int.random(in: 0..<max(1, bytes.count - 8), using: &random)
                    bytes.replaceSubrange(at..<min(bytes.count, at + 8), with: [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
                }
            }
            guard bytes != original else { continue }
            do {
                _ = try Self.read(bytes)
                Issue.record("mutation \(round) was accepted")
            } catch is BackupFormatError {
                refused += 1
            } catch {
                Issue.record("mutation \(round): unexpected error \(error)")
            }
        }
        #expect(refused > 1000, "only \(refused) mutations ran within the time bound")
    }

    @Test("Backup and restore of a SQLite deployment: files 0600 in a 0700 folder, no lock file; a non-empty folder and a damaged file are refused, leaving nothing")
    func backupAndRestore() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var configuration = LatchConfiguration()
        configuration.dataDirectory = directory.path + "/data"
        // A deployment as `latch serve` leaves it: database, master.key, lock file.
        let key = try KeyEncryptionKeyFile.loadOrCreate(configuration: configuration)
        let opened = try OpenedStore.open(configuration, logger: quietLogger)
        let algorithm = configuration.signingAlgorithm
        _ = try await opened.whileRunning { store in
            _ = try await SigningKeyRing.load(
                store: store, sealer: try KeySealer(keyEncryptionKey: key), clock: .system, random: .system, algorithm: algorithm,
                publicationAfterRetirement: 3600, logger: quietLogger)
        }
        _ = FileManager.default.createFile(atPath: configuration.dataDirectory + "/latch.lock", contents: Data("123\n".utf8))

        let out = directory.path + "/backup.latch"
        let made = try DeploymentBackup.make(configuration: configuration, out: out, now: 1_800_000_000)
        #expect(made.manifest.masterKey && made.manifest.schemaVersion > 0 && made.manifest.createdAt == 1_800_000_000)
        #expect(try Self.mode(out) == 0o600)
        // Never overwrites.
        #expect(throws: ConfigurationError.self) { _ = try DeploymentBackup.make(configuration: configuration, out: out, now: 0) }
        // No scratch folder left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["backup.latch", "data"])

        let restoredFolder = directory.path + "/restored/data"
        let restored = try DeploymentBackup.restore(from: out, into: restoredFolder, keepSessions: false, now: 1_800_000_100)
        #expect(restored.manifest == made.manifest)
        #expect(try FileManager.default.contentsOfDirectory(atPath: restoredFolder).sorted() == ["latch.sqlite", "master.key"])
        #expect(try Self.mode(restoredFolder) == 0o700)
        #expect(try Self.mode(restoredFolder + "/latch.sqlite") == 0o600 && Self.mode(restoredFolder + "/master.key") == 0o600)
        #expect(FileManager.default.contents(atPath: restoredFolder + "/master.key") == FileManager.default.contents(atPath: configuration.dataDirectory + "/master.key"))
        // The restored deployment opens, with the same signing keys.
        var restoredConfiguration = configuration
        restoredConfiguration.dataDirectory = restoredFolder
        let reopened = try OpenedStore.open(restoredConfiguration, logger: quietLogger, create: false)
        let keys = try await reopened.whileRunning { try await $0.signingKeys().map(\.keyID) }
        let original = try OpenedStore.open(configuration, logger: quietLogger, create: false)
        #expect(try await original.whileRunning { try await $0.signingKeys().map(\.keyID) } == keys && !keys.isEmpty)

        // A non-empty folder is refused and left as it was.
        #expect(throws: ConfigurationError.self) { _ = try DeploymentBackup.restore(from: out, into: restoredFolder, keepSessions: false, now: 0) }
        #expect(FileManager.default.fileExists(atPath: restoredFolder + "/latch.sqlite") && FileManager.default.fileExists(atPath: restoredFolder + "/master.key"))
        // A damaged file: refused, and the folder it would have made is gone.
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: out)))
        bytes[bytes.count / 2] ^= 0x20
        let damaged = directory.path + "/damaged.latch"
        _ = FileManager.default.createFile(atPath: damaged, contents: Data(bytes))
        #expect(throws: BackupFormatError.self) { _ = try DeploymentBackup.restore(from: damaged, into: directory.path + "/never", keepSessions: false, now: 0) }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/never"))
        // A well-formed file whose database is not one (the digest matches: made by someone, not damaged).
        let forged = directory.path + "/forged.latch"
        var forgedBytes: [UInt8] = []
        var writer = try BackupArchive.Writer { forgedBytes += $0 }
        try writer.add(.manifest, bytes: Array(try JSONEncoder().encode(made.manifest)))
        try writer.add(.database, bytes: Array(repeating: 0x41, count: 4096))
        try writer.add(.masterKey, bytes: Self.key)
        try writer.finish()
        _ = FileManager.default.createFile(atPath: forged, contents: Data(forgedBytes))
        #expect(throws: BackupFormatError.self) { _ = try DeploymentBackup.restore(from: forged, into: directory.path + "/never", keepSessions: false, now: 0) }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/never"))
        // An empty existing folder is kept, emptied again.
        try FileManager.default.createDirectory(atPath: directory.path + "/empty", withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        #expect(throws: BackupFormatError.self) { _ = try DeploymentBackup.restore(from: damaged, into: directory.path + "/empty", keepSessions: false, now: 0) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/empty").isEmpty)
    }

    @Test("Backup refuses a folder without a deployment (creating nothing) and PostgreSQL")
    func backupRefusals() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var configuration = LatchConfiguration()
        configuration.dataDirectory = directory.path + "/nothing-here"
        #expect(throws: NoDeploymentError.self) { _ = try DeploymentBackup.make(configuration: configuration, out: directory.path + "/b", now: 0) }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/nothing-here") && !FileManager.default.fileExists(atPath: directory.path + "/b"))
        configuration.databaseURL = Redacted("postgres://latch@127.0.0.1:1/latch")
        #expect(throws: BackupNotApplicableError.self) { _ = try DeploymentBackup.make(configuration: configuration, out: directory.path + "/b", now: 0) }
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/b"))
    }

    static func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int ?? -1) & 0o777
    }
}
