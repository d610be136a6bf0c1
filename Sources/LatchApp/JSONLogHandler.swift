import Foundation
import LatchModel
import Logging

/// Structured logs (`log.format=json`): one JSON object per line — `time` (RFC 3339, UTC, milliseconds), `level`,
/// `label`, `message`, `source`, and every metadata value (the request id Hummingbird attaches as `hb.request.id`
/// included) — for log pipelines that parse lines instead of reading them.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    let label: String
    let write: @Sendable (String) -> Void

    /// `write` receives each line with its line break; the default writes to standard error, one write per line.
    public init(label: String, write: @escaping @Sendable (String) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata(for: event)
        var writer = JSONWriter(reservingCapacity: 256)
        writer.beginObject()
        writer.member("time", Self.timestamp(Date()))
        writer.member("level", event.level.rawValue)
        writer.member("label", label)
        writer.member("message", event.message.description)
        writer.member("source", event.source)
        for (key, value) in merged.sorted(by: { $0.key < $1.key }) where !["time", "level", "label", "message", "source"].contains(key) {
            writer.key(key)
            writer.write(Self.json(value))
        }
        writer.endObject()
        write(String(decoding: writer.bytes, as: UTF8.self) + "\n")
    }

    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let string): .string(string)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let dictionary): .object(dictionary.mapValues(json))
        }
    }

    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let seconds = milliseconds / 1000
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday), Int(parts.tm_hour),
            Int(parts.tm_min), Int(parts.tm_sec), Int(milliseconds % 1000))
    }

    /// Writes a line to standard error in one `write(2)`, so lines of concurrent loggers never interleave.
    public static let standardError: @Sendable (String) -> Void = { line in
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
