import Foundation

/// Whether a configuration's data folder holds a deployment — for the commands that work on one (`latch admin
/// bootstrap`, `backup`, `latch keys`), which must not silently make a new deployment in a mistyped folder.
public enum DeploymentFolder {
    /// Refuses (``NoDeploymentError``) a data folder without a deployment: on SQLite one without `latch.sqlite`; on
    /// SQLite and PostgreSQL one without `master.key` when no key-encryption key is configured (a new key would
    /// unseal nothing the deployment holds). `hint` ends the message (what the caller may do about it).
    public static func requireDeployment(_ configuration: LatchConfiguration, hint: String) throws {
        let folder = DataFolder.absolute(configuration.dataDirectory)
        var needed: [String] = []
        if configuration.databaseURL == nil { needed.append("latch.sqlite") }
        if configuration.keyEncryptionKey == nil { needed.append("master.key") }
        // PostgreSQL with a configured key: the deployment is all in the database.
        if needed.isEmpty { return }
        var isFolder: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder)
        let missing = needed.filter { !FileManager.default.fileExists(atPath: (folder as NSString).appendingPathComponent($0)) }
        if exists, isFolder.boolValue, missing.isEmpty { return }
        let found = !exists ? "does not exist" : !isFolder.boolValue ? "is not a folder" : "has no \(missing.joined(separator: " or "))"
        let expected =
            configuration.databaseURL != nil
            ? "the deployment's master.key (or keys.encryptionKey configured)"
            : "a deployment's \(needed.joined(separator: " and ")) (made by the first `latch serve` there)"
        throw NoDeploymentError(folder: folder, problem: "\(found); expected \(expected). \(hint)")
    }
}

/// A command that works on a deployment was pointed at a folder that holds none.
public struct NoDeploymentError: Error, CustomStringConvertible {
    /// The folder, absolute.
    public let folder: String
    public let problem: String
    public init(folder: String, problem: String) {
        self.folder = folder
        self.problem = problem
    }
    public var description: String { "the data folder \(folder) holds no Latch deployment: it \(problem)" }
}
