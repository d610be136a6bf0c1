import Crypto
import Foundation
import LatchJOSE
import LatchModel
import Logging

/// Registers users (REFERENCE §2): custom federated (`FSSO`) and test-key (`TEST`) registrations.
///
/// `registrationId` is an idempotency key: the same id with the same proof answers the same user, the same id
/// with another proof is a conflict. Device attestation types answer `unsupported_challenge_type` for now.
public struct RegistrationService: Sendable {
    public typealias Store = UserStore & RegistrationStore & IssuerStore & TestKeyStore

    let store: any Store
    let settings: RegistrationSettings
    let assertions: AssertionSettings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(
        store: any Store, settings: RegistrationSettings, assertions: AssertionSettings, clock: LatchClock,
        random: RandomSource, logger: Logger = Logger(label: "latch.registration")
    ) {
        self.store = store
        self.settings = settings
        self.assertions = assertions
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// Longest accepted `registrationId`, `keyId` and username.
    static let maximumIdentifierLength = 128

    public func register(_ request: RegistrationRequest) async throws -> RegistrationResponse {
        // Step 1. The challenge type is one this deployment accepts.
        switch request.challengeType {
        case .fsso: break
        case .test:
            guard settings.testKeysEnabled else {
                throw LatchError(.challengeTypeDisabled, "test registration keys are disabled on this deployment")
            }
        case .deviceCheck, .appAttest, .playIntegrity:
            throw LatchError(
                .unsupportedChallengeType, "\(request.challengeType.rawValue) registration is not supported yet")
        default:
            throw LatchError(.unsupportedChallengeType, "unknown challengeType")
        }
        // Step 2. Shape of the fields.
        guard !request.answer.isEmpty else { throw LatchError.invalidInput("answer is required") }
        guard request.answer.utf8.count <= assertions.maximumTokenBytes else {
            throw LatchError(.requestTooLarge, "answer exceeds \(assertions.maximumTokenBytes) bytes")
        }
        if let id = request.registrationId {
            guard Self.isIdentifier(id) else {
                throw LatchError.invalidInput("registrationId must be 1–128 printable characters")
            }
        }
        if request.challengeType == .fsso, request.publicKey != nil {
            throw LatchError.invalidInput("FSSO registrations carry no device key")
        }
        // Step 3. A known registrationId answers from the record, before the single-use proof is spent again.
        let proofHash = Self.proofHash(request)
        if let id = request.registrationId, let existing = try await store.registration(id: id) {
            return try await answerExisting(userID: existing.userID, storedHash: existing.proofHash, proofHash: proofHash)
        }
        // Step 4. Verify the proof and build the user.
        let now = clock.seconds()
        let registration: NewRegistration
        switch request.challengeType {
        case .fsso: registration = try await federatedRegistration(request, proofHash: proofHash, now: now)
        default: registration = try await testRegistration(request, proofHash: proofHash, now: now)
        }
        // Step 5. One transaction: record, user, device key, consumed jti.
        switch try await store.register(registration) {
        case .created(let user):
            logger.info("registered", metadata: ["user": "\(user.id)", "type": "\(request.challengeType.rawValue)"])
            return RegistrationResponse(userId: user.id, username: user.username)
        case .registrationExists(let userID, let storedHash):
            return try await answerExisting(userID: userID, storedHash: storedHash, proofHash: proofHash)
        case .alreadyRegistered:
            throw LatchError(.alreadyRegistered, "a user with this identity is already registered")
        case .replayed:
            throw LatchError.invalidProof("this registration token was used before")
        }
    }

    func answerExisting(userID: String, storedHash: Data, proofHash: Data) async throws -> RegistrationResponse {
        guard Secrets.constantTimeEquals(storedHash, proofHash) else {
            throw LatchError(.registrationConflict, "this registrationId was used with a different proof")
        }
        guard let user = try await store.user(id: userID) else {
            throw LatchError(.registrationConflict, "this registrationId belongs to a deleted user")
        }
        return RegistrationResponse(userId: user.id, username: user.username)
    }

    /// `FSSO`: the answer is a custom federated JWT; username = sub; no device key.
    func federatedRegistration(_ request: RegistrationRequest, proofHash: Data, now: Int64) async throws
        -> NewRegistration
    {
        let parsed = try parse(request.answer)
        guard let iss = parsed.claims["iss"]?.stringValue, let kid = parsed.keyID,
            let issuerKey = try await store.issuerKey(issuer: iss, keyID: kid)
        else { throw LatchError.invalidProof("no registered issuer key matches the token's iss and kid") }
        do {
            _ = try parsed.verify(with: issuerKey.key)
        } catch {
            throw LatchError.invalidProof("the token's signature does not verify", detail: error.description)
        }
        let claims = try AssertionClaims.check(
            parsed.claims, audience: issuerKey.audience, now: now, skew: assertions.clockSkew,
            maxLifetime: issuerKey.maxLifetime, code: .invalidProof)
        let user = User(
            id: random.uuid(), username: claims.subject, kind: .federated, issuer: claims.issuer,
            subject: claims.subject, claims: TokenService.keptClaims(claims.all, allowed: issuerKey.allowedClaims),
            createdAt: now)
        return NewRegistration(
            user: user, deviceKey: nil, registrationID: request.registrationId, proofHash: proofHash,
            consumes: .jti(claims.jwtID, issuer: claims.issuer, until: claims.expiresAt + assertions.clockSkew))
    }

    /// `TEST`: the answer is a JWT signed by a test registration key (REFERENCE §3); the public key becomes the
    /// user's device sign-in key.
    func testRegistration(_ request: RegistrationRequest, proofHash: Data, now: Int64) async throws -> NewRegistration {
        guard let publicKey = request.publicKey else {
            throw LatchError.invalidInput("publicKey is required for TEST registrations")
        }
        guard Self.isIdentifier(publicKey.keyId) else {
            throw LatchError.invalidInput("publicKey.keyId must be 1–128 printable characters")
        }
        guard let algorithm = JWSAlgorithm(rawValue: publicKey.algorithm) else {
            throw LatchError(.invalidPublicKey, "publicKey.algorithm must be RS256 or ES256")
        }
        let deviceKey: PublicKey
        do {
            deviceKey = try PublicKey(pemOrBase64DER: publicKey.publicKey, algorithm: algorithm)
        } catch {
            throw LatchError(.invalidPublicKey, error.detail)
        }
        let parsed = try parse(request.answer)
        guard let kid = parsed.keyID, let testKey = try await store.testKey(id: kid) else {
            throw LatchError.invalidProof("no test registration key matches the token's kid")
        }
        do {
            _ = try parsed.verify(with: testKey.key)
        } catch {
            throw LatchError.invalidProof("the token's signature does not verify", detail: error.description)
        }
        let claims = try AssertionClaims.check(
            parsed.claims, audience: settings.testAudience, now: now, skew: assertions.clockSkew,
            maxLifetime: settings.testTokenMaxLifetime, code: .invalidProof)
        guard claims.issuer == settings.testIssuer else {
            throw LatchError.invalidProof("a test registration token's iss must be \(settings.testIssuer)")
        }
        guard claims.subject.utf8.count <= Self.maximumIdentifierLength else {
            throw LatchError.invalidProof("sub (the username) is longer than 128 bytes")
        }
        let userID = random.uuid()
        return NewRegistration(
            user: User(
                id: userID, username: claims.subject, kind: .test, issuer: nil, subject: nil, claims: [:],
                createdAt: now),
            deviceKey: DeviceKey(userID: userID, keyID: publicKey.keyId, key: deviceKey, createdAt: now),
            registrationID: request.registrationId, proofHash: proofHash,
            consumes: .jti(claims.jwtID, issuer: "test:\(testKey.keyID)", until: claims.expiresAt + assertions.clockSkew))
    }

    func parse(_ answer: String) throws(LatchError) -> ParsedJWS {
        do {
            let parsed = try ParsedJWS(answer, maximumLength: assertions.maximumTokenBytes)
            _ = try parsed.algorithm()
            try parsed.checkHeaderPolicy()
            return parsed
        } catch {
            throw LatchError.invalidProof("the answer is not an acceptable JWT: \(error.detail)")
        }
    }

    /// The fingerprint a `registrationId` is bound to: type, answer and public key.
    static func proofHash(_ request: RegistrationRequest) -> Data {
        var hasher = SHA256()
        for part in [
            request.challengeType.rawValue, request.answer, request.publicKey?.keyId ?? "",
            request.publicKey?.algorithm ?? "", request.publicKey?.publicKey ?? "",
        ] {
            hasher.update(data: Array(part.utf8))
            hasher.update(data: [0])
        }
        return Data(hasher.finalize())
    }

    static func isIdentifier(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= maximumIdentifierLength
            && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F }
    }
}
