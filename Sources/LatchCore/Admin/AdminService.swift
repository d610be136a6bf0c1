import LatchModel
import Logging

/// The admin API's engine: issuers, test registration keys, users, clients, admin tokens, signing keys — one
/// extension per area.
public struct AdminService: Sendable {
    let store: any LatchStore
    let keys: SigningKeyRing
    let clients: ClientRegistry
    let authenticator: AdminAuthenticator
    let assertions: AssertionSettings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(
        store: any LatchStore, keys: SigningKeyRing, clients: ClientRegistry, authenticator: AdminAuthenticator,
        assertions: AssertionSettings, clock: LatchClock, random: RandomSource, logger: Logger = Logger(label: "latch.admin")
    ) {
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
