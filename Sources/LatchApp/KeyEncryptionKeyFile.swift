import Foundation
import LatchCore
import LatchModel

/// The key-encryption key: from configuration, or from `<data dir>/master.key` (created 0600 on first start).
public enum KeyEncryptionKeyFile {
    public static func loadOrCreate(configuration: LatchConfiguration) throws -> [UInt8] {
        if let key = configuration.keyEncryptionKey { return key }
        let path = (configuration.dataDirectory as NSString).appendingPathComponent("master.key")
        if let data = FileManager.default.contents(atPath: path) {
            guard let text = String(data: data, encoding: .utf8),
                let key = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count == 32
            else { throw LatchError.invalidInput("\(path) must hold base64 of 32 bytes") }
            return Array(key)
        }
        try FileManager.default.createDirectory(
            atPath: configuration.dataDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let key = RandomSource.system.bytes(32)
        // Exclusive create with mode 0600: never readable by others, never overwriting a concurrent writer's key.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else {
            if errno == EEXIST { return try loadOrCreate(configuration: configuration) }
            throw LatchError(.serverError, "cannot create \(path): errno \(errno)")
        }
        let text = Array((Data(key).base64EncodedString() + "\n").utf8)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd)
        close(fd)
        guard written == text.count, synced == 0 else { throw LatchError(.serverError, "cannot write \(path)") }
        return key
    }
}
