import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

@Suite("Registration")
struct RegistrationServiceTests {
    @Test("registrationId is an idempotency key: same proof → same user; another identity → registration_conflict")
    func idempotency() async throws {
        let engines = try await Engines.make()
        try await engines.addIssuer()
        let request = RegistrationRequest(challengeType: .fsso, answer: try engines.federated(), registrationId: "reg-1")
        let first = try await engines.registration().register(request)
        let again = try await engines.registration().register(request)
        #expect(again == first)
        await expectCode(.registrationConflict) {
            _ = try await engines.registration().register(RegistrationRequest(challengeType: .fsso, answer: try engines.federated("bob"), registrationId: "reg-1"))
        }
        #expect(engines.store.count(.users) == 1 && engines.store.count(.registrations) == 1)
    }

    @Test("A retry with a freshly minted token for the same identity answers the same user; the new token is spent by it")
    func retryWithFreshToken() async throws {
        let engines = try await Engines.make()
        try await engines.addIssuer()
        let first = try await engines.registration().register(RegistrationRequest(challengeType: .fsso, answer: try engines.federated(), registrationId: "reg-1"))
        let fresh = RegistrationRequest(challengeType: .fsso, answer: try engines.federated(jti: "fresh"), registrationId: "reg-1")
        #expect(try await engines.registration().register(fresh) == first)
        #expect(engines.store.count(.users) == 1)
        // The fresh token was spent by the retry: the same request again is a replay.
        await expectCode(.invalidProof) { _ = try await engines.registration().register(fresh) }
        // A forged token for the same identity is still refused before the identity is compared.
        let forged = try Assertions.federated(issuer: "acme", keyID: "k1", subject: "alice", now: engines.now).sign(with: TestKeys.rsa2)
        await expectCode(.invalidProof) {
            _ = try await engines.registration().register(RegistrationRequest(challengeType: .fsso, answer: forged, registrationId: "reg-1"))
        }
    }

    @Test("Device proofs: a retry with a new test token (new sub) and the same public key is the same user; another key is a conflict")
    func retryDeviceKey() async throws {
        let engines = try await Engines.make()
        let first = try await engines.registerDevice("bob-1", registrationID: "reg-d")
        // The SDK's test provider mints `<name>-<uuid>` per call: the retry carries another sub.
        let retried = try await engines.registerDevice("bob-2", registrationID: "reg-d")
        #expect(retried == first && retried.username == "bob-1")
        let otherKey = RegistrationPublicKey(keyId: "device-1", algorithm: "ES256", publicKey: TestKeys.p256b.publicKey.pemRepresentation)
        let token = try Assertions.testRegistration(keyID: "register_key", subject: "bob-3", now: engines.now).sign(with: TestKeys.p256b)
        await expectCode(.registrationConflict) {
            _ = try await engines.registration().register(
                RegistrationRequest(challengeType: .test, answer: token, registrationId: "reg-d", publicKey: otherKey))
        }
        #expect(engines.store.count(.users) == 1)
    }

    @Test("A taken username is already_registered; a replayed proof is invalid_proof; neither writes anything")
    func refusals() async throws {
        let engines = try await Engines.make()
        try await engines.addIssuer()
        let answer = try engines.federated()
        _ = try await engines.registration().register(RegistrationRequest(challengeType: .fsso, answer: answer))
        let before = engines.rowCounts
        await expectCode(.alreadyRegistered) {
            _ = try await engines.registration().register(RegistrationRequest(challengeType: .fsso, answer: try engines.federated()))
        }
        try await engines.registerDevice("bob")
        let afterBob = engines.rowCounts
        #expect(afterBob[.users] == before[.users]! + 1)
        // The same test registration token again, for a new username: the jti was spent.
        let token = try Assertions.testRegistration(keyID: "register_key", subject: "carol", now: engines.now, jti: "spent").sign(with: TestKeys.p256b)
        let key = RegistrationPublicKey(keyId: "device-1", algorithm: "ES256", publicKey: TestKeys.p256.publicKey.pemRepresentation)
        _ = try await engines.registration().register(RegistrationRequest(challengeType: .test, answer: token, publicKey: key))
        let replay = try Assertions.testRegistration(keyID: "register_key", subject: "dave", now: engines.now, jti: "spent").sign(with: TestKeys.p256b)
        let counts = engines.rowCounts
        await expectCode(.invalidProof) { _ = try await engines.registration().register(RegistrationRequest(challengeType: .test, answer: replay, publicKey: key)) }
        #expect(engines.rowCounts == counts)
        // Only the refusal is recorded.
        let last = try await engines.store.auditRecords(matching: AuditQuery(limit: 1)).first?.event
        #expect(last?.kind == .registrationFailed && last?.detail == "proof=TEST error=invalid_proof")
    }

    @Test("Proof types: a disabled one is challenge_type_disabled, a known one without a handler or an unknown one unsupported")
    func proofTypes() async throws {
        let engines = try await Engines.make()
        await expectCode(.challengeTypeDisabled) {
            _ = try await engines.registration(testKeys: false).register(RegistrationRequest(challengeType: .test, answer: "x"))
        }
        for type in [RegistrationMethod.deviceCheck, .appAttest, .playIntegrity, RegistrationMethod(rawValue: "NOPE")] {
            await expectCode(.unsupportedChallengeType) { _ = try await engines.registration().register(RegistrationRequest(challengeType: type, answer: "x")) }
        }
    }

    @Test("Shape checks come before any lookup: empty answer, bad registrationId, FSSO with a key, TEST without one")
    func shapes() async throws {
        let engines = try await Engines.make()
        let service = engines.registration()
        await expectCode(.invalidInput) { _ = try await service.register(RegistrationRequest(challengeType: .fsso, answer: "")) }
        await expectCode(.invalidInput) { _ = try await service.register(RegistrationRequest(challengeType: .fsso, answer: "x", registrationId: "has space")) }
        let key = RegistrationPublicKey(keyId: "k", algorithm: "ES256", publicKey: TestKeys.p256.publicKey.pemRepresentation)
        await expectCode(.invalidInput) { _ = try await service.register(RegistrationRequest(challengeType: .fsso, answer: "x", publicKey: key)) }
        await expectCode(.invalidInput) { _ = try await service.register(RegistrationRequest(challengeType: .test, answer: "x")) }
        await expectCode(.invalidPublicKey) {
            _ = try await service.register(
                RegistrationRequest(challengeType: .test, answer: "x", publicKey: RegistrationPublicKey(keyId: "k", algorithm: "HS256", publicKey: "x")))
        }
        await expectCode(.requestTooLarge) {
            _ = try await service.register(RegistrationRequest(challengeType: .fsso, answer: String(repeating: "a", count: 9000)))
        }
    }

    @Test("Ten concurrent registrations with one id and one proof create one user and all answer it")
    func concurrentTwins() async throws {
        let engines = try await Engines.make()
        try await engines.addIssuer()
        let request = RegistrationRequest(challengeType: .fsso, answer: try engines.federated(), registrationId: "twin")
        let service = engines.registration()
        let answers = try await withThrowingTaskGroup(of: RegistrationResponse.self) { group in
            for _ in 0..<10 { group.addTask { try await service.register(request) } }
            return try await group.reduce(into: [RegistrationResponse]()) { $0.append($1) }
        }
        #expect(Set(answers.map(\.userId)).count == 1 && engines.store.count(.users) == 1)
    }

    @Test("The proof hash binds type, answer and public key")
    func proofHash() {
        let key = RegistrationPublicKey(keyId: "k", algorithm: "ES256", publicKey: "p")
        let base = RegistrationRequest(challengeType: .test, answer: "a", publicKey: key)
        var otherKey = base
        otherKey.publicKey?.keyId = "k2"
        var otherType = base
        otherType.challengeType = .fsso
        let hashes = [base, otherKey, otherType].map(RegistrationService.Idempotency.proofHash)
        #expect(Set(hashes).count == 3)
        #expect(RegistrationService.Idempotency.sameProof(hashes[0], RegistrationService.Idempotency.proofHash(base)))
    }

    @Test("A registration records user.registered in its unit of work; a refused one records nothing; de-registration records user.deleted")
    func events() async throws {
        let engines = try await Engines.make()
        try await engines.addIssuer()
        let created = try await engines.registration().register(RegistrationRequest(challengeType: .fsso, answer: try engines.federated()))
        await expectCode(.alreadyRegistered) {
            _ = try await engines.registration().register(RegistrationRequest(challengeType: .fsso, answer: try engines.federated()))
        }
        // Written as unsealed records; sealed into the chain in the order they committed.
        #expect(try await engines.store.auditChain(after: 0, limit: 10).isEmpty)
        #expect(try await engines.store.sealAudit() == 2)
        let events = try await engines.store.auditChain(after: 0, limit: 10).map(\.event)
        // The refused second registration is recorded too, on its own.
        #expect(events.map(\.kind) == [.userRegistered, .registrationFailed])
        #expect(events.last?.detail == "proof=FSSO error=already_registered" && events.last?.actor == "anonymous")
        #expect(events.first?.userID == created.userId && events.first?.detail == "FSSO" && events.first?.actor == "user")
        let tokens = try await engines.signIn(assertion: try engines.federated())
        let caller = try await engines.accessTokens.authenticate(accessToken: tokens.accessToken)
        try await SessionService(store: engines.store, sensitiveMaxAge: 300, clock: engines.clock.clock, random: engines.random).deregister(caller)
        #expect(try await engines.store.sealAudit() == 2)
        #expect(
            try await engines.store.auditChain(after: 0, limit: 10).map(\.event.kind) == [
                .userRegistered, .registrationFailed, .signInSucceeded, .userDeleted,
            ])
        #expect(try await AuditChain().verify(engines.store).verified)
        #expect(try await engines.store.user(id: created.userId) == nil)
    }
}
