import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// Latch's engines over an in-memory store, a stopped clock and a seeded random source: the unit under test in
/// every flow test of this target (fosite style — one file per flow, the store a real implementation of the
/// store protocols, no HTTP).
struct Engines {
    let store = InMemoryStore()
    let clock = TestClock()
    let random = RandomSource.seeded(42)
    let tokens: TokenSettings
    let assertions: AssertionSettings
    let keys: SigningKeyRing
    let refreshTokens = RefreshTokenCodec(key: KeySealer.derivedKey(from: [UInt8](repeating: 9, count: 32), purpose: "test"))
    let clients: ClientRegistry

    var now: Int64 { clock.seconds }

    static func make(
        assertions configureAssertions: (inout AssertionSettings) -> Void = { _ in }, _ configure: (inout TokenSettings) -> Void = { _ in }
    ) async throws -> Engines {
        var tokens = TokenSettings(issuer: "https://latch.test")
        configure(&tokens)
        var assertions = AssertionSettings()
        configureAssertions(&assertions)
        return try await Engines(tokens: tokens, assertions: assertions)
    }

    private init(tokens: TokenSettings, assertions: AssertionSettings) async throws {
        self.tokens = tokens
        self.assertions = assertions
        keys = try await SigningKeyRing.load(
            store: store, sealer: try KeySealer(keyEncryptionKey: [UInt8](repeating: 1, count: 32)), clock: clock.clock, random: random,
            algorithm: .ES256, publicationAfterRetirement: 3660)
        _ = try await store.addClient(Client(id: "default", name: "Default", createdAt: 0))
        _ = try await store.addClient(Client(id: "other", name: "Other", createdAt: 0))
        clients = ClientRegistry(store: store, defaultClientID: "default", clock: clock.clock)
    }

    var verifier: AssertionVerifier { AssertionVerifier(maximumBytes: assertions.maximumTokenBytes) }
    var minter: TokenMinter { TokenMinter(keys: keys, settings: tokens, random: random) }

    var sessionOpener: SessionOpener {
        SessionOpener(store: store, minter: minter, refreshTokens: refreshTokens, tokens: tokens, clock: clock.clock, random: random)
    }

    var tokenEndpoint: TokenEndpoint {
        TokenEndpoint(
            grants: [
                JWTBearerGrant(
                    methods: [
                        DeviceKeySignIn(store: store, verifier: verifier, settings: assertions, nonces: nonceCodec),
                        FederatedSignIn(store: store, verifier: verifier, settings: assertions),
                    ],
                    verifier: verifier, scopes: ScopePolicy(allowed: tokens.allowedScopes), sessions: sessionOpener, clock: clock.clock),
                RefreshTokenGrant(store: store, minter: minter, refreshTokens: refreshTokens, tokens: tokens, clock: clock.clock),
            ], clients: clients)
    }

    func registration(testKeys: Bool = true) -> RegistrationService {
        var proofs: [any RegistrationProof] = [FederatedJWTProof(store: store, verifier: verifier, assertions: assertions)]
        if testKeys { proofs.append(TestKeyProof(store: store, verifier: verifier, settings: RegistrationSettings(), assertions: assertions)) }
        return RegistrationService(
            store: store, proofs: proofs, disabled: testKeys ? [] : [.test], assertions: assertions, clock: clock.clock, random: random)
    }

    let nonceCodec = SignInNonceCodec(key: KeySealer.derivedKey(from: [UInt8](repeating: 9, count: 32), purpose: "nonce test"))
    var nonces: SignInNonces { SignInNonces(codec: nonceCodec, settings: assertions, clock: clock.clock, random: random) }

    var accessTokens: AccessTokenGate { AccessTokenGate(store: store, keys: keys, issuer: tokens.issuer, clock: clock.clock) }

    // MARK: Fixtures

    /// Trusts `TestKeys.rsa` as issuer `acme`, kid `k1`, keeping claim `tier`.
    func addIssuer() async throws {
        _ = try await store.addIssuerKey(
            SignOnIssuerKey(issuer: "acme", keyID: "k1", key: TestKeys.rsa.publicKey, audience: "identity-service", allowedClaims: ["tier"], maxLifetime: 3600, createdAt: 0))
    }

    func federated(_ subject: String = "alice", jti: String = UUID().uuidString, tier: String = "gold") throws -> String {
        try Assertions.federated(issuer: "acme", keyID: "k1", subject: subject, now: now, jti: jti, extra: ["tier": .string(tier)]).sign(with: TestKeys.rsa)
    }

    /// Registers `username` with a test registration key and device key `TestKeys.p256` (kid `device-1`).
    @discardableResult
    func registerDevice(_ username: String, registrationID: String? = nil) async throws -> RegistrationResponse {
        if try await store.testRegistrationKey(id: "register_key") == nil {
            _ = try await store.addTestRegistrationKey(TestRegistrationKey(keyID: "register_key", key: TestKeys.p256b.publicKey, createdAt: 0))
        }
        return try await registration().register(
            RegistrationRequest(
                challengeType: .test,
                answer: try Assertions.testRegistration(keyID: "register_key", subject: username, now: now).sign(with: TestKeys.p256b),
                registrationId: registrationID,
                publicKey: RegistrationPublicKey(keyId: "device-1", algorithm: "ES256", publicKey: TestKeys.p256.publicKey.pemRepresentation)))
    }

    /// Registers `username` with device key `TestKeys.p256`, then signs in with it: challenge, signed nonce, tokens.
    func registerAndSignIn(_ username: String) async throws -> TokenResponse {
        try await registerDevice(username)
        let challenge = try await nonces.issue(SignInChallengeRequest(username: username))
        return try await signIn(
            assertion: try Assertions.device(username: username, keyID: "device-1", nonce: challenge.nonce, now: now).sign(with: TestKeys.p256))
    }

    func token(_ parameters: [String: String]) async throws -> TokenResponse { try await tokenEndpoint.exchange(parameters) }

    func signIn(assertion: String) async throws -> TokenResponse {
        try await token(["grant_type": GrantType.jwtBearer, "assertion": assertion])
    }

    func refresh(_ token: String, client: String? = nil) async throws -> TokenResponse {
        var parameters = ["grant_type": GrantType.refreshToken, "refresh_token": token]
        parameters["client_id"] = client
        return try await self.token(parameters)
    }

    /// How many rows each table holds.
    /// Rows of every table but the audit log, which records refusals too (each in a unit of its own).
    var rowCounts: [InMemoryStore.Table: Int] {
        Dictionary(uniqueKeysWithValues: InMemoryStore.Table.allCases.filter { $0 != .events }.map { ($0, store.count($0)) })
    }
}

/// Expects `body` to throw a `LatchError` with `code`.
func expectCode(_ code: ErrorCode, sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected \(code.rawValue), got success", sourceLocation: sourceLocation)
    } catch let error as LatchError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code.rawValue), got \(error)", sourceLocation: sourceLocation)
    }
}
