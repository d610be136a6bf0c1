import Crypto
import Foundation
import LatchJOSE
import LatchModel
import LatchQR
import Logging

/// Out-of-band enrollment and approval (the Nevis shape): a backend — or a signed-in device, to link another — asks
/// for a transaction; another device redeems its single-use token (from a QR code or an app link) at the operation's
/// endpoint, runs the FIDO ceremony the answer starts, and completes it; the backend polls the status.
///
/// Tokens are 32 random bytes; only their SHA-256 is stored. Redeeming is one compare-and-set (`pending` →
/// `redeemed`, before the expiry), so a token is redeemed once on any replica; completing consumes the ceremony and
/// moves the transaction to its final state in the unit of work that registers, uses or deletes the authenticator.
/// A completion the relying party refuses ends the transaction as `failed` (its own write, nothing else).
public struct OutOfBandService: Sendable {
    public typealias Store = UnitOfWork & OutOfBandStore & UserStore & AuthenticatorStore

    /// How a deployment runs out-of-band transactions.
    public struct Settings: Sendable {
        /// The issuer URL: links are `<issuer>/open?payload=…`, redeem URLs `<issuer>/v1/oob/redeem/<operation>`.
        public var issuer: String
        /// Seconds a token can be redeemed (`oob.tokenLifetime`, default 600).
        public var tokenLifetime: Int64 = 600
        /// Pixels per QR module and quiet-zone modules of the PNG.
        public var qrScale = 4
        public var qrBorder = 4

        public init(issuer: String) { self.issuer = issuer }
    }

    let store: any Store
    let fido: FidoService
    let settings: Settings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(store: any Store, fido: FidoService, settings: Settings, clock: LatchClock, random: RandomSource, logger: Logger = Logger(label: "latch.oob")) {
        self.store = store
        self.fido = fido
        self.settings = settings
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// Longest approval message, characters.
    static let maximumMessage = 1_000
    static let tokenPrefix = "lot_"
    static let statusTokenPrefix = "los_"

    enum Refusal: Error { case taken, unavailable }

    // MARK: Enrollment

    /// `POST /admin/v1/users/{id}/enrollments` (`requestedBy` `admin`) and `POST /v1/me/enrollments` (`user`).
    public func enroll(userID: String, _ request: OutOfBandEnrollmentRequest, requestedBy: String) async throws -> OutOfBandEnrollmentResponse {
        // Step 1. The operation and its message.
        guard let operation = OutOfBandTransaction.Operation(rawValue: request.operation ?? "registration") else {
            throw LatchError.invalidInput("operation must be registration, authentication or deregistration")
        }
        if let message = request.message {
            guard operation == .authentication else { throw LatchError.invalidInput("message is for authentication (an approval) only") }
            guard (1...Self.maximumMessage).contains(message.count), message.unicodeScalars.allSatisfy({ $0.value >= 0x20 || $0 == "\n" }) else {
                throw LatchError.invalidInput("message must be 1–\(Self.maximumMessage) characters without control characters")
            }
        }
        // Step 2. The user: existing, or created here when asked (the backend's own id).
        let now = clock.seconds()
        var created: User?
        let user: User
        if let existing = try await store.user(id: userID) {
            guard request.createUser != true else { throw LatchError(.alreadyRegistered, "user \(userID.prefix(128)) exists already") }
            user = existing
        } else {
            guard request.createUser == true, requestedBy == "admin" else { throw LatchError.notFound("no such user") }
            guard operation == .registration else { throw LatchError.invalidInput("a new user can only be enrolled (operation registration)") }
            guard RegistrationService.isIdentifier(userID) else { throw LatchError.invalidInput("the user id must be 1–128 printable characters") }
            var username = userID
            if let requested = request.username {
                do {
                    username = try Usernames.native(requested)
                } catch {
                    throw LatchError.invalidInput("username \(error)")
                }
            }
            let newUser = User(id: userID, username: username, kind: .webauthn, issuer: nil, subject: nil, claims: [:], createdAt: now)
            created = newUser
            user = newUser
        }
        if created == nil, request.username != nil { throw LatchError.invalidInput("username is for a user created here (createUser)") }
        // Step 3. What the operation needs.
        let authenticators = created == nil ? try await store.authenticators(userID: user.id) : []
        switch operation {
        case .registration:
            guard authenticators.count < fido.settings.maximumAuthenticatorsPerUser else {
                throw LatchError(.conflict, "this account has \(authenticators.count) authenticators, the most allowed; delete one first")
            }
        case .authentication, .deregistration:
            guard !authenticators.isEmpty else { throw LatchError(.conflict, "this user has no authenticator to \(operation == .authentication ? "approve" : "deregister") with") }
        }
        // Step 4. One unit: the user (when created), the transaction with its tokens' hashes, the event.
        let token = Self.tokenPrefix + random.token(byteCount: 32)
        let statusToken = Self.statusTokenPrefix + random.token(byteCount: 32)
        let transaction = OutOfBandTransaction(
            id: random.uuid(), userID: user.id, operation: operation, tokenHash: Self.hash(token), statusTokenHash: Self.hash(statusToken),
            message: operation == .authentication ? (request.message ?? "Approve the sign-in?") : nil, state: .pending, requestedBy: requestedBy,
            createdAt: now, expiresAt: now.adding(seconds: settings.tokenLifetime))
        let events = [
            created.map { SecurityEvent.now(.userRegistered, actor: requestedBy, userID: $0.id, detail: "out-of-band", clock: clock, random: random) },
            SecurityEvent.now(
                .outOfBandRequested, actor: requestedBy, userID: user.id, detail: "\(operation.rawValue) \(transaction.id)", clock: clock, random: random),
        ].compactMap { $0 }
        let newUser = created
        do {
            try await store.write { unit in
                if let newUser { unit.insertUser(newUser, ifTaken: Refusal.taken) }
                unit.insertOutOfBandTransaction(transaction, ifTaken: Refusal.unavailable)
                for event in events { unit.record(event) }
            }
        } catch Refusal.taken {
            throw LatchError(.alreadyRegistered, "a user with this id or username exists")
        } catch Refusal.unavailable {
            throw LatchError.notFound("no such user")
        }
        // Step 5. The payload, the link and its QR code.
        let payload = OutOfBandPayload(token: token, redeemURL: settings.issuer + "/v1/oob/redeem/" + operation.rawValue)
        let link = settings.issuer + "/open?payload=" + payload.encoded
        let code: QRCode
        do {
            code = try QRCode(Array(link.utf8), errorCorrection: .medium)
        } catch {
            throw LatchError.invalidInput("the link does not fit a QR code: \(error)")
        }
        let qr = OutOfBandEnrollmentResponse.QRCode(
            type: "image/png", size: (code.size + 2 * settings.qrBorder) * settings.qrScale, dataUri: code.dataURI(scale: settings.qrScale, border: settings.qrBorder))
        logger.info("out-of-band transaction", metadata: ["user": "\(user.id)", "operation": "\(operation.rawValue)", "transaction": "\(transaction.id)"])
        return OutOfBandEnrollmentResponse(
            userId: user.id, username: user.username, status: "pending",
            enrollment: .init(
                transactionId: transaction.id, statusToken: statusToken, operation: operation.rawValue, expiresAt: transaction.expiresAt, qrCode: qr,
                appLinkUri: link))
    }

    static func hash(_ token: String) -> Data { Data(SHA256.hash(data: Array(token.utf8))) }

    // MARK: Redeem

    /// `POST /v1/oob/redeem/{operation} {token}`: redeems the token once and starts the operation's ceremony:
    /// `{operation, transactionId, userId, username, ceremonyId, publicKey, message?}`.
    ///
    /// - Step 1. The token names a transaction (`oob_token_unknown`) of this operation (`oob_wrong_operation`), not
    ///   redeemed (`oob_token_redeemed`) nor expired (`oob_token_expired`); these refusals write nothing.
    /// - Step 2. One compare-and-set redeems it (a concurrent redeem on any replica wins once; the loser is told
    ///   which of redeemed or expired it met).
    /// - Step 3. The ceremony, bound to the user and the transaction.
    public func redeem(_ operationName: String, token: String) async throws -> JSONValue {
        guard let operation = OutOfBandTransaction.Operation(rawValue: operationName) else {
            throw LatchError.notFound("no such out-of-band operation")
        }
        // Step 1.
        guard token.utf8.count <= 200, token.hasPrefix(Self.tokenPrefix), let transaction = try await store.outOfBandTransaction(tokenHash: Self.hash(token))
        else { throw LatchError(.oobTokenUnknown, "no out-of-band transaction has this token") }
        let now = clock.seconds()
        try Self.checkRedeemable(transaction, operation: operation, now: now)
        // Step 2.
        do {
            try await store.write { $0.redeemOutOfBandTransaction(id: transaction.id, at: now, ifUnavailable: Refusal.unavailable) }
        } catch Refusal.unavailable {
            try Self.checkRedeemable(try await store.outOfBandTransaction(id: transaction.id) ?? transaction, operation: operation, now: clock.seconds())
            throw LatchError(.oobTokenRedeemed, "this token was redeemed before")
        }
        // Step 3.
        guard let user = try await store.user(id: transaction.userID) else { throw LatchError(.oobTokenUnknown, "the transaction's user is gone") }
        let authenticators = try await store.authenticators(userID: user.id)
        let (ceremonyID, challenge) = fido.ceremonies.begin(.outOfBand, userID: user.id, bound: transaction.id, random: random, now: now)
        let options: JSONValue
        switch operation {
        case .registration:
            options = fido.creationOptions(ceremonyID: ceremonyID, challenge: challenge, userID: user.id, username: user.username, exclude: authenticators)
        case .authentication, .deregistration:
            options = fido.requestOptions(ceremonyID: ceremonyID, challenge: challenge, allow: authenticators)
        }
        var answer: [String: JSONValue] = [
            "operation": .string(operation.rawValue), "transactionId": .string(transaction.id), "userId": .string(user.id),
            "username": .string(user.username), "ceremonyId": options["ceremonyId"] ?? .null, "publicKey": options["publicKey"] ?? .null,
        ]
        if let message = transaction.message { answer["message"] = .string(message) }
        return .object(answer)
    }

    static func checkRedeemable(_ transaction: OutOfBandTransaction, operation: OutOfBandTransaction.Operation, now: Int64) throws(LatchError) {
        guard transaction.operation == operation else {
            throw LatchError(.oobWrongOperation, "this token is for \(transaction.operation.rawValue), not \(operation.rawValue)")
        }
        guard transaction.state == .pending else { throw LatchError(.oobTokenRedeemed, "this token was redeemed before") }
        guard now < transaction.expiresAt else { throw LatchError(.oobTokenExpired, "this token has expired; ask for a new enrollment") }
    }

    // MARK: Completion

    /// The redeemed transaction `ceremonyID` belongs to, for `operation`.
    func redeemed(_ ceremonyID: String, _ operation: OutOfBandTransaction.Operation, now: Int64) async throws
        -> (FidoCeremonies.Ceremony, OutOfBandTransaction)
    {
        let ceremony = try fido.ceremonies.checkRequest(ceremonyID, .outOfBand, now: now)
        guard let id = ceremony.bound, let transaction = try await store.outOfBandTransaction(id: id), transaction.userID == ceremony.userID,
            transaction.operation == operation
        else { throw LatchError.invalidInput("this ceremony is not one of an out-of-band \(operation.rawValue)") }
        guard transaction.state == .redeemed else { throw LatchError.invalidInput("this out-of-band transaction is over (\(transaction.state.rawValue))") }
        return (ceremony, transaction)
    }

    /// Runs `body`; when the relying party refuses, ends the transaction as `failed` and rethrows.
    func failing<T>(_ transaction: OutOfBandTransaction, now: Int64, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as LatchError {
            let event = SecurityEvent.now(
                .outOfBandCompleted, actor: "user", userID: transaction.userID, detail: "failed \(transaction.id)", clock: clock, random: random)
            _ = try await store.succeeds { unit, refusal in
                unit.completeOutOfBandTransaction(id: transaction.id, state: .failed, authenticatorID: nil, at: now, ifUnavailable: refusal)
                unit.record(event)
            }
            throw error
        }
    }

    func completed(_ transaction: OutOfBandTransaction, _ state: OutOfBandTransaction.State) -> SecurityEvent {
        SecurityEvent.now(
            .outOfBandCompleted, actor: "user", userID: transaction.userID, detail: "\(state.rawValue) \(transaction.id)", clock: clock, random: random)
    }

    /// `POST /v1/oob/registration {ceremonyId, credential, name?}`: the redeeming device's new authenticator joins the
    /// user; the transaction succeeds with its id.
    public func completeRegistration(ceremonyID: String, credential: JSONValue, name: String?) async throws -> FidoAuthenticatorInfo {
        let now = clock.seconds()
        let (ceremony, transaction) = try await redeemed(ceremonyID, .registration, now: now)
        let authenticator = try await failing(transaction, now: now) {
            try await fido.verifyNewCredential(credential, challenge: ceremony.challenge, userID: transaction.userID, name: name, now: now)
        }
        let events = [
            SecurityEvent.now(.authenticatorRegistered, actor: "user", userID: transaction.userID, detail: "out-of-band \(authenticator.format)", clock: clock, random: random),
            completed(transaction, .succeeded),
        ]
        do {
            try await store.write { unit in
                unit.consume(ceremony.consumes, ifUnavailable: Refusal.unavailable)
                unit.completeOutOfBandTransaction(id: transaction.id, state: .succeeded, authenticatorID: authenticator.id, at: now, ifUnavailable: Refusal.unavailable)
                unit.insertAuthenticator(authenticator, ifTaken: Refusal.taken)
                for event in events { unit.record(event) }
            }
        } catch Refusal.unavailable {
            throw LatchError.invalidInput("this ceremony was completed before")
        } catch Refusal.taken {
            throw LatchError(.conflict, "this credential is registered already")
        }
        return fido.info(authenticator)
    }

    /// `POST /v1/oob/authentication {ceremonyId, credential}`: the user approves with an authenticator (a wrong PIN is
    /// counted and fails the approval).
    public func approve(ceremonyID: String, credential: JSONValue) async throws -> OutOfBandStatus {
        let now = clock.seconds()
        let (ceremony, transaction) = try await redeemed(ceremonyID, .authentication, now: now)
        let checked = try await failing(transaction, now: now) { try await fido.checkAssertion(credential, ceremony: ceremony, now: now, code: nil) }
        let event = completed(transaction, .approved)
        let use = checked.use
        do {
            try await store.write { unit in
                unit.consume(ceremony.consumes, ifUnavailable: Refusal.unavailable)
                unit.completeOutOfBandTransaction(id: transaction.id, state: .approved, authenticatorID: use.id, at: now, ifUnavailable: Refusal.unavailable)
                unit.recordAuthenticatorUse(id: use.id, signCount: use.signCount, failedAttempts: use.failedAttempts, at: now, ifChanged: Refusal.taken)
                unit.record(event)
            }
        } catch Refusal.unavailable {
            await fido.releaseVerifiedPinAttempt(checked)
            throw LatchError.invalidInput("this ceremony was completed before")
        } catch Refusal.taken {
            await fido.releaseVerifiedPinAttempt(checked)
            throw LatchError(.webauthnCounterRegressed, "the authenticator was used concurrently; approve again")
        }
        return OutOfBandStatus(status: "approved", transactionId: transaction.id, operation: transaction.operation.rawValue, authenticatorId: use.id)
    }

    /// `POST /v1/oob/deny {ceremonyId}`: the user declines the approval.
    public func deny(ceremonyID: String) async throws -> OutOfBandStatus {
        let now = clock.seconds()
        let (ceremony, transaction) = try await redeemed(ceremonyID, .authentication, now: now)
        let event = completed(transaction, .denied)
        guard try await store.succeeds({ unit, refusal in
            unit.consume(ceremony.consumes, ifUnavailable: refusal)
            unit.completeOutOfBandTransaction(id: transaction.id, state: .denied, authenticatorID: nil, at: now, ifUnavailable: refusal)
            unit.record(event)
        }) else { throw LatchError.invalidInput("this ceremony was completed before") }
        return OutOfBandStatus(status: "denied", transactionId: transaction.id, operation: transaction.operation.rawValue)
    }

    /// `POST /v1/oob/deregistration {ceremonyId, credential}`: the authenticator that signs is deleted.
    public func completeDeregistration(ceremonyID: String, credential: JSONValue) async throws -> OutOfBandStatus {
        let now = clock.seconds()
        let (ceremony, transaction) = try await redeemed(ceremonyID, .deregistration, now: now)
        let checked = try await failing(transaction, now: now) { try await fido.checkAssertion(credential, ceremony: ceremony, now: now, code: nil) }
        let id = checked.authenticator.id
        let events = [
            SecurityEvent.now(.authenticatorDeleted, actor: "user", userID: transaction.userID, detail: "out-of-band \(id)", clock: clock, random: random),
            completed(transaction, .succeeded),
        ]
        do {
            try await store.write { unit in
                unit.consume(ceremony.consumes, ifUnavailable: Refusal.unavailable)
                unit.completeOutOfBandTransaction(id: transaction.id, state: .succeeded, authenticatorID: id, at: now, ifUnavailable: Refusal.unavailable)
                unit.deleteAuthenticator(id: id, userID: transaction.userID, ifMissing: Refusal.taken)
                for event in events { unit.record(event) }
            }
        } catch Refusal.unavailable {
            throw LatchError.invalidInput("this ceremony was completed before")
        } catch Refusal.taken {
            throw LatchError.notFound("the authenticator was deleted meanwhile")
        }
        return OutOfBandStatus(status: "succeeded", transactionId: transaction.id, operation: transaction.operation.rawValue, authenticatorId: id)
    }

    // MARK: Status

    /// `POST /v1/oob/status {statusToken}`: `pending` (with `redeemed`), `succeeded`, `failed`, `approved`, `denied`,
    /// `expired`, or `unknown` for a status token no transaction has.
    public func status(statusToken: String) async throws -> OutOfBandStatus {
        guard statusToken.utf8.count <= 200, statusToken.hasPrefix(Self.statusTokenPrefix),
            let transaction = try await store.outOfBandTransaction(statusTokenHash: Self.hash(statusToken))
        else { return OutOfBandStatus(status: "unknown") }
        let now = clock.seconds()
        let status: String
        switch transaction.state {
        case .pending: status = now < transaction.expiresAt ? "pending" : "expired"
        case .redeemed: status = now < max(transaction.expiresAt, (transaction.redeemedAt ?? 0).adding(seconds: fido.ceremonies.lifetime)) ? "pending" : "expired"
        default: status = transaction.state.rawValue
        }
        return OutOfBandStatus(
            status: status, transactionId: transaction.id, operation: transaction.operation.rawValue, redeemed: transaction.state != .pending,
            authenticatorId: transaction.authenticatorID, expiresAt: transaction.expiresAt)
    }
}
