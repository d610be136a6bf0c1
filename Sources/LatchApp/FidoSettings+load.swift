import Foundation
import LatchAttestation
import LatchCore
import Logging

extension FidoSettings {
    /// The deployment's FIDO settings with the attestation trust it reads from files: `fido.trustAnchors` (a folder of
    /// `<aaguid>.pem`, `default.pem` for models without their own) and `fido.metadataBlob` (an MDS3 BLOB, verified
    /// offline against `fido.metadataRoots` at `now`). A BLOB past its `nextUpdate` is used, with a warning.
    static func load(_ configuration: LatchConfiguration, now: Date, logger: Logger) throws -> FidoSettings {
        var settings = configuration.fidoSettings
        if Self.isIPAddress(settings.rpID) {
            // W3C Web Authentication Level 3 §5.1.3 and §5.1.4: a caller whose effective domain is not a valid domain
            // (an IP address is not) gets a SecurityError, so browsers refuse every passkey ceremony here.
            logger.warning(
                "the WebAuthn relying party id is an IP address: browsers refuse passkeys for it; give the issuer a host name, or set fido.rpId",
                metadata: ["rpId": "\(settings.rpID)"])
        }
        var metadata = FidoMetadata()
        if let folder = configuration.fidoTrustAnchorsFolder {
            do {
                metadata = try FidoMetadata.folder(folder)
            } catch {
                throw ConfigurationError(key: "fido.trustAnchors", problem: error.detail)
            }
            let defaults = (folder as NSString).appendingPathComponent("default.pem")
            if FileManager.default.fileExists(atPath: defaults) {
                do {
                    settings.attestationAnchors = try TrustAnchors(pem: String(contentsOfFile: defaults, encoding: .utf8))
                } catch {
                    throw ConfigurationError(key: "fido.trustAnchors", problem: "default.pem: \(error)")
                }
            }
            logger.info("fido.trustAnchors read", metadata: ["models": "\(metadata.entries.count)", "default": "\(!settings.attestationAnchors.roots.isEmpty)"])
        }
        if let file = configuration.fidoMetadataBlobFile {
            let roots: TrustAnchors
            do {
                roots = try TrustAnchors(
                    pem: configuration.fidoMetadataRootsFile.map { try String(contentsOfFile: $0, encoding: .utf8) } ?? KnownRoots.fidoMetadataService)
            } catch {
                throw ConfigurationError(key: "fido.metadataRoots", problem: "cannot read PEM certificates: \(error)")
            }
            let blob: FidoMetadata
            do {
                let attributes = try FileManager.default.attributesOfItem(atPath: file)
                guard let size = attributes[.size] as? Int, size <= FidoMetadata.maximumBlobBytes else {
                    throw ConfigurationError(key: "fido.metadataBlob", problem: "\(file) is larger than \(FidoMetadata.maximumBlobBytes) bytes")
                }
                var trace = AttestationTrace()
                blob = try FidoMetadata.blob(try String(contentsOfFile: file, encoding: .utf8), roots: roots, at: now, trace: &trace)
            } catch let error as ConfigurationError {
                throw error
            } catch let error as AttestationFailure {
                throw ConfigurationError(key: "fido.metadataBlob", problem: "\(error.step): \(error.detail)")
            } catch {
                throw ConfigurationError(key: "fido.metadataBlob", problem: "cannot read \(file): \(error)")
            }
            if let next = blob.nextUpdate, let date = ISO8601DateFormatter.dateOnly.date(from: next), date < now {
                logger.warning("fido.metadataBlob is past its nextUpdate; download a fresh BLOB", metadata: ["nextUpdate": "\(next)"])
            }
            logger.info(
                "fido.metadataBlob verified",
                metadata: ["serial": "\(blob.serial.map(String.init) ?? "?")", "models": "\(blob.entries.count)", "nextUpdate": "\(blob.nextUpdate ?? "?")"])
            metadata = metadata.merging(blob)
        }
        settings.metadata = metadata
        return settings
    }
}

extension FidoSettings {
    /// Whether `host` is an IPv4 address in dotted-decimal form or an IPv6 address (bracketed or not): never a
    /// domain name, since a domain name's last label is not all digits and none has a colon.
    static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count == 4 && labels.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }
    }
}

extension ISO8601DateFormatter {
    /// `YYYY-MM-DD`.
    static var dateOnly: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate]
        return formatter
    }
}
