import Foundation
import LatchJOSE
import LatchModel
import Logging
import Synchronization

/// Checks admin bearer tokens against the stored hashes, in constant time.
///
/// The hashes are cached and re-read by housekeeping (every 10 s), after a change made here, and on a miss (at
/// most every 5 s): a token created or revoked on another replica takes effect here within seconds.
public final class AdminAuthenticator: Sendable {
    private let store: any AdminTokenStore
    private let clock: LatchClock
    private let cache = Mutex<(tokens: [AdminTokenRecord], loadedAt: Int64?)>(([], nil))

    /// The id of the token configured through `LATCH_ADMIN_TOKEN` (replaced when the variable changes).
    public static let environmentTokenID = "env"

    public init(store: any AdminTokenStore, clock: LatchClock) {
        self.store = store
        self.clock = clock
    }

    /// Makes sure an admin token exists: stores `configured` (from `LATCH_ADMIN_TOKEN`) as the environment's
    /// token — replacing the previous one, so changing the variable rotates it — or, when none is configured and
    /// the store has none, generates one. Returns a generated token so the caller can print it once.
    public func bootstrap(configured: String?, random: RandomSource) async throws -> String? {
        if let configured, !configured.isEmpty {
            guard configured.utf8.count >= 16 else {
                throw LatchError.invalidInput("the admin token must be at least 16 characters")
            }
            let hash = Secrets.hash(configured)
            let existing = try await store.adminTokens()
            if !existing.contains(where: { $0.id == Self.environmentTokenID && $0.hash == hash }) {
                try await store.putAdminToken(
                    AdminTokenRecord(id: Self.environmentTokenID, name: "LATCH_ADMIN_TOKEN", hash: hash, createdAt: clock.seconds()))
            }
            try await reload()
            return nil
        }
        guard try await store.adminTokens().isEmpty else {
            try await reload()
            return nil
        }
        let token = "lat_" + random.token()
        try await store.putAdminToken(AdminTokenRecord(id: "bootstrap", name: "bootstrap", hash: Secrets.hash(token), createdAt: clock.seconds()))
        try await reload()
        return token
    }

    /// Whether `token` is an admin token.
    public func isAdmin(_ token: String) async throws -> Bool {
        guard !token.isEmpty, token.utf8.count <= 512 else { return false }
        let hash = Secrets.hash(token)
        if matches(hash) { return true }
        let now = clock.seconds()
        guard cache.withLock({ state in state.loadedAt.map { now - $0 >= 5 } ?? true }) else { return false }
        try await reload()
        return matches(hash)
    }

    private func matches(_ hash: Data) -> Bool {
        // Compare against every stored hash, without stopping early.
        cache.withLock { state in
            state.tokens.reduce(false) { found, stored in Secrets.constantTimeEquals(stored.hash, hash) || found }
        }
    }

    /// Re-reads the tokens.
    public func reload() async throws {
        let tokens = try await store.adminTokens()
        let now = clock.seconds()
        cache.withLock { $0 = (tokens, now) }
    }
}

/// The admin API's engine: issuers, test keys, users, clients, signing keys.
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

    // MARK: Issuers

    public func addIssuer(_ request: AdminIssuerRequest) async throws -> AdminIssuer {
        guard Self.isName(request.name, max: 255) else { throw LatchError.invalidInput("name must be 1–255 printable characters") }
        guard Self.isName(request.keyId, max: 255) else { throw LatchError.invalidInput("keyId must be 1–255 printable characters") }
        let key: PublicKey
        do {
            if let algorithm = request.algorithm {
                guard let algorithm = JWSAlgorithm(rawValue: algorithm) else {
                    throw LatchError(.invalidPublicKey, "algorithm must be RS256 or ES256")
                }
                key = try PublicKey(pemOrBase64DER: request.publicKey, algorithm: algorithm)
            } else {
                key = try PublicKey(pemOrBase64DER: request.publicKey)
            }
        } catch let error as JOSEError {
            throw LatchError(.invalidPublicKey, error.detail)
        }
        let allowed = request.allowedClaims ?? []
        guard allowed.count <= 64, allowed.allSatisfy({ Self.isName($0, max: 128) }) else {
            throw LatchError.invalidInput("allowedClaims must be at most 64 claim names")
        }
        if let reserved = allowed.first(where: { TokenMinter.reservedClaims.contains($0) }) {
            throw LatchError.invalidInput("\(reserved) is a registered claim and cannot be copied")
        }
        let maxLifetime = request.maxLifetime ?? Int(assertions.defaultIssuerMaxLifetime)
        guard (1...86_400).contains(maxLifetime) else {
            throw LatchError.invalidInput("maxLifetime must be 1–86400 seconds")
        }
        let audience = request.audience ?? assertions.audience
        guard Self.isName(audience, max: 255) else { throw LatchError.invalidInput("audience must be 1–255 printable characters") }
        let issuerKey = IssuerKey(
            issuer: request.name, keyID: request.keyId, key: key, audience: audience, allowedClaims: allowed,
            maxLifetime: Int64(maxLifetime), createdAt: clock.seconds())
        guard try await store.addIssuerKey(issuerKey) else {
            throw LatchError(.conflict, "this issuer already has a key with this keyId")
        }
        logger.info("issuer key added", metadata: ["issuer": "\(request.name)", "kid": "\(request.keyId)"])
        return Self.view(issuerKey)
    }

    public func issuers() async throws -> AdminIssuerList {
        AdminIssuerList(issuers: try await store.issuerKeys().map(Self.view))
    }

    public func deleteIssuer(_ name: String, keyID: String?) async throws {
        guard try await store.deleteIssuer(name, keyID: keyID) > 0 else { throw LatchError.notFound("no such issuer key") }
        logger.info("issuer removed", metadata: ["issuer": "\(name)"])
    }

    static func view(_ key: IssuerKey) -> AdminIssuer {
        AdminIssuer(
            name: key.issuer, keyId: key.keyID, algorithm: key.key.algorithm.rawValue, audience: key.audience,
            allowedClaims: key.allowedClaims, maxLifetime: Int(key.maxLifetime), publicKey: key.key.pemRepresentation,
            createdAt: key.createdAt)
    }

    // MARK: Test keys

    public func createTestKey(_ request: AdminTestKeyRequest) async throws -> AdminTestKeyCreated {
        // The SDKs' default key id is `register_key`: the first key gets it unless another id is asked for.
        let keyID: String
        if let requested = request.keyId {
            keyID = requested
        } else {
            keyID = try await store.testKey(id: "register_key") == nil ? "register_key" : "tk_" + random.token(byteCount: 9)
        }
        guard Self.isName(keyID, max: 128) else { throw LatchError.invalidInput("keyId must be 1–128 printable characters") }
        guard let algorithm = JWSAlgorithm(rawValue: request.algorithm ?? "RS256") else {
            throw LatchError.invalidInput("algorithm must be RS256 or ES256")
        }
        let privateKey = try PrivateKey.generate(algorithm)
        guard try await store.addTestKey(TestKey(keyID: keyID, key: privateKey.publicKey, createdAt: clock.seconds())) else {
            throw LatchError(.conflict, "a test key with this keyId exists")
        }
        logger.info("test registration key created", metadata: ["kid": "\(keyID)"])
        return AdminTestKeyCreated(
            keyId: keyID, algorithm: algorithm.rawValue, privateKey: privateKey.pemRepresentation,
            publicKey: privateKey.publicKey.pemRepresentation)
    }

    public func testKeys() async throws -> AdminTestKeyList {
        AdminTestKeyList(
            testKeys: try await store.testKeys().map {
                AdminTestKey(keyId: $0.keyID, algorithm: $0.key.algorithm.rawValue, publicKey: $0.key.pemRepresentation, createdAt: $0.createdAt)
            })
    }

    public func deleteTestKey(id: String) async throws {
        guard try await store.deleteTestKey(id: id) else { throw LatchError.notFound("no such test key") }
        logger.info("test registration key revoked", metadata: ["kid": "\(id)"])
    }

    // MARK: Users

    public func user(id: String) async throws -> AdminUser {
        guard let user = try await store.user(id: id) else { throw LatchError.notFound("no such user") }
        return Self.view(user)
    }

    public func users(after cursor: String?, limit: Int) async throws -> AdminUserPage {
        guard (1...500).contains(limit) else { throw LatchError.invalidInput("limit must be 1–500") }
        let page = try await store.users(after: cursor, limit: limit + 1)
        let users = page.prefix(limit).map(Self.view)
        return AdminUserPage(users: Array(users), nextCursor: page.count > limit ? users.last?.id : nil)
    }

    public func deleteUser(id: String) async throws {
        guard try await store.deleteUser(id: id) else { throw LatchError.notFound("no such user") }
        logger.info("user deleted by admin", metadata: ["user": "\(id)"])
    }

    public func revokeSessions(userID: String) async throws -> SessionsRevoked {
        guard try await store.user(id: userID) != nil else { throw LatchError.notFound("no such user") }
        return SessionsRevoked(revoked: try await store.revokeSessions(userID: userID, at: clock.seconds()))
    }

    static func view(_ user: User) -> AdminUser {
        AdminUser(
            id: user.id, username: user.username, kind: user.kind.rawValue, issuer: user.issuer, subject: user.subject,
            claims: user.claims, createdAt: user.createdAt)
    }

    // MARK: Clients

    public func addClient(_ request: AdminClientRequest) async throws -> AdminClient {
        guard Self.isName(request.clientId, max: 128) else {
            throw LatchError.invalidInput("clientId must be 1–128 printable characters")
        }
        let client = Client(id: request.clientId, name: request.name ?? request.clientId, createdAt: clock.seconds())
        guard try await store.addClient(client) else { throw LatchError(.conflict, "this client exists") }
        try await clients.reload()
        return AdminClient(clientId: client.id, name: client.name, createdAt: client.createdAt)
    }

    public func clientList() async throws -> AdminClientList {
        AdminClientList(clients: try await store.clients().map { AdminClient(clientId: $0.id, name: $0.name, createdAt: $0.createdAt) })
    }

    public func deleteClient(id: String) async throws {
        guard id != clients.defaultClientID else { throw LatchError(.conflict, "the default client cannot be deleted") }
        guard try await store.deleteClient(id: id) else { throw LatchError.notFound("no such client") }
        try await clients.reload()
    }

    /// The configuration file for an app of client `clientID`, served from `issuer`.
    public func clientConfig(clientID: String, issuer: String) async throws -> AdminClientConfig {
        guard try await store.clients().contains(where: { $0.id == clientID }) else { throw LatchError.notFound("no such client") }
        return AdminClientConfig(serverURL: issuer, clientId: clientID, audience: assertions.audience, namespace: clientID)
    }

    // MARK: Admin tokens

    /// A new admin token, shown this once; only its hash is kept.
    public func createAdminToken(name: String?) async throws -> AdminTokenCreated {
        let name = name ?? "admin"
        guard Self.isName(name, max: 64) else { throw LatchError.invalidInput("name must be 1–64 printable characters") }
        let id = "at_" + random.token(byteCount: 9)
        let token = "lat_" + random.token()
        try await store.putAdminToken(AdminTokenRecord(id: id, name: name, hash: Secrets.hash(token), createdAt: clock.seconds()))
        try await authenticator.reload()
        logger.info("admin token created", metadata: ["id": "\(id)", "name": "\(name)"])
        return AdminTokenCreated(id: id, name: name, token: token)
    }

    public func adminTokens() async throws -> AdminTokenList {
        AdminTokenList(tokens: try await store.adminTokens().map { AdminTokenInfo(id: $0.id, name: $0.name, createdAt: $0.createdAt) })
    }

    /// Revokes a token; the last one cannot be revoked (nobody could administer the deployment any more).
    public func revokeAdminToken(id: String) async throws {
        let tokens = try await store.adminTokens()
        guard tokens.contains(where: { $0.id == id }) else { throw LatchError.notFound("no such admin token") }
        guard tokens.count > 1 else { throw LatchError(.conflict, "the last admin token cannot be revoked; create another first") }
        _ = try await store.deleteAdminToken(id: id)
        try await authenticator.reload()
        logger.info("admin token revoked", metadata: ["id": "\(id)"])
    }

    // MARK: Signing keys

    public func rotateSigningKey() async throws -> AdminKeyRotated {
        AdminKeyRotated(keyId: try await keys.rotate(random: random))
    }

    static func isName(_ value: String, max: Int) -> Bool {
        !value.isEmpty && value.utf8.count <= max
            && !value.containsControlCharacters
    }
}
