import Foundation

/// A fresh folder under the system temp directory, removed by `remove()`.
public struct TemporaryDirectory: Sendable {
    public let path: String

    public init(prefix: String = "latch-test") {
        path = (NSTemporaryDirectory() as NSString).appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    public func remove() { try? FileManager.default.removeItem(atPath: path) }
}
