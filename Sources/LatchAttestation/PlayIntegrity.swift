import Crypto
import Foundation
import LatchJOSE
import LatchModel

/// Google Play Integrity verdicts, decrypted and verified locally with the app's keys from the Play Console: a
/// compact JWE (`A256KW` + `A256GCM`) around a compact JWS (`ES256`) whose payload is the verdict (Android
/// developers, "Decrypt and verify the integrity verdict" — the locally managed keys option).
public enum PlayIntegrity {
    /// The device verdicts, weakest first: each stronger one implies the weaker ones.
    public enum DeviceLevel: Int, Sendable, Comparable, CaseIterable {
        case basic, device, strong

        public var label: String {
            switch self {
            case .basic: "MEETS_BASIC_INTEGRITY"
            case .device: "MEETS_DEVICE_INTEGRITY"
            case .strong: "MEETS_STRONG_INTEGRITY"
            }
        }

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// What a deployment requires of a verdict.
    public struct Policy: Sendable {
        /// How old a verdict (`requestDetails.timestampMillis`) may be, seconds.
        public var freshness: Int64 = 300
        /// Whether the app must be `PLAY_RECOGNIZED`.
        public var requirePlayRecognized = true
        /// The least device verdict.
        public var minimumDeviceLevel: DeviceLevel = .device
        /// Whether `accountDetails.appLicensingVerdict` must be `LICENSED`.
        public var requireLicensed = false

        public init(freshness: Int64 = 300, requirePlayRecognized: Bool = true, minimumDeviceLevel: DeviceLevel = .device, requireLicensed: Bool = false) {
            self.freshness = freshness
            self.requirePlayRecognized = requirePlayRecognized
            self.minimumDeviceLevel = minimumDeviceLevel
            self.requireLicensed = requireLicensed
        }
    }

    /// An app's Play Integrity keys and its registered signing certificates.
    public struct App: Sendable {
        public var packageName: String
        public var decryptionKey: SymmetricKey
        public var verificationKey: P256.Signing.PublicKey
        /// SHA-256 digests of the registered signing certificates.
        public var certificateDigests: Set<[UInt8]>

        public init(packageName: String, decryptionKey: SymmetricKey, verificationKey: P256.Signing.PublicKey, certificateDigests: Set<[UInt8]>) {
            self.packageName = packageName
            self.decryptionKey = decryptionKey
            self.verificationKey = verificationKey
            self.certificateDigests = certificateDigests
        }
    }

    /// What a verified verdict establishes.
    public struct Verdict: Sendable {
        public var deviceLevel: DeviceLevel
        public var timestamp: Int64
        public var payload: [String: JSONValue]
    }

    /// Verifies `token` for `app`: decryption, signature, then the checks in Google's order — request details
    /// first (package, request hash = `requestHash`, freshness at `now`), the app, the device, the licence.
    public static func verify(
        _ token: String, requestHash: String, app: App, policy: Policy, now: Date, trace: inout AttestationTrace
    ) throws(AttestationFailure) -> Verdict {
        // Step 1. Decrypt.
        let inner: [UInt8]
        do {
            inner = try JWECompact.decrypt(token, keyEncryptionKey: app.decryptionKey)
        } catch {
            let code: ErrorCode = [.keyUnwrapFailed, .decryptionFailed].contains(error.reason) ? .attestationUntrusted : .attestationMalformed
            throw trace.failed("1 decrypt", code, "\(error.reason.rawValue): \(error.detail)")
        }
        trace.passed("1 decrypt", "A256KW + A256GCM with the app's decryption key")
        // Step 2. Verify the signature.
        let payload: [String: JSONValue]
        do {
            let parsed = try ParsedJWS(String(decoding: inner, as: UTF8.self), maximumLength: JWECompact.maximumInputLength)
            guard parsed.algorithmName == "ES256" else {
                throw trace.failed("2 signature", .attestationMalformed, "the verdict is signed with \(parsed.algorithmName.prefix(16)), not ES256")
            }
            payload = try parsed.verify(with: PublicKey(p256: app.verificationKey)).claims
        } catch let failure as AttestationFailure {
            throw failure
        } catch let error as JOSEError {
            let code: ErrorCode = error.reason == .badSignature ? .attestationUntrusted : .attestationMalformed
            throw trace.failed("2 signature", code, error.detail)
        } catch {
            throw trace.failed("2 signature", .attestationMalformed, "\(error)")
        }
        trace.passed("2 signature", "ES256 with the app's verification key")
        // Step 3. Request details: the package, the request hash, the time.
        guard case .object(let request)? = payload["requestDetails"], let packageName = request["requestPackageName"]?.stringValue,
            let timestamp = Self.millis(request["timestampMillis"])
        else { throw trace.failed("3 request details", .attestationMalformed, "requestDetails lacks requestPackageName or timestampMillis") }
        guard packageName == app.packageName else {
            throw trace.failed("3 request details", .attestationAppMismatch, "the verdict was requested by \(packageName.prefix(100)), not \(app.packageName)")
        }
        guard let presented = request["requestHash"]?.stringValue ?? request["nonce"]?.stringValue,
            Array(presented.utf8) == Array(requestHash.utf8)
        else { throw trace.failed("3 request details", .attestationChallengeMismatch, "the request hash is not the one this registration binds") }
        let nowMillis = Int64(now.timeIntervalSince1970 * 1000)
        guard timestamp <= nowMillis + 60_000, nowMillis - timestamp <= policy.freshness * 1000 else {
            throw trace.failed(
                "3 request details", .integrityTokenStale, "the verdict is from \(timestamp) ms, outside \(policy.freshness) s of now (\(nowMillis) ms)")
        }
        trace.passed("3 request details", "\(packageName), request hash matches, \((nowMillis - timestamp) / 1000) s old")
        // Step 4. The app.
        guard case .object(let appIntegrity)? = payload["appIntegrity"], let recognition = appIntegrity["appRecognitionVerdict"]?.stringValue else {
            throw trace.failed("4 app integrity", .attestationMalformed, "appIntegrity.appRecognitionVerdict is missing")
        }
        if policy.requirePlayRecognized, recognition != "PLAY_RECOGNIZED" {
            throw trace.failed("4 app integrity", .integrityAppUnrecognized, "the app's verdict is \(recognition.prefix(40)), not PLAY_RECOGNIZED")
        }
        // UNEVALUATED verdicts carry no app details; every other one names the package and its certificates.
        if recognition != "UNEVALUATED", appIntegrity["packageName"]?.stringValue != app.packageName {
            throw trace.failed("4 app integrity", .attestationAppMismatch, "appIntegrity.packageName is not \(app.packageName)")
        }
        if recognition != "UNEVALUATED" {
            guard case .array(let digests)? = appIntegrity["certificateSha256Digest"], !digests.isEmpty,
                digests.allSatisfy({ $0.stringValue.flatMap(Base64URL.decode).map { app.certificateDigests.contains(Array($0)) } ?? false })
            else {
                throw trace.failed("4 app integrity", .integrityCertificateMismatch, "the app is signed with a certificate that is not registered for it")
            }
        }
        trace.passed("4 app integrity", recognition)
        // Step 5. The device.
        guard case .object(let device)? = payload["deviceIntegrity"] else {
            throw trace.failed("5 device integrity", .attestationMalformed, "deviceIntegrity is missing")
        }
        let verdicts = Set((device["deviceRecognitionVerdict"]?.arrayValue ?? []).compactMap(\.stringValue))
        let level = DeviceLevel.allCases.last(where: { verdicts.contains($0.label) })
        guard let level, level >= policy.minimumDeviceLevel else {
            throw trace.failed(
                "5 device integrity", .integrityDeviceVerdict,
                "the device verdict (\(verdicts.sorted().joined(separator: ", ").prefix(120))) is below \(policy.minimumDeviceLevel.label)")
        }
        trace.passed("5 device integrity", level.label)
        // Step 6. The licence.
        if policy.requireLicensed {
            guard case .object(let account)? = payload["accountDetails"], account["appLicensingVerdict"]?.stringValue == "LICENSED" else {
                throw trace.failed("6 licensing", .integrityUnlicensed, "accountDetails.appLicensingVerdict is not LICENSED")
            }
            trace.passed("6 licensing", "LICENSED")
        } else {
            trace.passed("6 licensing", "not required")
        }
        return Verdict(deviceLevel: level, timestamp: timestamp, payload: payload)
    }

    /// `timestampMillis`: Google writes it as a decimal string; a JSON integer is read too.
    static func millis(_ value: JSONValue?) -> Int64? {
        switch value {
        case .string(let text)?: Int64(text)
        case .int(let number)?: number
        default: nil
        }
    }

    /// The request hash of `binding` mode: base64url (no padding) of SHA-256(UTF-8 challenge ‖ SPKI DER of the key).
    public static func bindingRequestHash(challenge: String, publicKeySPKI: [UInt8]) -> String {
        Base64URL.encode(Data(SHA256.hash(data: Array(challenge.utf8) + publicKeySPKI)))
    }
}
