import Crypto
import CryptoExtras
import Foundation
import LatchJOSE
import LatchModel
import SwiftASN1
import X509

/// Android Keystore key attestation: a certificate chain whose leaf certifies a Keystore key and carries the
/// KeyDescription extension (``AndroidKeyDescription``), verified offline to Google's hardware attestation roots
/// (Android "Verify hardware-backed key pairs with key attestation").
public enum AndroidKeyAttestation {
    /// What a deployment requires of an attested key.
    public struct Policy: Sendable {
        /// The least `attestationSecurityLevel` accepted (TEE by default; StrongBox is higher, software lower).
        public var minimumSecurityLevel: AndroidKeyDescription.SecurityLevel = .trustedEnvironment
        /// Whether the device must have booted a verified (Google- or vendor-signed) system with a locked bootloader.
        public var requireVerifiedBoot = true
        /// Serial numbers (lowercase hex, no leading zeros) on Google's attestation status list: revoked or suspended.
        public var revokedSerials: Set<String> = []

        public init(minimumSecurityLevel: AndroidKeyDescription.SecurityLevel = .trustedEnvironment, requireVerifiedBoot: Bool = true,
                    revokedSerials: Set<String> = []) {
            self.minimumSecurityLevel = minimumSecurityLevel
            self.requireVerifiedBoot = requireVerifiedBoot
            self.revokedSerials = revokedSerials
        }
    }

    /// What a verified chain establishes.
    public struct VerifiedKey: Sendable {
        /// The attested key (P-256 for ES256 or RSA for RS256).
        public var publicKey: PublicKey
        /// The package name that matched (nil when the caller named no apps).
        public var packageName: String?
        public var securityLevel: AndroidKeyDescription.SecurityLevel
        public var description: AndroidKeyDescription
    }

    /// Chains carry intermediates some devices issue without a CA flag; they are accepted below a trusted root.
    public static let chainRules = CertificateChainValidator.Rules(maximumLength: 8, requireCAIssuers: false)
    /// Longest accepted chain in bytes, all certificates together.
    public static let maximumChainBytes = 32 * 1024

    /// Verifies `chain` (DER, leaf first) for `challenge` at `date`. `apps` maps the package names Latch knows to
    /// the SHA-256 digests of their registered signing certificates; nil skips the application check (the offline
    /// CLI without `--package`).
    public static func verify(
        chain der: [[UInt8]], challenge: [UInt8], apps: [String: Set<[UInt8]>]?, policy: Policy, chains: CertificateChainValidator,
        at date: Date, trace: inout AttestationTrace
    ) throws(AttestationFailure) -> VerifiedKey {
        let step0 = "certificates"
        guard der.reduce(0, { $0 + $1.count }) <= maximumChainBytes else {
            throw trace.failed(step0, .attestationMalformed, "the chain is longer than \(maximumChainBytes) bytes")
        }
        let parsed: CertificateChainValidator.Chain
        do {
            parsed = try CertificateChainValidator.Chain(der: der, step: step0, nullLeafSignatureParameters: true)
        } catch {
            throw trace.failed(step0, error.code, error.detail)
        }
        trace.passed(step0, "\(der.count) certificates")
        // Step 1. The chain ends at a Google hardware attestation root (by key) and is valid at `date`.
        try chains.validate(parsed, at: date, step: "1 certificate chain", trace: &trace)
        // Step 2. No certificate is on the attestation status list.
        let serials = parsed.certificates.map { serialHex($0.serialNumber) }
        if let revoked = serials.first(where: policy.revokedSerials.contains) {
            throw trace.failed("2 revocation", .attestationRevoked, "certificate serial \(revoked) is on the attestation status list")
        }
        trace.passed("2 revocation", "no serial of the chain is on the status list (\(policy.revokedSerials.count) entries)")
        // Step 3. The leaf's KeyDescription.
        guard let ext = parsed.leaf.extensions[oid: AndroidKeyDescription.extensionObjectIdentifier] else {
            throw trace.failed("3 key description", .attestationMalformed, "the leaf has no key attestation extension (1.3.6.1.4.1.11129.2.1.17)")
        }
        let description: AndroidKeyDescription
        do {
            description = try AndroidKeyDescription(extensionValue: Array(ext.value))
        } catch {
            throw trace.failed("3 key description", .attestationMalformed, error.description)
        }
        guard description.softwareEnforced.tagsInAscendingOrder, description.hardwareEnforced.tagsInAscendingOrder else {
            throw trace.failed("3 key description", .attestationMalformed, "an authorization list's tags are not in ascending order (not DER)")
        }
        trace.passed("3 key description", "attestation version \(description.attestationVersion)")
        // Step 4. It binds the challenge.
        try trace.require(
            "4 challenge", description.attestationChallenge == challenge, else: .attestationChallengeMismatch,
            "the attestation challenge is not the registration challenge", passed: "\(challenge.count) bytes match")
        // Step 5. Security level.
        try trace.require(
            "5 security level", description.attestationSecurityLevel.rawValue >= policy.minimumSecurityLevel.rawValue,
            else: .attestationPolicyFailed,
            "the key is attested at \(name(description.attestationSecurityLevel)), the policy needs \(name(policy.minimumSecurityLevel))",
            passed: name(description.attestationSecurityLevel))
        // Step 6. Verified boot (the root of trust is enforced by the secure hardware).
        let rootOfTrust = description.hardwareEnforced.rootOfTrust
        if policy.requireVerifiedBoot {
            guard let rootOfTrust, rootOfTrust.verifiedBootState == .verified, rootOfTrust.deviceLocked else {
                let state = rootOfTrust.map { "\($0.verifiedBootState), locked \($0.deviceLocked)" } ?? "no hardware root of trust"
                throw trace.failed("6 verified boot", .attestationPolicyFailed, "the device did not boot verified and locked (\(state))")
            }
            trace.passed("6 verified boot", "verified, locked")
        } else {
            trace.passed("6 verified boot", "not required (\(rootOfTrust.map { "\($0.verifiedBootState)" } ?? "none"))")
        }
        // Step 7. The app: a registered package signed only with registered certificates.
        var packageName: String?
        if let apps {
            guard let application = description.softwareEnforced.attestationApplicationId ?? description.hardwareEnforced.attestationApplicationId
            else { throw trace.failed("7 application", .attestationAppMismatch, "the attestation names no application") }
            let names = application.packageInfos.compactMap(\.packageNameString)
            guard let name = names.first(where: { apps[$0] != nil }), let digests = apps[name] else {
                throw trace.failed("7 application", .attestationAppMismatch, "no registered app has package \(names.joined(separator: ", ").prefix(200))")
            }
            guard !application.signatureDigests.isEmpty, application.signatureDigests.allSatisfy(digests.contains) else {
                throw trace.failed(
                    "7 application", .attestationAppMismatch, "\(name) is signed with a certificate that is not registered for it")
            }
            packageName = name
            trace.passed("7 application", "\(name), \(application.signatureDigests.count) registered signing certificate(s)")
        } else {
            trace.passed("7 application", "not checked (no package given)")
        }
        // Step 8. The attested key is one Latch signs in with.
        let key: PublicKey
        if let p256 = P256.Signing.PublicKey(parsed.leaf.publicKey) {
            key = PublicKey(p256: p256)
        } else if let rsa = _RSA.Signing.PublicKey(parsed.leaf.publicKey), rsa.keySizeInBits >= 2048, rsa.keySizeInBits <= PublicKey.maximumRSABits {
            key = PublicKey(rsa: rsa)
        } else {
            throw trace.failed("8 key", .attestationKeyMismatch, "the attested key is neither EC P-256 nor RSA of 2048 bits or more")
        }
        trace.passed("8 key", key.algorithm.rawValue)
        return VerifiedKey(publicKey: key, packageName: packageName, securityLevel: description.attestationSecurityLevel, description: description)
    }

    /// A certificate serial as Google's status list writes it: lowercase hex without leading zeros.
    public static func serialHex(_ serial: Certificate.SerialNumber) -> String {
        let hex = Hex.encode(serial.bytes)
        let trimmed = hex.drop(while: { $0 == "0" })
        return trimmed.isEmpty ? "0" : String(trimmed)
    }

    static func name(_ level: AndroidKeyDescription.SecurityLevel) -> String {
        switch level {
        case .software: "software"
        case .trustedEnvironment: "tee"
        case .strongBox: "strongbox"
        }
    }

    /// The serials Google's attestation status list (`https://android.googleapis.com/attestation/status`, JSON
    /// `{"entries": {"<serial hex>": {"status": "REVOKED" | "SUSPENDED", ...}}}`) marks.
    public static func revokedSerials(statusJSON: [UInt8]) throws(AttestationFailure) -> Set<String> {
        guard statusJSON.count <= 16 * 1024 * 1024, case .object(let root)? = try? JSONValue.parse(Data(statusJSON)),
            case .object(let entries)? = root["entries"]
        else { throw AttestationFailure(.attestationMalformed, step: "status list", "not a JSON object with an entries object") }
        var serials: Set<String> = []
        for (serial, entry) in entries {
            guard case .object(let fields) = entry, let status = fields["status"]?.stringValue else {
                throw AttestationFailure(.attestationMalformed, step: "status list", "entry \(serial.prefix(40)) has no status")
            }
            if status == "REVOKED" || status == "SUSPENDED" { serials.insert(serial.lowercased().drop(while: { $0 == "0" }).description) }
        }
        return serials
    }
}
