import LatchModel

/// Resolves the `client_id` of a request to a known public client, with an in-memory cache.
///
/// A miss reloads from the store at most once per second, so a client added through another replica is
/// found without a restart, and a flood of unknown ids does not become a flood of queries.
public final class ClientRegistry: Sendable {
    private struct State {
        var clients: [String: Client] = [:]
        var loadedAt: Int64?
    }

    private let store: any ClientStore
    private let clock: LatchClock
    private let state = Locked(State())
    /// Used when a request names no client.
    public let defaultClientID: String

    public init(store: any ClientStore, defaultClientID: String, clock: LatchClock) {
        self.store = store
        self.defaultClientID = defaultClientID
        self.clock = clock
    }

    /// The client named by `clientID`, or the default client when it is nil or empty.
    public func resolve(_ clientID: String?) async throws -> Client {
        let id = (clientID?.isEmpty ?? true) ? defaultClientID : clientID!
        if let client = state.withLock({ $0.clients[id] }) { return client }
        let now = clock.seconds()
        if state.withLock({ state in state.loadedAt.map { now - $0 >= 1 } ?? true }) {
            try await reload()
            if let client = state.withLock({ $0.clients[id] }) { return client }
        }
        throw LatchError.invalidClient("unknown client_id")
    }

    /// The client `clientID` re-read from the store when the cached copy is more than a second old (at most once a
    /// second): for a setting another replica may just have changed (a new redirect URI), before refusing on it.
    public func refreshed(_ clientID: String) async throws -> Client? {
        let now = clock.seconds()
        if state.withLock({ state in state.loadedAt.map { now - $0 >= 1 } ?? true }) { try await reload() }
        return state.withLock { $0.clients[clientID] }
    }

    /// Re-reads the clients.
    public func reload() async throws {
        let clients = try await store.clients()
        let now = clock.seconds()
        state.withLock {
            $0.clients = Dictionary(clients.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            $0.loadedAt = now
        }
    }
}
