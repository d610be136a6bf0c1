import Foundation
import LatchCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `<data.dir>/latch.lock`, held (`flock`, exclusive) by the one `latch serve` using the folder: a second server
/// started on it is refused instead of sharing its files. The kernel drops the lock when the process ends, however
/// it ends, so a crashed server leaves nothing to clean up; the file holds the holder's process id, for the message.
/// Replicas of a PostgreSQL deployment each have a data folder of their own.
final class DataFolderLock: Sendable {
    private let descriptor: Int32

    /// Takes the folder's lock (creating the folder 0700 when missing), or refuses naming the holder.
    init(folder: String) throws {
        try DataFolder.create(folder)
        let path = (folder as NSString).appendingPathComponent("latch.lock")
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw ConfigurationError(key: "data.dir", problem: "\(DataFolder.absolute(folder)): its lock file cannot be opened (\(String(cString: strerror(errno))))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            close(descriptor)
            throw ConfigurationError(
                key: "data.dir",
                problem: "\(DataFolder.absolute(folder)) is in use by another latch serve" + (holder.isEmpty ? "" : " (process \(holder))")
                    + ": one server per data folder (replicas of a PostgreSQL deployment each take a folder of their own)")
        }
        _ = ftruncate(descriptor, 0)
        let pid = Array("\(getpid())\n".utf8)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }
}
