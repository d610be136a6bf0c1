import LatchAttestation
import LatchModel
import Synchronization

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
    }

    private let store: any ClientStore
    private let clock: LatchClock
    private let state = Mutex<(snapshot: Snapshot, loadedAt: Int64?)>((Snapshot(), nil))
    /// Seconds a snapshot is used before it is read again (an admin change on this replica reloads at once).
    static let freshness: Int64 = 5

    public init(store: any ClientStore, clock: LatchClock) {
        self.store = store
        self.clock = clock
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
        let now = clock.seconds()
        state.withLock { $0 = (snapshot, now) }
        return snapshot
    }
}
