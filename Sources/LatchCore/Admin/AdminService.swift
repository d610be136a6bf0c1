import LatchModel
import Logging

/// The admin API's engine: issuers, test registration keys, users, clients, admin tokens, signing keys — one
/// extension per area.
public struct AdminService: Sendable {
    let store: any (UnitOfWork & UserStore & SessionStore & SignOnIssuerStore & TestRegistrationKeyStore & ClientStore & SigningKeyStore & AdminTokenStore & RegistrationStore & FederationStore)
    let keys: SigningKeyRing
    let clients: ClientRegistry
    let authenticator: AdminTokenGate
    let assertions: AssertionSettings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger
    /// Seals write-only evidence secrets; nil where the deployment has none (tests of other areas).
    let sealer: KeySealer?
    /// Reloaded after an evidence change, so this replica's next attestation sees it at once.
    let evidenceApps: EvidenceApps?

    public init(
        store: any (UnitOfWork & UserStore & SessionStore & SignOnIssuerStore & TestRegistrationKeyStore & ClientStore & SigningKeyStore & AdminTokenStore & RegistrationStore & FederationStore), keys: SigningKeyRing, clients: ClientRegistry, authenticator: AdminTokenGate,
        assertions: AssertionSettings, clock: LatchClock, random: RandomSource, sealer: KeySealer? = nil, evidenceApps: EvidenceApps? = nil,
        logger: Logger = Logger(label: "latch.admin")
    ) {
        self.sealer = sealer
        self.evidenceApps = evidenceApps
        self.store = store
        self.keys = keys
        self.clients = clients
        self.authenticator = authenticator
        self.assertions = assertions
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    static func isName(_ value: String, max: Int) -> Bool {
        !value.isEmpty && value.utf8.count <= max
            && !value.containsControlCharacters
    }
}
