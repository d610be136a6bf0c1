import Crypto
import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import Logging

/// The keys a deployment derives from its key-encryption key, one per purpose (HKDF-SHA-256 with the info
/// `latch <purpose>`, ``KeySealer/derivedKey(from:purpose:)``): none is stored, and one never reveals another.
struct DeploymentKeys {
    let keyEncryptionKey: [UInt8]

    func derived(_ purpose: String) -> SymmetricKey { KeySealer.derivedKey(from: keyEncryptionKey, purpose: purpose) }

    /// The audit log's chain: whoever can write the database alone cannot re-compute it.
    var auditChain: SymmetricKey { derived("audit chain mac v1") }
    var refreshTokens: SymmetricKey { derived("refresh-token mac v1") }
    var signInNonces: SymmetricKey { derived("sign-in nonce mac v1") }
    var registrationChallenges: SymmetricKey { derived("registration challenge mac v1") }
    var fidoCeremonies: SymmetricKey { derived("fido ceremony mac v1") }
    var federation: SymmetricKey { derived("federation v1") }
    var dpopNonces: SymmetricKey { derived("dpop nonce mac v1") }
    var adminConsole: SymmetricKey { derived("admin console v1") }
    var customTransactions: SymmetricKey { derived("custom transaction id v1") }
}

/// The engines and settings several features use, made once per deployment; each feature's engines are made from
/// them (the other `LatchDeployment+…` files).
struct SharedEngines {
    let configuration: LatchConfiguration
    let store: any LatchStore
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger
    let keys: DeploymentKeys
    let sealer: KeySealer
    let signingKeys: SigningKeyRing
    let clients: ClientRegistry
    let adminTokenGate: AdminTokenGate
    let generatedAdminToken: String?
    let minter: TokenMinter
    let audit: AuditRecorder
    let refreshTokens: RefreshTokenCodec
    let nonceCodec: SignInNonceCodec
    let verifier: AssertionVerifier
    let accessTokens: AccessTokenGate
    let sessionOpener: SessionOpener
    let attestation: AttestationSettings
    let evidenceApps: EvidenceApps
    let challenges: RegistrationChallenges
    let loginIssuers: LoginIssuerRegistry
    let fido: FidoService
    let federationSealer: FederationSealer

    var tokens: TokenSettings { configuration.tokenSettings }
    var assertions: AssertionSettings { configuration.assertions }
    var scopes: ScopePolicy { ScopePolicy(allowed: tokens.allowedScopes) }

    /// Loads (or creates) the signing keys, seeds the default client, bootstraps the admin token, keys the audit
    /// chain, and makes the shared engines.
    static func load(
        configuration: LatchConfiguration, store: any LatchStore, keyEncryptionKey: [UInt8], clock: LatchClock, random: RandomSource,
        jwksFetcher: (any JWKSFetching)?, logger: Logger
    ) async throws -> SharedEngines {
        let tokens = configuration.tokenSettings
        let assertions = configuration.assertions
        let keys = DeploymentKeys(keyEncryptionKey: keyEncryptionKey)
        let sealer = try KeySealer(keyEncryptionKey: keyEncryptionKey)
        let signingKeys = try await SigningKeyRing.load(
            store: store, sealer: sealer, clock: clock, random: random, algorithm: configuration.signingAlgorithm,
            publicationAfterRetirement: tokens.longestTokenLifetime + assertions.clockSkew, logger: logger)
        _ = try await store.addClient(Client(id: configuration.defaultClientID, name: "Default app", createdAt: clock.seconds()))
        let clients = ClientRegistry(store: store, defaultClientID: configuration.defaultClientID, clock: clock)
        try await clients.reload()
        let adminTokenGate = AdminTokenGate(store: store, clock: clock, logger: logger)
        let generated = try await adminTokenGate.bootstrap(configured: configuration.adminToken?.value, random: random)
        store.auditChain.setKey(keys.auditChain)

        let minter = TokenMinter(keys: signingKeys, settings: tokens, random: random)
        let refreshTokens = RefreshTokenCodec(key: keys.refreshTokens)
        let attestation = try AttestationSettings.load(configuration, logger: logger)
        let evidenceApps = EvidenceApps(store: store, clock: clock, sealer: sealer, logger: logger)
        let fidoSettings = try FidoSettings.load(configuration, now: Date(timeIntervalSince1970: TimeInterval(clock.seconds())), logger: logger)
        return SharedEngines(
            configuration: configuration, store: store, clock: clock, random: random, logger: logger, keys: keys, sealer: sealer,
            signingKeys: signingKeys, clients: clients, adminTokenGate: adminTokenGate, generatedAdminToken: generated, minter: minter,
            audit: AuditRecorder(store: store, clock: clock, random: random, logger: logger), refreshTokens: refreshTokens,
            nonceCodec: SignInNonceCodec(key: keys.signInNonces), verifier: AssertionVerifier(maximumBytes: assertions.maximumTokenBytes),
            accessTokens: AccessTokenGate(store: store, keys: signingKeys, issuer: tokens.issuer, clock: clock),
            sessionOpener: SessionOpener(
                store: store, minter: minter, refreshTokens: refreshTokens, tokens: tokens, clock: clock, random: random, logger: logger),
            attestation: attestation, evidenceApps: evidenceApps,
            challenges: RegistrationChallenges(
                key: keys.registrationChallenges, lifetime: attestation.challengeLifetime, clock: clock, random: random),
            loginIssuers: LoginIssuerRegistry(store: store, fetcher: jwksFetcher ?? JWKSHTTPFetcher(), clock: clock, logger: logger),
            fido: FidoService(
                store: store, settings: fidoSettings,
                ceremonies: FidoCeremonies(key: keys.fidoCeremonies, lifetime: configuration.fidoSettings.ceremonyLifetime),
                apps: evidenceApps, clock: clock, random: random, logger: logger),
            federationSealer: FederationSealer(keyEncryptionKey: keys.federation))
    }
}
