import Crypto
import Foundation
import LatchAttestation
import LatchModel
import Logging

/// The registered apps' evidence settings, read from the clients (``ClientEvidence``) and cached briefly: every
/// attestation looks its app up here.
public final class EvidenceApps: Sendable {
    /// Everything the verifiers need, derived from the clients at one load.
    public struct Snapshot: Sendable {
        public var appAttest: [AppAttest.App] = []
        /// Android package name → the client whose settings name it.
        public var android: [String: (clientID: String, settings: ClientEvidence.Android)] = [:]
        /// Client id → signing-certificate SHA-256 fingerprints (raw bytes).
        public var signingCertificates: [String: Set<[UInt8]>] = [:]
        /// Package name → its client's signing-certificate digests (Android key attestation's app check).
        public var androidDigests: [String: Set<[UInt8]>] {
            android.mapValues { signingCertificates[$0.clientID] ?? [] }
        }
        /// Package name → its Play Integrity keys (opened) and signing-certificate digests.
        public var playIntegrity: [String: PlayIntegrity.App] = [:]
        /// The clients with DeviceCheck credentials (opened), by client id.
        public var deviceCheck: [(clientID: String, credentials: DeviceCheckCredentials)] = []
    }

    private let store: any ClientStore
    private let clock: LatchClock
    private let sealer: KeySealer?
    private let logger: Logger
    private let state = Locked<(snapshot: Snapshot, loadedAt: Int64?)>((Snapshot(), nil))
    /// Seconds a snapshot is used before it is read again (an admin change on this replica reloads at once).
    static let freshness: Int64 = 5

    /// `sealer` opens the apps' Play Integrity decryption keys.
    public init(store: any ClientStore, clock: LatchClock, sealer: KeySealer? = nil, logger: Logger = Logger(label: "latch.attestation")) {
        self.store = store
        self.clock = clock
        self.sealer = sealer
        self.logger = logger
    }

    /// The current snapshot, reloaded when older than ``freshness``.
    public func snapshot() async throws -> Snapshot {
        let now = clock.seconds()
        let (snapshot, loadedAt) = state.withLock { ($0.snapshot, $0.loadedAt) }
        if let loadedAt, now - loadedAt < Self.freshness { return snapshot }
        return try await reload()
    }

    @discardableResult
    public func reload() async throws -> Snapshot {
        let clients = try await store.clients()
        let certificates = try await store.signingCertificates()
        var snapshot = Snapshot()
        for client in clients {
            if let ios = client.evidence.ios, let environment = AppAttest.Environment(rawValue: ios.appAttestEnvironment) {
                snapshot.appAttest += ios.appIds.map { AppAttest.App(appID: $0, environment: environment) }
            }
            if let android = client.evidence.android {
                for name in android.packageNames where snapshot.android[name] == nil { snapshot.android[name] = (client.id, android) }
            }
        }
        for certificate in certificates {
            if let bytes = Hex.decode(certificate.sha256) { snapshot.signingCertificates[certificate.clientID, default: []].insert(bytes) }
        }
        for client in clients {
            guard let keys = client.evidence.ios?.deviceCheck else { continue }
            do {
                guard let sealer, let sealed = Data(base64Encoded: keys.sealedPrivateKey) else {
                    throw StoreUnavailableError("the DeviceCheck key of client \(client.id) cannot be read")
                }
                let pem = try sealer.open(sealed, keyID: ClientEvidence.sealingContext(client: client.id, purpose: "deviceCheck"))
                snapshot.deviceCheck.append(
                    (client.id, DeviceCheckCredentials(
                        teamID: keys.teamId, keyID: keys.keyId, privateKey: try P256.Signing.PrivateKey(pemRepresentation: String(decoding: pem, as: UTF8.self)))))
            } catch {
                logger.error("DeviceCheck key unreadable", metadata: ["client": "\(client.id)", "error": "\(error)"])
            }
        }
        for (name, entry) in snapshot.android {
            guard let keys = entry.settings.playIntegrity else { continue }
            do {
                guard let sealer, let sealed = Data(base64Encoded: keys.sealedDecryptionKey), let spki = Data(base64Encoded: keys.verificationKey) else {
                    throw StoreUnavailableError("the Play Integrity keys of client \(entry.clientID) cannot be read")
                }
                let key = try sealer.open(sealed, keyID: ClientEvidence.sealingContext(client: entry.clientID, purpose: "playIntegrity"))
                snapshot.playIntegrity[name] = PlayIntegrity.App(
                    packageName: name, decryptionKey: SymmetricKey(data: key), verificationKey: try P256.Signing.PublicKey(derRepresentation: spki),
                    certificateDigests: snapshot.signingCertificates[entry.clientID] ?? [])
            } catch {
                // One app's unreadable keys must not stop every other app's attestation.
                logger.error("Play Integrity keys unreadable", metadata: ["client": "\(entry.clientID)", "error": "\(error)"])
            }
        }
        let now = clock.seconds()
        state.withLock { $0 = (snapshot, now) }
        return snapshot
    }
}
