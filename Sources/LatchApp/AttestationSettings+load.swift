import Foundation
import LatchAttestation
import LatchCore
import Logging

extension AttestationSettings {
    /// The deployment's attestation settings: built-in or configured roots, plus the test root while test keys are on.
    static func load(_ configuration: LatchConfiguration, logger: Logger) throws -> AttestationSettings {
        func anchors(_ file: String?, builtIn: String, key: String) throws -> TrustAnchors {
            guard let file else { return try TrustAnchors(pem: builtIn) }
            do {
                return try TrustAnchors(pem: String(contentsOfFile: file, encoding: .utf8))
            } catch {
                throw ConfigurationError(key: key, problem: "cannot read PEM certificates from \(file): \(error)")
            }
        }
        var appAttest = try anchors(configuration.appAttestRootsFile, builtIn: KnownRoots.appleAppAttestation, key: "attestation.appAttestRoots")
        var androidKey = try anchors(configuration.androidKeyRootsFile, builtIn: KnownRoots.googleHardwareAttestation, key: "attestation.androidKeyRoots")
        if let file = configuration.testAttestationRootFile {
            if configuration.registration.testKeysEnabled {
                let test = try anchors(file, builtIn: "", key: "attestation.testRoot")
                appAttest = appAttest.adding(test)
                androidKey = androidKey.adding(test)
                logger.warning("attestation.testRoot is trusted: test evidence registers devices (turn registration.testKeys off in production)")
            } else {
                logger.notice("attestation.testRoot is ignored: registration.testKeys is off")
            }
        }
        var settings = AttestationSettings(appAttestAnchors: appAttest, androidKeyAnchors: androidKey)
        settings.challengeLifetime = configuration.attestationChallengeLifetime
        settings.androidKeyPolicy.minimumSecurityLevel = switch configuration.androidMinSecurityLevel {
        case "software": .software
        case "strongbox": .strongBox
        default: .trustedEnvironment
        }
        settings.androidKeyPolicy.requireVerifiedBoot = configuration.androidRequireVerifiedBoot
        if let file = configuration.androidStatusListFile {
            do {
                settings.androidKeyPolicy.revokedSerials = try AndroidKeyAttestation.revokedSerials(
                    statusJSON: Array(try Data(contentsOf: URL(fileURLWithPath: file))))
            } catch {
                throw ConfigurationError(key: "attestation.androidStatusList", problem: "cannot read the status list \(file): \(error)")
            }
        }
        settings.playIntegrityPolicy.freshness = configuration.playIntegrityFreshness
        settings.playIntegrityPolicy.minimumDeviceLevel = switch configuration.playIntegrityDeviceVerdict {
        case "basic": .basic
        case "strong": .strong
        default: .device
        }
        settings.playIntegrityPolicy.requirePlayRecognized = configuration.playIntegrityRequireRecognized
        settings.playIntegrityPolicy.requireLicensed = configuration.playIntegrityRequireLicensed
        return settings
    }
}
