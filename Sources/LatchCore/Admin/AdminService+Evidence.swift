import Crypto
import Foundation
import LatchAttestation
import LatchModel
import Logging

/// Apps' device-evidence settings (`PATCH /admin/v1/clients/{id}`) and their Android signing certificates, owned
/// by the admin identity that adds them.
extension AdminService {
    enum EvidenceRefusal: Error { case missing, taken }

    /// Applies `patch` to client `id`: each platform present replaces its settings (secrets sealed, kept when
    /// omitted), an empty `appIds` / `packageNames` removes the platform.
    public func patchClient(id: String, _ patch: AdminClientPatch) async throws -> AdminClient {
        let federationPatch = patch.redirectUris != nil || patch.postLogoutRedirectUris != nil || patch.upstreamIdps != nil
        guard patch.ios != nil || patch.android != nil || patch.dpop != nil || patch.dpopAttested != nil || federationPatch
            || patch.idTokenSignedResponseAlg != nil
        else {
            throw LatchError.invalidInput(
                "ios, android, dpop, dpopAttested, redirectUris, postLogoutRedirectUris, upstreamIdps or idTokenSignedResponseAlg is required")
        }
        let all = try await store.clients()
        guard var client = all.first(where: { $0.id == id }) else { throw LatchError.notFound("no such client") }
        let before = client.evidence
        // An App ID or package belongs to one client: attestation finds the app by it.
        for other in all where other.id != id {
            if let taken = patch.ios?.appIds.first(where: { other.evidence.ios?.appIds.contains($0) == true }) {
                throw LatchError(.conflict, "the App ID \(taken) is registered on client \(other.id)")
            }
            if let taken = patch.android?.packageNames.first(where: { other.evidence.android?.packageNames.contains($0) == true }) {
                throw LatchError(.conflict, "the package \(taken) is registered on client \(other.id)")
            }
        }
        if let ios = patch.ios { client.evidence.ios = try checkedIOS(ios, client: id, stored: client.evidence.ios) }
        if let android = patch.android { client.evidence.android = try checkedAndroid(android, client: id, stored: client.evidence.android) }
        if patch.dpop != nil || patch.dpopAttested != nil {
            var policy = client.evidence.dpop ?? .default
            if let mode = patch.dpop {
                guard let parsed = DPoPPolicy.Mode(rawValue: mode) else { throw LatchError.invalidInput("dpop must be off, allowed or required") }
                policy.mode = parsed
            }
            if let attested = patch.dpopAttested { policy.attested = attested }
            guard !(policy.attested && policy.mode == .off) else {
                throw LatchError.invalidInput("dpopAttested needs dpop allowed or required")
            }
            client.evidence.dpop = policy
        }
        if federationPatch { client.evidence.federation = try await checkedFederation(patch, stored: client.evidence.federation) }
        if let algorithm = patch.idTokenSignedResponseAlg { client.evidence.idTokenSignedResponseAlg = try await checkedIDTokenAlgorithm(algorithm) }
        let evidence = client.evidence
        let event = change("clients", "update", "client \(id): " + Self.changes(from: before, to: evidence))
        do {
            try await store.write {
                $0.updateClientEvidence(id: id, evidence: evidence, ifMissing: EvidenceRefusal.missing)
                $0.record(event)
            }
        } catch EvidenceRefusal.missing {
            throw LatchError.notFound("no such client")
        }
        try await clients.reload()
        try await evidenceApps?.reload()
        logger.info("client evidence changed", metadata: ["client": "\(id)"])
        return Self.adminClient(client)
    }

    func checkedIOS(_ ios: AdminIOSEvidence, client: String, stored: ClientEvidence.IOS?) throws -> ClientEvidence.IOS? {
        guard !ios.appIds.isEmpty else {
            guard ios.deviceCheck == nil else { throw LatchError.invalidInput("ios.deviceCheck needs at least one ios.appIds entry") }
            return nil
        }
        guard ios.appIds.count <= 32, Set(ios.appIds).count == ios.appIds.count else {
            throw LatchError.invalidInput("ios.appIds must be 1–32 distinct App IDs")
        }
        for appID in ios.appIds where !EvidenceRules.isAppID(appID) {
            throw LatchError.invalidInput("ios.appIds: \(appID.prefix(64)) is not TEAMID.bundleId (a 10-character team id, a dot, a bundle id)")
        }
        let environment = ios.appAttestEnvironment ?? stored?.appAttestEnvironment ?? "production"
        guard environment == "production" || environment == "development" else {
            throw LatchError.invalidInput("ios.appAttestEnvironment must be production or development")
        }
        var deviceCheck = stored?.deviceCheck
        if let given = ios.deviceCheck {
            guard EvidenceRules.isAppleIdentifier(given.teamId), EvidenceRules.isAppleIdentifier(given.keyId) else {
                throw LatchError.invalidInput("ios.deviceCheck.teamId and keyId are 10 letters or digits")
            }
            guard let pem = given.privateKey else { throw LatchError.invalidInput("ios.deviceCheck.privateKey (the .p8 PEM) is required") }
            guard pem.utf8.count <= 4096, (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil else {
                throw LatchError(.invalidPublicKey, "ios.deviceCheck.privateKey is not a P-256 private key in PEM (the .p8 file)")
            }
            deviceCheck = ClientEvidence.DeviceCheck(
                teamId: given.teamId, keyId: given.keyId, sealedPrivateKey: try seal(Data(pem.utf8), client: client, purpose: "deviceCheck"))
        }
        return ClientEvidence.IOS(appIds: ios.appIds, appAttestEnvironment: environment, deviceCheck: deviceCheck)
    }

    func checkedAndroid(_ android: AdminAndroidEvidence, client: String, stored: ClientEvidence.Android?) throws -> ClientEvidence.Android? {
        guard !android.packageNames.isEmpty else {
            guard android.playIntegrity == nil else { throw LatchError.invalidInput("android.playIntegrity needs at least one android.packageNames entry") }
            return nil
        }
        guard android.packageNames.count <= 32, Set(android.packageNames).count == android.packageNames.count else {
            throw LatchError.invalidInput("android.packageNames must be 1–32 distinct package names")
        }
        for name in android.packageNames where !EvidenceRules.isPackageName(name) {
            throw LatchError.invalidInput("android.packageNames: \(name.prefix(64)) is not a Java package name like com.example.app")
        }
        let mode = android.requestHashMode ?? stored?.requestHashMode ?? "binding"
        guard mode == "binding" || mode == "deviceId" else { throw LatchError.invalidInput("android.requestHashMode must be binding or deviceId") }
        var playIntegrity = stored?.playIntegrity
        if let given = android.playIntegrity {
            guard let decryption = given.decryptionKey else {
                throw LatchError.invalidInput("android.playIntegrity.decryptionKey (base64 of the 32-byte AES key) is required")
            }
            guard let key = Data(base64Encoded: decryption), key.count == 32 else {
                throw LatchError.invalidInput("android.playIntegrity.decryptionKey must be base64 of 32 bytes (AES-256)")
            }
            guard let spki = Data(base64Encoded: given.verificationKey), (try? P256.Signing.PublicKey(derRepresentation: spki)) != nil else {
                throw LatchError(.invalidPublicKey, "android.playIntegrity.verificationKey must be base64 of an EC P-256 SPKI (DER)")
            }
            playIntegrity = ClientEvidence.PlayIntegrity(
                sealedDecryptionKey: try seal(key, client: client, purpose: "playIntegrity"), verificationKey: spki.base64EncodedString())
        }
        return ClientEvidence.Android(packageNames: android.packageNames, playIntegrity: playIntegrity, requestHashMode: mode)
    }

    func seal(_ secret: Data, client: String, purpose: String) throws -> String {
        guard let sealer else { throw LatchError(.serverError, "this deployment cannot seal secrets") }
        return try sealer.seal(secret, keyID: ClientEvidence.sealingContext(client: client, purpose: purpose)).base64EncodedString()
    }

    // MARK: Signing certificates

    /// Adds a signing-certificate fingerprint to client `clientID`, owned by admin account `owner`.
    public func addSigningCertificate(clientID: String, _ request: AdminSigningCertificateRequest, owner: String) async throws -> AdminSigningCertificate {
        guard let sha256 = EvidenceRules.fingerprint(request.sha256) else {
            throw LatchError.invalidInput("sha256 must be 64 hex digits (colons allowed), the SHA-256 of the signing certificate")
        }
        guard try await store.clients().contains(where: { $0.id == clientID }) else { throw LatchError.notFound("no such client") }
        let certificate = SigningCertificate(clientID: clientID, sha256: sha256, owner: owner, createdAt: clock.seconds())
        do {
            let event = change("signing_certificates", "create", "client \(clientID) sha256 \(sha256) owner \(owner)")
            try await store.write {
                $0.insertSigningCertificate(certificate, ifTaken: EvidenceRefusal.taken)
                $0.record(event)
            }
        } catch EvidenceRefusal.taken {
            throw LatchError(.conflict, "this client has this signing certificate already (or was just deleted)")
        }
        try await evidenceApps?.reload()
        logger.info("signing certificate added", metadata: ["client": "\(clientID)", "owner": "\(owner)"])
        return Self.adminSigningCertificate(certificate)
    }

    public func signingCertificates(clientID: String) async throws -> AdminSigningCertificateList {
        guard try await store.clients().contains(where: { $0.id == clientID }) else { throw LatchError.notFound("no such client") }
        return AdminSigningCertificateList(
            signingCertificates: try await store.signingCertificates().filter { $0.clientID == clientID }.map(Self.adminSigningCertificate))
    }

    public func deleteSigningCertificate(clientID: String, sha256: String) async throws {
        guard let sha256 = EvidenceRules.fingerprint(sha256) else { throw LatchError.notFound("no such signing certificate") }
        do {
            let event = change("signing_certificates", "delete", "client \(clientID) sha256 \(sha256)")
            try await store.write {
                $0.deleteSigningCertificate(clientID: clientID, sha256: sha256, ifMissing: EvidenceRefusal.missing)
                $0.record(event)
            }
        } catch EvidenceRefusal.missing {
            throw LatchError.notFound("no such signing certificate")
        }
        try await evidenceApps?.reload()
    }

    /// The settings of `evidence` an audit record may show (never a sealed secret: only whether one is set).
    static func summary(_ evidence: ClientEvidence) -> [(String, String)] {
        func list(_ values: [String]?) -> String { values.map { "[" + $0.joined(separator: " ") + "]" } ?? "-" }
        let dpop = evidence.dpop ?? .default
        return [
            ("ios.appIds", list(evidence.ios?.appIds)), ("ios.appAttestEnvironment", evidence.ios?.appAttestEnvironment ?? "-"),
            ("ios.deviceCheck", evidence.ios?.deviceCheck.map { "team \($0.teamId) key \($0.keyId)" } ?? "-"),
            ("android.packageNames", list(evidence.android?.packageNames)),
            ("android.playIntegrity", evidence.android?.playIntegrity == nil ? "-" : "keys set"),
            ("android.requestHashMode", evidence.android?.requestHashMode ?? "-"), ("dpop", dpop.mode.rawValue), ("dpopAttested", "\(dpop.attested)"),
            ("redirectUris", list(evidence.federation?.redirectUris)),
            ("postLogoutRedirectUris", list(evidence.federation?.postLogoutRedirectUris)),
            ("upstreamIdps", list(evidence.federation?.upstreamIdps)),
            ("idTokenSignedResponseAlg", evidence.idTokenSignedResponseAlg ?? "-"),
        ]
    }

    /// `field: before → after` for each setting that changed (a secret replaced with another shows as unchanged).
    static func changes(from before: ClientEvidence, to after: ClientEvidence) -> String {
        let changed = zip(summary(before), summary(after)).filter { $0.0.1 != $0.1.1 }.map { "\($0.0.0): \($0.0.1) → \($0.1.1)" }
        return changed.isEmpty ? "no change" : changed.joined(separator: "; ")
    }

    static func adminSigningCertificate(_ certificate: SigningCertificate) -> AdminSigningCertificate {
        AdminSigningCertificate(clientId: certificate.clientID, sha256: certificate.sha256, owner: certificate.owner, createdAt: certificate.createdAt)
    }
}

/// The shapes evidence settings must have.
public enum EvidenceRules {
    /// `TEAMID.bundleId`: a 10-character team id, a dot, a reverse-DNS bundle id.
    public static func isAppID(_ value: String) -> Bool {
        let parts = value.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, isAppleIdentifier(parts[0]), (1...155).contains(parts[1].utf8.count) else { return false }
        return parts[1].utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") }
    }

    /// 10 uppercase letters or digits (team and key ids).
    public static func isAppleIdentifier(_ value: some StringProtocol) -> Bool {
        value.utf8.count == 10 && value.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) }
    }

    /// A Java package name with at least two segments: letters, digits and underscores, each segment starting with a
    /// letter.
    public static func isPackageName(_ value: String) -> Bool {
        let segments = value.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count >= 2, value.utf8.count <= 255 else { return false }
        return segments.allSatisfy { segment in
            guard let first = segment.utf8.first, isLetter(first) else { return false }
            return segment.utf8.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "_") }
        }
    }

    /// The lowercase hex of a SHA-256 fingerprint written as 64 hex digits, with or without colons; nil otherwise.
    public static func fingerprint(_ value: String) -> String? {
        let digits = value.replacingOccurrences(of: ":", with: "")
        guard digits.utf8.count == 64, let bytes = Hex.decode(digits) else { return nil }
        return Hex.encode(bytes)
    }

    static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }
    static func isAlphanumeric(_ byte: UInt8) -> Bool { isLetter(byte) || (byte >= 0x30 && byte <= 0x39) }
}

extension ClientEvidence {
    /// The associated data a client's sealed secret is bound to, so it cannot be moved to another client or use.
    public static func sealingContext(client: String, purpose: String) -> String { "client-evidence|\(client)|\(purpose)" }
}
