import Crypto
import Foundation
import LatchModel
import Logging

/// Registers users: checks the request, asks the proof type's ``RegistrationProof`` who to create, and creates
/// them in one unit of work.
///
/// `registrationId` is an idempotency key: the same id with the same proof answers the same user, the same id
/// with another proof is a conflict (``Idempotency``).
public struct RegistrationService: Sendable {
    public typealias Store = UnitOfWork & UserStore & RegistrationStore

    let store: any Store
    let proofs: [ChallengeType: any RegistrationProof]
    let disabled: Set<ChallengeType>
    let assertions: AssertionSettings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    /// `proofs` are the proof types this deployment accepts; `disabled` the ones it knows but has switched off
    /// (`challenge_type_disabled`, where an unknown type is `unsupported_challenge_type`).
    public init(
        store: any Store, proofs: [any RegistrationProof], disabled: Set<ChallengeType>, assertions: AssertionSettings,
        clock: LatchClock, random: RandomSource, logger: Logger = Logger(label: "latch.registration")
    ) {
        self.store = store
        self.proofs = Dictionary(proofs.map { ($0.proofType, $0) }, uniquingKeysWith: { first, _ in first })
        self.disabled = disabled
        self.assertions = assertions
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// Longest accepted `registrationId`, `keyId` and username.
    static let maximumIdentifierLength = 128

    /// Why a registration's unit of work was refused.
    enum Refusal: Error {
        case registrationExists, alreadyRegistered, replayed
    }

    /// - Step 1. The proof type is one this deployment accepts.
    /// - Step 2. Shape of the fields: the answer, the `registrationId`, then the proof type's own.
    /// - Step 3. A known `registrationId` answers from its record, before the single-use proof is spent again.
    /// - Step 4. The proof verifies and says who to create.
    /// - Step 5. One unit of work: the id is still free, the identity is free, the proof's single-use value is
    ///   spent, the user, device key, record and a `user.registered` event are written. A refusal writes nothing.
    public func register(_ request: RegistrationRequest) async throws -> RegistrationResponse {
        // Step 1.
        guard let proof = proofs[request.challengeType] else {
            if disabled.contains(request.challengeType) {
                throw LatchError(.challengeTypeDisabled, "\(request.challengeType.rawValue) registration is disabled on this deployment")
            }
            throw LatchError(.unsupportedChallengeType, "\(request.challengeType.rawValue.prefix(32)) registration is not supported")
        }
        // Step 2.
        guard !request.answer.isEmpty else { throw LatchError.invalidInput("answer is required") }
        guard request.answer.utf8.count <= assertions.maximumTokenBytes else {
            throw LatchError(.requestTooLarge, "answer exceeds \(assertions.maximumTokenBytes) bytes")
        }
        if let id = request.registrationId, !Self.isIdentifier(id) {
            throw LatchError.invalidInput("registrationId must be 1–128 printable characters")
        }
        try proof.checkShape(request)
        // Step 3.
        let proofHash = Idempotency.proofHash(request)
        if let id = request.registrationId, let existing = try await store.registration(id: id) {
            return try await answerExisting(existing, proofHash: proofHash)
        }
        // Step 4.
        let now = clock.seconds()
        let verified = try await proof.verify(request, now: now)
        let user = User(
            id: random.uuid(), username: verified.username, kind: verified.kind, issuer: verified.federatedIdentity?.issuer,
            subject: verified.federatedIdentity?.subject, claims: verified.claims, createdAt: now)
        let deviceKey = verified.deviceKey.map { DeviceKey(userID: user.id, keyID: $0.keyID, key: $0.key, createdAt: now) }
        let record = request.registrationId.map { RegistrationRecord(id: $0, userID: user.id, proofHash: proofHash, createdAt: now) }
        // Step 5.
        let event = SecurityEvent.now(
            .userRegistered, actor: "user", userID: user.id, detail: request.challengeType.rawValue, clock: clock, random: random)
        do {
            try await store.write {
                Self.create(user, deviceKey: deviceKey, record: record, consuming: verified.consumes, on: $0)
                $0.record(event)
            }
        } catch let refusal as Refusal {
            // A concurrent twin (same id, same proof) may have won any of the unique keys: its record decides.
            if refusal != .replayed, let id = record?.id, let existing = try await store.registration(id: id) {
                return try await answerExisting(existing, proofHash: proofHash)
            }
            switch refusal {
            case .registrationExists, .alreadyRegistered:
                throw LatchError(.alreadyRegistered, "a user with this identity is already registered")
            case .replayed:
                throw LatchError.invalidProof("this registration proof was used before")
            }
        }
        logger.info("registered", metadata: ["user": "\(user.id)", "type": "\(request.challengeType.rawValue)"])
        return RegistrationResponse(userId: user.id, username: user.username)
    }

    static func create(
        _ user: User, deviceKey: DeviceKey?, record: RegistrationRecord?, consuming value: SingleUse,
        on transaction: some RegistrationWrites & UserWrites & SingleUseWrites
    ) {
        if let record { transaction.requireNoRegistration(id: record.id, ifExists: Refusal.registrationExists) }
        transaction.insertUser(user, ifTaken: Refusal.alreadyRegistered)
        transaction.consume(value, ifUnavailable: Refusal.replayed)
        if let deviceKey { transaction.insertDeviceKey(deviceKey, ifTaken: Refusal.alreadyRegistered) }
        if let record { transaction.insertRegistration(record, ifTaken: Refusal.registrationExists) }
    }

    func answerExisting(_ record: RegistrationRecord, proofHash: Data) async throws -> RegistrationResponse {
        guard Idempotency.sameProof(record.proofHash, proofHash) else {
            throw LatchError(.registrationConflict, "this registrationId was used with a different proof")
        }
        guard let user = try await store.user(id: record.userID) else {
            throw LatchError(.registrationConflict, "this registrationId belongs to a deleted user")
        }
        return RegistrationResponse(userId: user.id, username: user.username)
    }

    /// 1–128 bytes, none of them a space or a control character.
    static func isIdentifier(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= maximumIdentifierLength
            && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F }
    }

    /// The idempotency rule of `registrationId`: a retry is the same registration when it carries the same proof.
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
    }
}
