import Configuration
import Foundation
import LatchCore
import LatchModel

/// Watches a configuration being read: which source supplied each key, and which values could not be read as the
/// type the key needs (the reader would otherwise fall back to the default without a word).
final class ConfigurationAudit: AccessReporter {
    private struct Entry {
        var source: String?
        var unconvertible: ConfigType?
    }

    private let configFile: String?
    private let entries = Locked<[(key: String, entry: Entry)]>([])

    init(configFile: String?) { self.configFile = configFile }

    func report(_ event: AccessEvent) {
        let key = event.metadata.key.components.joined(separator: ".")
        var supplier: String?
        var failed = false
        for result in event.providerResults {
            switch result.result {
            case .success(let lookup) where lookup.value != nil:
                supplier = supplier ?? result.providerName
            case .failure:
                supplier = supplier ?? result.providerName
                failed = true
            default: break
            }
        }
        if event.conversionError != nil { failed = true }
        let entry = Entry(source: supplier.map { describe($0, key: key) }, unconvertible: failed ? event.metadata.valueType : nil)
        entries.withLock { $0.append((key, entry)) }
    }

    /// Where `key`'s value came from, in the words of the command line.
    func source(of key: String) -> String? {
        entries.withLock { entries in entries.last { $0.key == key && $0.entry.source != nil }?.entry.source }
    }

    /// The first value that could not be read as its type.
    func firstUnconvertible() -> ConfigurationError? {
        entries.withLock { entries in
            entries.first { $0.entry.unconvertible != nil }.map {
                ConfigurationError(key: $0.key, source: $0.entry.source, problem: "must be \(Self.typeName($0.entry.unconvertible!))")
            }
        }
    }

    /// The `latch serve` flag of each key that has one.
    static let flags = ["http.host": "--host", "http.port": "--port", "data.dir": "--data-dir", "issuer": "--issuer", "database.url": "--database"]

    private func describe(_ provider: String, key: String) -> String {
        if provider.contains("secret files") { return "file named by \(LatchConfiguration.secretFileEnvironmentName(key))" }
        if provider.contains("flags") { return "flag " + (Self.flags[key] ?? key) }
        if provider.contains("Environment") { return "environment variable \(Self.environmentName(key))" }
        if provider.contains("File") { return configFile.map { "file \($0)" } ?? "file" }
        return provider
    }

    /// `tokens.refreshGrace` → `LATCH_TOKENS_REFRESH_GRACE`, `attestation.deviceCheckURL` →
    /// `LATCH_ATTESTATION_DEVICE_CHECK_URL`: as swift-configuration's environment provider reads it (a word boundary
    /// only where a lower-case letter meets an upper-case one).
    static func environmentName(_ key: String) -> String {
        var name = "LATCH_"
        var previous: Character?
        for character in key {
            if character == "." {
                name += "_"
            } else {
                if character.isUppercase, previous?.isLowercase == true { name += "_" }
                name += character.uppercased()
            }
            previous = character
        }
        return name
    }

    private static func typeName(_ type: ConfigType) -> String {
        switch type {
        case .int: "a whole number"
        case .bool: "true or false"
        case .double: "a number"
        default: "a \(type)"
        }
    }
}
