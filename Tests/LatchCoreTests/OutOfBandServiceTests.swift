import Crypto
import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// Out-of-band transactions on the in-memory store: enrollment's input rules (each refusal writes nothing), the redeem
/// token's single use and expiry with their own codes, the state machine `pending → redeemed → succeeded / failed /
/// approved / denied` (a second completion refused), and the status a backend polls — with real WebAuthn bytes.
@Suite("OutOfBandService on the in-memory store")
struct OutOfBandServiceTests {
    let engines: Engines
    let fido: FidoService
    let oob: OutOfBandService

    init() async throws {
        engines = try await Engines.make()
        fido = engines.fido()
        oob = OutOfBandService(
            store: engines.store, fido: fido, settings: OutOfBandService.Settings(issuer: "https://latch.test"), clock: engines.clock.clock,
            random: engines.random)
    }

    /// An enrollment by the backend (`admin`).
    func enroll(_ userID: String, createUser: Bool? = nil, operation: String? = nil, message: String? = nil) async throws -> OutOfBandEnrollmentResponse {
        try await oob.enroll(
            userID: userID, OutOfBandEnrollmentRequest(createUser: createUser, operation: operation, message: message), requestedBy: "admin")
    }

    /// The redeem token an enrollment's app link carries.
    static func token(_ enrollment: OutOfBandEnrollmentResponse) throws -> String {
        try OutOfBandPayload(decoding: enrollment.enrollment.appLinkUri).data.token
    }

    func transaction(_ enrollment: OutOfBandEnrollmentResponse) async throws -> OutOfBandTransaction {
        try #require(try await engines.store.outOfBandTransaction(id: enrollment.enrollment.transactionId))
    }

    func status(_ enrollment: OutOfBandEnrollmentResponse) async throws -> OutOfBandStatus {
        try await oob.status(statusToken: enrollment.enrollment.statusToken)
    }

    /// A new user `userID` whose phone registered out-of-band; returns the phone.
    func enrolled(_ userID: String, pin: Bool = false) async throws -> TestWebAuthnAuthenticator {
        let enrollment = try await enroll(userID, createUser: true)
        let redeemed = try await oob.redeem("registration", token: try Self.token(enrollment))
        let phone = engines.authenticator(pin: pin)
        _ = try await oob.completeRegistration(
            ceremonyID: try #require(redeemed["ceremonyId"]?.stringValue), credential: phone.register(challenge: try challenge(of: redeemed)), name: "phone")
        return phone
    }

    // MARK: Enrollment

    @Test("An enrollment creates the user and a pending transaction holding only the tokens' SHA-256, expiring after the lifetime")
    func enrollment() async throws {
        let enrollment = try await enroll("customer-1", createUser: true)
        #expect(enrollment.userId == "customer-1" && enrollment.username == "customer-1" && enrollment.status == "pending")
        #expect(enrollment.enrollment.operation == "registration" && enrollment.enrollment.expiresAt == engines.now + 600)
        let token = try Self.token(enrollment)
        #expect(token.hasPrefix("lot_") && enrollment.enrollment.statusToken.hasPrefix("los_"))
        let stored = try await transaction(enrollment)
        #expect(stored.state == .pending && stored.requestedBy == "admin" && stored.message == nil)
        #expect(stored.tokenHash == Data(SHA256.hash(data: Data(token.utf8))))
        #expect(stored.statusTokenHash == Data(SHA256.hash(data: Data(enrollment.enrollment.statusToken.utf8))))
        #expect(try await engines.store.user(id: "customer-1")?.kind == .webauthn)
        #expect(try await status(enrollment) == OutOfBandStatus(status: "pending", transactionId: stored.id, operation: "registration", redeemed: false, expiresAt: stored.expiresAt))
        let recorded = try await engines.store.auditRecords(matching: AuditQuery(subject: "customer-1")).map(\.event.kind.rawValue)
        #expect(recorded.sorted() == ["oob.requested", "user.registered"])
    }

    @Test("Enrollment refusals each have their code and write nothing (no user, no transaction)")
    func enrollmentRefusals() async throws {
        _ = try await enrolled("existing")
        let before = engines.rowCounts
        await expectCode(.notFound) { _ = try await enroll("nobody") }
        // Only the backend creates users.
        await expectCode(.notFound) {
            _ = try await oob.enroll(userID: "nobody", OutOfBandEnrollmentRequest(createUser: true), requestedBy: "user")
        }
        await expectCode(.invalidInput) { _ = try await enroll("nobody", createUser: true, operation: "authentication") }
        await expectCode(.invalidInput) { _ = try await enroll("existing", operation: "teleport") }
        await expectCode(.invalidInput) { _ = try await enroll("existing", message: "hello") }
        await expectCode(.invalidInput) { _ = try await enroll("existing", operation: "authentication", message: "") }
        await expectCode(.invalidInput) { _ = try await enroll("existing", operation: "authentication", message: "bell \u{7}") }
        await expectCode(.invalidInput) { _ = try await enroll("existing", operation: "authentication", message: String(repeating: "x", count: 1_001)) }
        await expectCode(.alreadyRegistered) { _ = try await enroll("existing", createUser: true) }
        await expectCode(.invalidInput) {
            _ = try await oob.enroll(userID: "existing", OutOfBandEnrollmentRequest(username: "other"), requestedBy: "admin")
        }
        await expectCode(.invalidInput) { _ = try await enroll(String(repeating: "a", count: 129), createUser: true) }
        // A user without authenticators has nothing to approve or deregister with.
        _ = try await engines.addUser("bare")
        let withBare = engines.rowCounts
        await expectCode(.conflict) { _ = try await enroll("bare", operation: "authentication") }
        await expectCode(.conflict) { _ = try await enroll("bare", operation: "deregistration") }
        #expect(engines.rowCounts == withBare && withBare[.users] == (before[.users] ?? 0) + 1)
        #expect(try await engines.store.user(id: "nobody") == nil)
    }

    @Test("A user at the most authenticators cannot be enrolled for another registration (conflict)")
    func registrationLimit() async throws {
        _ = try await enrolled("u1")
        let limited = OutOfBandService(
            store: engines.store, fido: engines.fido { $0.maximumAuthenticatorsPerUser = 1 }, settings: .init(issuer: "https://latch.test"),
            clock: engines.clock.clock, random: engines.random)
        await expectCode(.conflict) { _ = try await limited.enroll(userID: "u1", OutOfBandEnrollmentRequest(), requestedBy: "admin") }
    }

    // MARK: Redeem

    @Test("Redeem refusals: unknown token, wrong operation, unknown operation — none changes the transaction")
    func redeemRefusals() async throws {
        let enrollment = try await enroll("c1", createUser: true)
        let token = try Self.token(enrollment)
        await expectCode(.oobTokenUnknown) { _ = try await oob.redeem("registration", token: "lot_unknown") }
        await expectCode(.oobTokenUnknown) { _ = try await oob.redeem("registration", token: String(token.dropFirst(4))) }
        await expectCode(.oobWrongOperation) { _ = try await oob.redeem("authentication", token: token) }
        await expectCode(.notFound) { _ = try await oob.redeem("teleport", token: token) }
        #expect(try await transaction(enrollment).state == .pending)
        #expect(try await status(enrollment).redeemed == false)
    }

    @Test("A token redeems once: the second redeem is oob_token_redeemed; the answer starts an out-of-band ceremony for the user")
    func redeemOnce() async throws {
        let enrollment = try await enroll("c1", createUser: true)
        let token = try Self.token(enrollment)
        let redeemed = try await oob.redeem("registration", token: token)
        #expect(redeemed["operation"] == "registration" && redeemed["userId"] == "c1" && redeemed["transactionId"] == .string(enrollment.enrollment.transactionId))
        #expect(redeemed["publicKey"]?["user"]?["id"] == .string(Base64URL.encode(Data("c1".utf8))))
        let stored = try await transaction(enrollment)
        #expect(stored.state == .redeemed && stored.redeemedAt == engines.now)
        await expectCode(.oobTokenRedeemed) { _ = try await oob.redeem("registration", token: token) }
        let polled = try await status(enrollment)
        #expect(polled.status == "pending" && polled.redeemed == true)
    }

    @Test("Past the token lifetime (600 s, its last second excluded) the redeem is oob_token_expired and the status expired")
    func redeemExpired() async throws {
        let enrollment = try await enroll("c1", createUser: true)
        engines.clock.advance(by: 599)
        #expect(try await status(enrollment).status == "pending")
        engines.clock.advance(by: 1)
        await expectCode(.oobTokenExpired) { _ = try await oob.redeem("registration", token: try Self.token(enrollment)) }
        #expect(try await status(enrollment).status == "expired")
        #expect(try await transaction(enrollment).state == .pending)
    }

    @Test("Status tokens no transaction has answer unknown, whatever their shape")
    func unknownStatus() async throws {
        for token in ["los_nothing", "lot_wrongprefix", "", String(repeating: "x", count: 300)] {
            #expect(try await oob.status(statusToken: token) == OutOfBandStatus(status: "unknown"))
        }
    }

    // MARK: Registration

    @Test("Registration completes: the authenticator joins the user, the transaction succeeds with its id; a second completion is refused")
    func registration() async throws {
        let enrollment = try await enroll("c1", createUser: true)
        let redeemed = try await oob.redeem("registration", token: try Self.token(enrollment))
        let ceremonyID = try #require(redeemed["ceremonyId"]?.stringValue)
        let phone = engines.authenticator()
        let credential = phone.register(challenge: try challenge(of: redeemed))
        let info = try await oob.completeRegistration(ceremonyID: ceremonyID, credential: credential, name: "phone")
        #expect(info.name == "phone" && info.credentialId == phone.credentialIDString)
        #expect(try await engines.store.authenticators(userID: "c1").map(\.id) == [info.id])
        let done = try await transaction(enrollment)
        #expect(done.state == .succeeded && done.authenticatorID == info.id && done.completedAt == engines.now)
        #expect(try await status(enrollment).status == "succeeded")
        await expectCode(.invalidInput) { _ = try await oob.completeRegistration(ceremonyID: ceremonyID, credential: credential, name: nil) }
        #expect(try await transaction(enrollment).state == .succeeded)
    }

    @Test("A registration the relying party refuses ends the transaction failed, stores no authenticator, and cannot be retried")
    func registrationFails() async throws {
        let enrollment = try await enroll("c1", createUser: true)
        let redeemed = try await oob.redeem("registration", token: try Self.token(enrollment))
        let ceremonyID = try #require(redeemed["ceremonyId"]?.stringValue)
        let phone = engines.authenticator()
        // Another challenge than the ceremony's.
        await expectCode(.webauthnClientDataInvalid) {
            _ = try await oob.completeRegistration(
                ceremonyID: ceremonyID, credential: phone.register(challenge: Base64URL.encode(Data(repeating: 1, count: 32))), name: nil)
        }
        #expect(try await transaction(enrollment).state == .failed)
        #expect(try await status(enrollment).status == "failed")
        #expect(try await engines.store.authenticators(userID: "c1").isEmpty)
        await expectCode(.invalidInput) {
            _ = try await oob.completeRegistration(ceremonyID: ceremonyID, credential: phone.register(challenge: try challenge(of: redeemed)), name: nil)
        }
        let outcomes = try await engines.store.auditRecords(matching: AuditQuery(kinds: ["oob.completed"])).map(\.event.detail)
        #expect(outcomes == ["failed \(enrollment.enrollment.transactionId)"])
    }

    @Test("Ceremonies that are not this transaction's are refused: a plain FIDO registration's, an expired one; nothing changes")
    func foreignCeremonies() async throws {
        let enrollment = try await enroll("c1", createUser: true)
        let redeemed = try await oob.redeem("registration", token: try Self.token(enrollment))
        let user = try #require(try await engines.store.user(id: "c1"))
        let plain = try await fido.registrationOptions(for: user)
        let phone = engines.authenticator()
        await expectCode(.invalidInput) {
            _ = try await oob.completeRegistration(
                ceremonyID: try #require(plain["ceremonyId"]?.stringValue), credential: phone.register(challenge: try challenge(of: plain)), name: nil)
        }
        // The redeemed transaction stays pending for the ceremony's lifetime (300 s after the redeem), then expires.
        engines.clock.advance(by: 300)
        await expectCode(.invalidInput) {
            _ = try await oob.completeRegistration(
                ceremonyID: try #require(redeemed["ceremonyId"]?.stringValue), credential: phone.register(challenge: try challenge(of: redeemed)), name: nil)
        }
        #expect(try await transaction(enrollment).state == .redeemed)
        #expect(try await status(enrollment).status == "pending", "the token's own 600 s are not over")
        engines.clock.advance(by: 300)
        #expect(try await status(enrollment).status == "expired")
        #expect(try await engines.store.authenticators(userID: "c1").isEmpty)
    }

    // MARK: Approval

    @Test("An approval shows its message, is approved by the user's authenticator (the counter moves), and completes once")
    func approval() async throws {
        let phone = try await enrolled("c1")
        let enrollment = try await enroll("c1", operation: "authentication", message: "Pay 10 EUR?")
        #expect(try await transaction(enrollment).message == "Pay 10 EUR?")
        let redeemed = try await oob.redeem("authentication", token: try Self.token(enrollment))
        #expect(redeemed["message"] == "Pay 10 EUR?")
        #expect(redeemed["publicKey"]?["allowCredentials"]?.arrayValue?.count == 1)
        let ceremonyID = try #require(redeemed["ceremonyId"]?.stringValue)
        let credential = try phone.assertion(challenge: try challenge(of: redeemed), userHandle: nil)
        let approved = try await oob.approve(ceremonyID: ceremonyID, credential: credential)
        let authenticator = try #require(try await engines.store.authenticators(userID: "c1").first)
        #expect(approved == OutOfBandStatus(status: "approved", transactionId: enrollment.enrollment.transactionId, operation: "authentication", authenticatorId: authenticator.id))
        #expect(authenticator.signCount == phone.counter && authenticator.lastUsedAt == engines.now)
        #expect(try await status(enrollment).status == "approved")
        await expectCode(.invalidInput) { _ = try await oob.approve(ceremonyID: ceremonyID, credential: credential) }
        await expectCode(.invalidInput) { _ = try await oob.deny(ceremonyID: ceremonyID) }
        #expect(try await transaction(enrollment).state == .approved)
    }

    @Test("An approval without a message asks the default question")
    func defaultMessage() async throws {
        _ = try await enrolled("c1")
        let enrollment = try await enroll("c1", operation: "authentication")
        #expect(try await transaction(enrollment).message == "Approve the sign-in?")
    }

    @Test("A denial ends the approval denied; the ceremony then approves nothing")
    func denial() async throws {
        let phone = try await enrolled("c1")
        let enrollment = try await enroll("c1", operation: "authentication")
        let redeemed = try await oob.redeem("authentication", token: try Self.token(enrollment))
        let ceremonyID = try #require(redeemed["ceremonyId"]?.stringValue)
        #expect(try await oob.deny(ceremonyID: ceremonyID).status == "denied")
        await expectCode(.invalidInput) { _ = try await oob.approve(ceremonyID: ceremonyID, credential: try phone.assertion(challenge: try challenge(of: redeemed), userHandle: nil)) }
        #expect(try await status(enrollment).status == "denied")
        #expect(try await engines.store.authenticators(userID: "c1").first?.signCount == 0)
    }

    @Test("A registration's ceremony cannot approve or deny, nor an approval's register: each completion checks its operation")
    func operationsDoNotMix() async throws {
        let phone = try await enrolled("c1")
        let enrollment = try await enroll("c1", operation: "authentication")
        let redeemed = try await oob.redeem("authentication", token: try Self.token(enrollment))
        let ceremonyID = try #require(redeemed["ceremonyId"]?.stringValue)
        await expectCode(.invalidInput) {
            _ = try await oob.completeRegistration(ceremonyID: ceremonyID, credential: engines.authenticator().register(challenge: try challenge(of: redeemed)), name: nil)
        }
        await expectCode(.invalidInput) {
            _ = try await oob.completeDeregistration(ceremonyID: ceremonyID, credential: try phone.assertion(challenge: try challenge(of: redeemed), userHandle: nil))
        }
        #expect(try await transaction(enrollment).state == .redeemed)
    }

    @Test("A wrong PIN fails the approval: pin_attempt_failed, counted on the authenticator, the transaction failed")
    func wrongPinFailsApproval() async throws {
        let phone = try await enrolled("c1", pin: true)
        let enrollment = try await enroll("c1", operation: "authentication")
        let redeemed = try await oob.redeem("authentication", token: try Self.token(enrollment))
        phone.signWith = P256.Signing.PrivateKey()
        let refused = await FidoServiceTests.refusal(.pinAttemptFailed) {
            _ = try await oob.approve(
                ceremonyID: try #require(redeemed["ceremonyId"]?.stringValue), credential: try phone.assertion(challenge: try challenge(of: redeemed), userHandle: nil))
        }
        #expect(refused?.members["pinStatus"]?["remainingTries"] == 4)
        #expect(try await engines.store.authenticators(userID: "c1").first?.failedAttempts == 1)
        #expect(try await status(enrollment).status == "failed")
    }

    // MARK: Deregistration

    @Test("Deregistration deletes the authenticator that signs; the transaction succeeds with its id")
    func deregistration() async throws {
        let phone = try await enrolled("c1")
        let id = try #require(try await engines.store.authenticators(userID: "c1").first?.id)
        let enrollment = try await enroll("c1", operation: "deregistration")
        let redeemed = try await oob.redeem("deregistration", token: try Self.token(enrollment))
        let ceremonyID = try #require(redeemed["ceremonyId"]?.stringValue)
        let credential = try phone.assertion(challenge: try challenge(of: redeemed), userHandle: nil)
        let done = try await oob.completeDeregistration(ceremonyID: ceremonyID, credential: credential)
        #expect(done.status == "succeeded" && done.authenticatorId == id)
        #expect(try await engines.store.authenticators(userID: "c1").isEmpty)
        await expectCode(.invalidInput) { _ = try await oob.completeDeregistration(ceremonyID: ceremonyID, credential: credential) }
    }

    @Test("A deregistration signed by another user's authenticator is refused, fails the transaction and deletes nothing")
    func deregistrationByStranger() async throws {
        _ = try await enrolled("c1")
        let stranger = try await enrolled("c2")
        let enrollment = try await enroll("c1", operation: "deregistration")
        let redeemed = try await oob.redeem("deregistration", token: try Self.token(enrollment))
        await expectCode(.webauthnClientDataInvalid) {
            _ = try await oob.completeDeregistration(
                ceremonyID: try #require(redeemed["ceremonyId"]?.stringValue), credential: try stranger.assertion(challenge: try challenge(of: redeemed), userHandle: nil))
        }
        #expect(try await engines.store.authenticators(userID: "c1").count == 1)
        #expect(try await engines.store.authenticators(userID: "c2").count == 1)
        #expect(try await transaction(enrollment).state == .failed)
    }
}
