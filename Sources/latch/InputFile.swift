import Foundation

/// A file named on the command line that cannot be used: the message names the option, the path, what is wrong
/// and what to do. `latch` exits 2 (usage) with it.
struct InputFileError: Error, CustomStringConvertible {
    let description: String
}

enum InputFile {
    /// The text of the file `path`, given as `option`; `hint` says where such a file comes from.
    static func text(_ path: String, option: String, hint: String) throws -> String {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw InputFileError(description: "\(option) \(path): no such file. \(hint)")
        }
        guard !isFolder.boolValue else { throw InputFileError(description: "\(option) \(path) is a folder, not a file. \(hint)") }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw InputFileError(description: "\(option) \(path) cannot be read: check its permissions")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw InputFileError(description: "\(option) \(path) is not a text (PEM) file") }
        return text
    }

    /// Writes `text` to `path` (mode 0600), given as `option`.
    static func write(_ text: String, to path: String, option: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600]) else {
            let folder = (path as NSString).deletingLastPathComponent
            throw InputFileError(
                description: "\(option) \(path) cannot be written: does the folder \(folder.isEmpty ? "." : folder) exist and may you write there?")
        }
    }
}
