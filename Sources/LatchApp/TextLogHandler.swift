import Foundation
import Logging

/// Plain-text logs (`log.format=text`, the default) in swift-log's `StreamLogHandler` form —
/// `time level label: key=value … [source] message`, metadata sorted by key, the time local with its offset — with
/// the metadata rendered when a line is written.
///
/// `StreamLogHandler` renders its metadata whenever the metadata changes, and Hummingbird gives every request's logger
/// its own request id: every request paid for formatting that id and joining the metadata, logged or not (about 1 %
/// of a JWKS answer's CPU in a profile). Here a request that logs nothing formats nothing.
public struct TextLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let write: @Sendable (String) -> Void

    /// `write` receives each line with its line break; the default writes to standard error, one write per line.
    public init(
        label: String, metadataProvider: Logger.MetadataProvider? = LoggingSystem.metadataProvider,
        write: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError
    ) {
        self.label = label
        self.metadataProvider = metadataProvider
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata(for: event)
        if let error = event.error {
            merged["error.message"] = "\(error)"
            merged["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        var line = Self.timestamp() + " \(event.level)" + (label.isEmpty ? "" : " ") + label + ":"
        if !merged.isEmpty {
            line += " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        }
        line += " [\(event.source)] \(event.message)\n"
        write(line)
    }

    /// Now, local time with its UTC offset (`2026-11-27T11:40:00+0000`), as `StreamLogHandler` writes it.
    static func timestamp() -> String {
        var now = time(nil)
        var parts = tm()
        guard localtime_r(&now, &parts) != nil else { return "<unknown>" }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &parts)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
