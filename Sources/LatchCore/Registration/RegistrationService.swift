import Crypto
import Foundation
import LatchJOSE
import LatchModel
import Logging

/// Registers users: checks the request, asks the proof type's ``RegistrationProof`` who to create, and creates
/// them in one unit of work.
///
/// `registrationId` is an idempotency key: the same id answers the same user for the same proof, or for a new proof
/// of the same identity (an app relaunched after a lost answer mints a new token); for another identity it is a
/// conflict (``Idempotency``).
public struct RegistrationService: Sendable {
    public typealias Store = UnitOfWork & UserStore & RegistrationStore & AuthenticatorStore

    let store: any Store
    let proofs: [RegistrationMethod: any RegistrationProof]
    let challenges: RegistrationChallenges?
    let disabled: Set<RegistrationMethod>
    let assertions: AssertionSettings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    /// `proofs` are the proof types this deployment accepts; `disabled` the ones it knows but has switched off
    /// (`challenge_type_disabled`, where an unknown type is `unsupported_challenge_type`).
    public init(
        store: any Store, proofs: [any RegistrationProof], disabled: Set<RegistrationMethod>, assertions: AssertionSettings,
        challenges: RegistrationChallenges? = nil, clock: LatchClock, random: RandomSource, logger: Logger = Logger(label: "latch.registration")
    ) {
        self.store = store
        self.challenges = challenges
        self.proofs = Dictionary(proofs.map { ($0.proofType, $0) }, uniquingKeysWith: { first, _ in first })
        self.disabled = disabled
        self.assertions = assertions
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// The proof types this deployment accepts (`registration_proof_types_supported`).
    public var proofTypes: [String] { proofs.keys.map(\.rawValue).sorted() }

    /// A registration challenge for a proof type that binds one (`POST /v1/registrations/challenge`).
    public func challenge(_ request: RegistrationChallengeRequest) throws -> RegistrationChallengeResponse {
        guard let challenges else { throw LatchError(.unsupportedChallengeType, "no registration type on this deployment takes a challenge") }
        return try challenges.issue(request, accepted: Set(proofs.keys))
    }

    /// Longest accepted `registrationId`, `keyId` and username.
    static let maximumIdentifierLength = 128

    /// Why a registration's unit of work was refused.
    enum Refusal: Error {
        case registrationExists, alreadyRegistered, replayed
    }

    /// - Step 1. The proof type is one this deployment accepts.
    /// - Step 2. Shape of the fields: the answer, the `registrationId`, then the proof type's own.
    /// - Step 3. A known `registrationId` with the same proof answers its user at once (the proof was spent by
    ///   the first attempt).
    /// - Step 4. The proof verifies and says who to create. A known `registrationId` with another proof is a
    ///   retry with a freshly minted proof: it answers the same user when the proof names the same identity
    ///   (``Idempotency/sameIdentity(_:as:deviceKey:)``), spending its single-use value; else it is a conflict.
    /// - Step 5. One unit of work: the id is still free, the identity is free, the proof's single-use value is
    ///   spent, the user, device key, record and a `user.registered` event are written. A refusal writes nothing.
    public func register(_ request: RegistrationRequest) async throws -> RegistrationResponse {
        do {
            return try await registerRecordingSuccess(request)
        } catch let error as LatchError {
            // A refusal is recorded on its own (nothing else was written): an attestation refusal as such.
            let code = error.code.rawValue
            let attestation = code.hasPrefix("attestation_") || code == ErrorCode.webauthnAttestationInvalid.rawValue
            let event = SecurityEvent.now(
                attestation ? .attestationFailed : .registrationFailed, actor: "anonymous", userID: nil,
                detail: "proof=\(request.challengeType.rawValue.prefix(32)) error=\(code)", clock: clock, random: random)
            await store.recordFailure(event, logger: logger)
            throw error
        }
    }

    private func registerRecordingSuccess(_ request: RegistrationRequest) async throws -> RegistrationResponse {
        // Step 1.
        guard let proof = proofs[request.challengeType] else {
            if disabled.contains(request.challengeType) {
                throw LatchError(.challengeTypeDisabled, "\(request.challengeType.rawValue) registration is disabled on this deployment")
            }
            throw LatchError(.unsupportedChallengeType, "\(request.challengeType.rawValue.prefix(32)) registration is not supported")
        }
        // Step 2.
        guard !request.answer.isEmpty else { throw LatchError.invalidInput("answer is required") }
        let maximumAnswer = proof.maximumAnswerBytes ?? assertions.maximumTokenBytes
        guard request.answer.utf8.count <= maximumAnswer else {
            throw LatchError(.requestTooLarge, "answer exceeds \(maximumAnswer) bytes")
        }
        if let id = request.registrationId, !Self.isIdentifier(id) {
            throw LatchError.invalidInput("registrationId must be 1–128 printable characters")
        }
        try proof.checkShape(request)
        // Step 3.
        let proofHash = Idempotency.proofHash(request)
        let known = try await request.registrationId.asyncFlatMap { try await store.registration(id: $0) }
        if let known, Idempotency.sameProof(known.proofHash, proofHash) { return try await answer(known) }
        // Step 4.
        let now = clock.seconds()
        let verified = try await proof.verify(request, now: now)
        if let known { return try await answerRetry(known, verified) }
        let user = User(
            id: verified.userID ?? random.uuid(), username: verified.username, kind: verified.kind, issuer: verified.federatedIdentity?.issuer,
            subject: verified.federatedIdentity?.subject, claims: verified.claims, createdAt: now)
        let deviceKey = verified.deviceKey.map {
            DeviceKey(userID: user.id, keyID: $0.keyID, key: $0.key, createdAt: now, attestation: verified.deviceKeyAttestation)
        }
        let record = request.registrationId.map { RegistrationRecord(id: $0, userID: user.id, proofHash: proofHash, createdAt: now) }
        // Step 5.
        let event = SecurityEvent.now(
            .userRegistered, actor: "user", userID: user.id, detail: request.challengeType.rawValue, clock: clock, random: random)
        do {
            try await store.write {
                Self.create(
                    user, deviceKey: deviceKey, authenticator: verified.authenticator, record: record, consuming: verified.consumes, on: $0)
                $0.record(event)
            }
        } catch let refusal as Refusal {
            // A concurrent twin (same id) may have won any of the unique keys: its record decides.
            if refusal != .replayed, let id = record?.id, let twin = try await store.registration(id: id) {
                return Idempotency.sameProof(twin.proofHash, proofHash) ? try await answer(twin) : try await answerRetry(twin, verified)
            }
            switch refusal {
            case .registrationExists, .alreadyRegistered:
                throw LatchError(.alreadyRegistered, "a user with this identity is already registered")
            case .replayed:
                throw Self.replayed(verified.consumes)
            }
        }
        logger.info("registered", metadata: ["user": "\(user.id)", "type": "\(request.challengeType.rawValue)"])
        await verified.afterCommit?()
        return RegistrationResponse(userId: user.id, username: user.username, authenticatorId: verified.authenticator?.id)
    }

    /// The user of a registration record.
    func answer(_ record: RegistrationRecord) async throws -> RegistrationResponse {
        guard let user = try await store.user(id: record.userID) else {
            throw LatchError(.registrationConflict, "this registrationId belongs to a deleted user")
        }
        return try await response(for: user)
    }

    /// The answer for `user`; for a WebAuthn sign-up, with its first authenticator.
    func response(for user: User) async throws -> RegistrationResponse {
        let first = user.kind == .webauthn ? try await store.authenticators(userID: user.id).min { $0.createdAt < $1.createdAt }?.id : nil
        return RegistrationResponse(userId: user.id, username: user.username, authenticatorId: first)
    }

    /// A known `registrationId` with a new, verified proof: the same user when the proof names the identity the
    /// user registered with — its single-use value is spent, so the new proof cannot be used again — else a conflict.
    func answerRetry(_ record: RegistrationRecord, _ verified: VerifiedRegistration) async throws -> RegistrationResponse {
        guard let user = try await store.user(id: record.userID) else {
            throw LatchError(.registrationConflict, "this registrationId belongs to a deleted user")
        }
        let deviceKey = try await verified.deviceKey.asyncFlatMap { try await store.deviceKey(userID: user.id, keyID: $0.keyID) }
        let authenticator = try await verified.authenticator.asyncFlatMap { try await store.authenticator(credentialID: $0.credentialID)?.1 }
        guard Idempotency.sameIdentity(verified, as: user, deviceKey: deviceKey, authenticator: authenticator) else {
            throw LatchError(.registrationConflict, "this registrationId was used for another identity")
        }
        do {
            try await store.write { $0.consume(verified.consumes, ifUnavailable: Refusal.replayed) }
        } catch Refusal.replayed {
            throw Self.replayed(verified.consumes)
        }
        return try await response(for: user)
    }

    /// The error for a single-use value found spent: a registration challenge is `invalid_challenge`, a token
    /// `invalid_proof`.
    static func replayed(_ value: SingleUse) -> LatchError {
        if case .jti(_, let issuer, _) = value, issuer == RegistrationChallenges.consumedIssuer {
            return LatchError(.invalidChallenge, "this registration challenge was used before; ask for a new one")
        }
        return LatchError.invalidProof("this registration proof was used before")
    }

    static func create(
        _ user: User, deviceKey: DeviceKey?, authenticator: Authenticator?, record: RegistrationRecord?, consuming value: SingleUse,
        on transaction: some RegistrationWrites & UserWrites & SingleUseWrites & AuthenticatorWrites
    ) {
        if let record { transaction.requireNoRegistration(id: record.id, ifExists: Refusal.registrationExists) }
        transaction.insertUser(user, ifTaken: Refusal.alreadyRegistered)
        transaction.consume(value, ifUnavailable: Refusal.replayed)
        if let deviceKey { transaction.insertDeviceKey(deviceKey, ifTaken: Refusal.alreadyRegistered) }
        if let authenticator { transaction.insertAuthenticator(authenticator, ifTaken: Refusal.alreadyRegistered) }
        if let record { transaction.insertRegistration(record, ifTaken: Refusal.registrationExists) }
    }

    /// 1–128 bytes, none of them a space or a control character.
    static func isIdentifier(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= maximumIdentifierLength
            && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F }
    }

    /// The idempotency rule of `registrationId`: a retry is the same registration when it carries the same proof,
    /// or a new proof of the same identity.
    public enum Idempotency {
        /// The fingerprint a `registrationId` is bound to: proof type, answer and public key.
        public static func proofHash(_ request: RegistrationRequest) -> Data {
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

        /// Whether a stored and a presented fingerprint match (compared in constant time).
        public static func sameProof(_ stored: Data, _ presented: Data) -> Bool {
            Secrets.constantTimeEquals(stored, presented)
        }

        /// Whether a verified proof names the identity `user` registered with: for a custom federated JWT the same
        /// issuer and subject; for a device proof the same public key under the same key id (`deviceKey` is the
        /// user's key with the proof's key id, if any). A test registration token minted afresh carries a new
        /// `sub`, so the key, not the username, is the identity. For a WebAuthn sign-up, the same credential
        /// (`authenticator` is the stored one with the proof's credential id, if any) registered to `user`.
        public static func sameIdentity(
            _ verified: VerifiedRegistration, as user: User, deviceKey: DeviceKey?, authenticator: Authenticator? = nil
        ) -> Bool {
            if let identity = verified.federatedIdentity {
                return user.issuer == identity.issuer && user.subject == identity.subject
            }
            if let presented = verified.authenticator {
                guard let stored = authenticator else { return false }
                return stored.userID == user.id && stored.credentialID == presented.credentialID && stored.publicKeyCOSE == presented.publicKeyCOSE
            }
            if let presented = verified.deviceKey, let stored = deviceKey {
                return stored.keyID == presented.keyID && stored.key.derRepresentation == presented.key.derRepresentation
            }
            return false
        }
    }
}
