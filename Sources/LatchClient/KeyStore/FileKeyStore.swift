import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A key store on the file system: one folder (0700) per namespace, one file (0600) per item, each written
/// atomically (a temporary file, fsync, rename), so a crash leaves either the old or the new value.
public struct FileKeyStore: KeyStore {
    /// The namespace's folder.
    public let directory: URL

    /// Items of `namespace` under `root`. The namespace must be a plain folder name.
    public init(root: URL, namespace: String) throws(UserClientError) {
        guard !namespace.isEmpty, !namespace.contains("/"), namespace != ".", namespace != ".." else {
            throw .invalidConfiguration("the key-store namespace must be a plain folder name")
        }
        directory = root.appendingPathComponent(namespace, isDirectory: true)
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .invalidConfiguration("cannot create \(directory.path): \(error)")
        }
    }

    private func path(_ name: String) throws -> String {
        guard !name.isEmpty, name.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || "-_.".unicodeScalars.contains($0) }),
            !name.hasPrefix(".")
        else { throw UserClientError.invalidInput("bad key-store item name") }
        return directory.appendingPathComponent(name).path
    }

    public func value(for name: String) throws -> Data? {
        let path = try path(name)
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try Data(contentsOf: URL(fileURLWithPath: path))
    }

    public func set(_ value: Data, for name: String) throws {
        let path = try path(name)
        let temporary = directory.appendingPathComponent(".\(name).\(UUID().uuidString).tmp").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw UserClientError.invalidConfiguration("cannot write \(temporary): errno \(errno)") }
        let written = value.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == value.count, synced == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw UserClientError.invalidConfiguration("cannot write \(path)")
        }
    }

    public func remove(_ name: String) throws {
        let path = try path(name)
        if FileManager.default.fileExists(atPath: path) { try FileManager.default.removeItem(atPath: path) }
    }

    /// The names of the items stored (temporary files of interrupted writes left out).
    public func itemNames() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix(".") }.sorted()
    }

    public func removeAll() throws {
        for item in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            try FileManager.default.removeItem(at: directory.appendingPathComponent(item))
        }
    }
}
