import Foundation
import LatchCore
import LatchModel

/// The key-encryption key: from configuration, or from `<data dir>/master.key` (created 0600 on first start).
public enum KeyEncryptionKeyFile {
    public static func loadOrCreate(configuration: LatchConfiguration) throws -> [UInt8] {
        try load(configuration: configuration, create: true)
    }

    /// The key, from configuration or `master.key`; with `create` false a missing `master.key` is refused
    /// (``NoDeploymentError``) instead of being made: a new key would unseal nothing the deployment holds.
    public static func load(configuration: LatchConfiguration, create: Bool) throws -> [UInt8] {
        if let key = configuration.keyEncryptionKey { return key.value }
        let path = (configuration.dataDirectory as NSString).appendingPathComponent("master.key")
        try DataFolder.checkPermissions(configuration.dataDirectory, keyFile: path)
        if let data = FileManager.default.contents(atPath: path) {
            guard let text = String(data: data, encoding: .utf8),
                let key = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count == 32
            else {
                throw ConfigurationError(
                    key: "keys.encryptionKey", source: "file \(path)",
                    problem: "must hold base64 of 32 bytes: restore the file this deployment made, or set LATCH_KEYS_ENCRYPTION_KEY")
            }
            return Array(key)
        }
        guard create else {
            throw NoDeploymentError(
                folder: DataFolder.absolute(configuration.dataDirectory),
                problem: "has no master.key and no keys.encryptionKey is configured: restore the deployment's master.key, or set LATCH_KEYS_ENCRYPTION_KEY")
        }
        try DataFolder.create(configuration.dataDirectory)
        let key = RandomSource.system.bytes(32)
        // Exclusive create with mode 0600: never readable by others, never overwriting a concurrent writer's key.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { return try load(configuration: configuration, create: false) }
            throw ConfigurationError(
                key: "data.dir", source: path, problem: "cannot hold a new master.key: \(String(cString: strerror(errno))); check the folder's permissions")
        }
        let text = Array((Data(key).base64EncodedString() + "\n").utf8)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == text.count, synced == 0 else {
            throw ConfigurationError(key: "data.dir", source: path, problem: "master.key could not be written in full: is the disk full?")
        }
        return key
    }
}
