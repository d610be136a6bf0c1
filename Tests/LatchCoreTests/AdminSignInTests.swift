import Foundation
import LatchCore
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

/// Admin sign-in to the console on the in-memory store, with real WebAuthn passkeys: enrollment links (sealed, single
/// use, expiring, bound to their ceremony), discoverable sign-in (refusals recorded and answered `unauthorized`),
/// console sessions (idle timeout, absolute lifetime, sign-out, forged cookies), re-authentication and CSRF.
private struct AccountTaken: Error {}

@Suite("AdminSignIn on the in-memory store")
struct AdminSignInTests {
    static let issuer = "https://latch.test"

    let store = InMemoryStore()
    let clock = TestClock()
    let random = RandomSource.seeded(7)
    let authenticator: AdminTokenGate
    let signIn: AdminSignIn

    init() async throws {
        authenticator = AdminTokenGate(store: store, clock: clock.clock)
        _ = try await authenticator.bootstrap(configured: "an-environment-token-0123", random: random)
        signIn = AdminSignIn(
            store: store, authenticator: authenticator, settings: .defaults(issuer: Self.issuer),
            key: KeySealer.derivedKey(from: [UInt8](repeating: 4, count: 32), purpose: "console test"), clock: clock.clock, random: random)
    }

    var now: Int64 { clock.seconds }

    func passkey() -> TestWebAuthnAuthenticator { TestWebAuthnAuthenticator(rpID: "latch.test", origin: Self.issuer) }

    /// The ticket of a new enrollment link for `account`.
    func ticket(_ account: String = AdminAccount.rootID) async throws -> String {
        let link = try await signIn.enrollmentLink(accountID: account, issuer: Self.issuer + "/")
        #expect(link.url.hasPrefix(Self.issuer + "/console/enroll?ticket=") && link.expiresAt == now + 86_400)
        return try #require(URLComponents(string: link.url)?.queryItems?.first { $0.name == "ticket" }?.value)
    }

    /// Enrolls `device` with `ticket` through a fresh ceremony.
    func enroll(_ device: TestWebAuthnAuthenticator, ticket: String, name: String? = nil) async throws -> ConsoleSession {
        let options = try await signIn.enrollmentOptions(ticket: ticket)
        return try await signIn.enroll(
            ticket: ticket, ceremonyID: try #require(options["ceremonyId"]?.stringValue), credential: device.register(challenge: try challenge(of: options)),
            name: name)
    }

    /// Signs in with `device` (user handle `account` unless told otherwise), optionally re-authenticating `session`.
    func assert(
        _ device: TestWebAuthnAuthenticator, account: String = AdminAccount.rootID, reauthenticating session: ConsoleSession? = nil
    ) async throws -> ConsoleSession {
        let options = signIn.signInOptions()
        return try await signIn.signIn(
            ceremonyID: try #require(options["ceremonyId"]?.stringValue),
            credential: try device.assertion(challenge: try challenge(of: options), userHandle: Base64URL.encode(Data(account.utf8))),
            reauthenticating: session)
    }

    func session(_ cookie: String?) async throws -> Result<ConsoleSession, AdminSignIn.Refused> {
        try await signIn.session(cookie: try #require(cookie))
    }

    /// Why `cookie` is refused; nil when it opens a session.
    func refusal(_ cookie: String?) async throws -> AdminSignIn.Refused? {
        guard case .failure(let refused) = try await session(cookie) else { return nil }
        return refused
    }

    func failedSignIns() async throws -> Int {
        try await store.auditRecords(matching: AuditQuery(kinds: ["admin.console.signin_failed"])).count
    }

    // MARK: Enrollment

    @Test("An enrollment link registers one passkey and signs its admin in with a session token of the account's role")
    func enrollment() async throws {
        let ticket = try await ticket()
        #expect(try await signIn.enrollmentAccount(ticket: ticket).id == AdminAccount.rootID)
        let device = passkey()
        let session = try await enroll(device, ticket: ticket, name: "YubiKey")
        #expect(session.caller.accountID == AdminAccount.rootID && session.caller.role == .owner && session.caller.tokenID.hasPrefix("cs_"))
        #expect(session.recentlyAuthenticated && session.authenticatedAt == now && session.cookie != nil)
        let stored = try await signIn.passkeys(accountID: AdminAccount.rootID)
        #expect(stored.count == 1 && stored.first?.name == "YubiKey" && stored.first?.credentialID == Data(device.credentialID))
        let token = try #require(try await store.adminTokens().first { $0.id == session.caller.tokenID })
        #expect(token.expiresAt == now + 43_200 && token.accountID == AdminAccount.rootID)
        // The link is spent: shown as used, and a second enrollment (a new ceremony, another passkey) is refused.
        await expectCode(.invalidInput) { _ = try await signIn.enrollmentAccount(ticket: ticket) }
        await expectCode(.invalidInput) { _ = try await enroll(passkey(), ticket: ticket) }
        #expect(try await signIn.passkeys(accountID: AdminAccount.rootID).count == 1)
    }

    @Test("Enrollment links: unknown accounts get none; a forged or expired ticket is refused; a ceremony is bound to its link")
    func enrollmentRefusals() async throws {
        await expectCode(.notFound) { _ = try await signIn.enrollmentLink(accountID: "adm_nobody", issuer: Self.issuer) }
        await expectCode(.invalidInput) { _ = try await signIn.enrollmentOptions(ticket: "not-a-ticket") }
        let first = try await ticket()
        let second = try await ticket()
        #expect(first != second, "two links for one account are two tickets")
        // A ceremony begun for the first link cannot finish the second.
        let options = try await signIn.enrollmentOptions(ticket: first)
        let device = passkey()
        await expectCode(.invalidInput) {
            _ = try await signIn.enroll(
                ticket: second, ceremonyID: try #require(options["ceremonyId"]?.stringValue), credential: device.register(challenge: try challenge(of: options)),
                name: nil)
        }
        await expectCode(.invalidInput) {
            _ = try await signIn.enroll(
                ticket: first, ceremonyID: try #require(options["ceremonyId"]?.stringValue), credential: device.register(challenge: try challenge(of: options)),
                name: "")
        }
        #expect(try await signIn.passkeys(accountID: AdminAccount.rootID).isEmpty)
        // Past 24 hours.
        clock.advance(by: 86_400)
        await expectCode(.invalidInput) { _ = try await signIn.enrollmentOptions(ticket: second) }
        await expectCode(.invalidInput) { _ = try await enroll(device, ticket: second) }
        #expect(try await signIn.passkeys(accountID: AdminAccount.rootID).isEmpty)
    }

    @Test("An enrollment ceremony past its 300 s lifetime is refused, and the link stays usable")
    func enrollmentCeremonyExpires() async throws {
        let ticket = try await ticket()
        let options = try await signIn.enrollmentOptions(ticket: ticket)
        clock.advance(by: 300)
        let device = passkey()
        await expectCode(.invalidInput) {
            _ = try await signIn.enroll(
                ticket: ticket, ceremonyID: try #require(options["ceremonyId"]?.stringValue), credential: device.register(challenge: try challenge(of: options)),
                name: nil)
        }
        _ = try await enroll(device, ticket: ticket)
    }

    // MARK: Sign-in

    @Test("A passkey signs in with a new session token; the counter moves; the ceremony is single use (refusals are unauthorized and recorded)")
    func signInOnce() async throws {
        let device = passkey()
        _ = try await enroll(device, ticket: try await ticket())
        clock.advance(by: 10)
        let options = signIn.signInOptions()
        #expect(options["publicKey"]?["userVerification"] == "required" && options["publicKey"]?["allowCredentials"] == .array([]))
        let ceremonyID = try #require(options["ceremonyId"]?.stringValue)
        let credential = try device.assertion(challenge: try challenge(of: options), userHandle: Base64URL.encode(Data(AdminAccount.rootID.utf8)))
        let session = try await signIn.signIn(ceremonyID: ceremonyID, credential: credential)
        #expect(session.caller.role == .owner && session.authenticatedAt == now)
        #expect(try await signIn.passkeys(accountID: AdminAccount.rootID).first?.signCount == device.counter)
        await expectCode(.unauthorized) { _ = try await signIn.signIn(ceremonyID: ceremonyID, credential: credential) }
        #expect(try await failedSignIns() == 1)
        #expect(try await store.adminTokens().filter { $0.name == "console session" }.count == 2, "the refused one issued no token")
    }

    @Test("Refusals answered alike (unauthorized): an unknown passkey, a wrong user handle, another challenge, a forged ceremony id")
    func signInRefusals() async throws {
        let device = passkey()
        _ = try await enroll(device, ticket: try await ticket())
        await expectCode(.unauthorized) { _ = try await assert(passkey()) }
        await expectCode(.unauthorized) { _ = try await assert(device, account: "adm_other") }
        let options = signIn.signInOptions()
        let other = signIn.signInOptions()
        await expectCode(.unauthorized) {
            _ = try await signIn.signIn(
                ceremonyID: try #require(other["ceremonyId"]?.stringValue),
                credential: try device.assertion(challenge: try challenge(of: options), userHandle: Base64URL.encode(Data(AdminAccount.rootID.utf8))))
        }
        await expectCode(.unauthorized) {
            _ = try await signIn.signIn(
                ceremonyID: "lfc_forged", credential: try device.assertion(challenge: try challenge(of: options), userHandle: nil))
        }
        #expect(try await failedSignIns() == 4)
        #expect(try await store.adminTokens().filter { $0.name == "console session" }.count == 1, "only the enrollment's")
    }

    @Test("A user's FIDO ceremony is not the console's: ceremonies are keyed apart")
    func foreignCeremony() async throws {
        let device = passkey()
        _ = try await enroll(device, ticket: try await ticket())
        let engines = try await Engines.make()
        let userOptions = try await engines.fido().authenticationOptions(username: nil)
        await expectCode(.unauthorized) {
            _ = try await signIn.signIn(
                ceremonyID: try #require(userOptions["ceremonyId"]?.stringValue),
                credential: try device.assertion(challenge: try challenge(of: userOptions), userHandle: Base64URL.encode(Data(AdminAccount.rootID.utf8))))
        }
    }

    // MARK: Sessions

    @Test("A session cookie opens the session; it is re-sealed only once the idle clock moved a minute; idle 30 minutes ends it")
    func idleTimeout() async throws {
        let device = passkey()
        let enrolled = try await enroll(device, ticket: try await ticket())
        clock.advance(by: 59)
        guard case .success(let fresh) = try await session(enrolled.cookie) else { Issue.record("refused"); return }
        #expect(fresh.cookie == nil && fresh.caller == enrolled.caller && fresh.csrf == enrolled.csrf)
        clock.advance(by: 1)
        guard case .success(let moved) = try await session(enrolled.cookie) else { Issue.record("refused"); return }
        let renewed = try #require(moved.cookie)
        // The renewed cookie's idle clock starts now; the old one's ran out.
        clock.advance(by: 1_800 - 60)
        #expect(try await refusal(enrolled.cookie) == .idle)
        guard case .success = try await session(renewed) else { Issue.record("the renewed cookie was refused"); return }
    }

    @Test("The absolute lifetime ends a session however active; sign-out ends it at once; a forged cookie is forged")
    func sessionEnds() async throws {
        let device = passkey()
        let enrolled = try await enroll(device, ticket: try await ticket())
        #expect(try await refusal("garbage") == .forged)
        var cookie = try #require(enrolled.cookie)
        #expect(try await refusal(String(cookie.dropLast(2))) == .forged)
        // Active every 25 minutes, for 12 hours.
        var served = 0
        for _ in 0..<30 {
            clock.advance(by: 1_500)
            guard case .success(let active) = try await signIn.session(cookie: cookie) else { break }
            cookie = active.cookie ?? cookie
            served += 1
        }
        #expect(served == 28, "12 hours at most: 28 × 25 minutes fit, the 29th is past")
        #expect(try await refusal(cookie) == .ended)
        // Sign-out: a new session's token is revoked.
        let second = try await assert(device)
        guard case .success = try await session(second.cookie) else { Issue.record("refused"); return }
        try await signIn.signOut(second)
        #expect(try await refusal(second.cookie) == .ended)
        #expect(try await store.adminTokens().contains { $0.id == second.caller.tokenID } == false, "its token is revoked")
    }

    @Test("Re-authentication: the passkey check goes stale after 5 minutes; the account's passkey refreshes it; another account's cannot")
    func reauthentication() async throws {
        let device = passkey()
        let signedIn = try await enroll(device, ticket: try await ticket())
        let bob = AdminAccount(id: "adm_b", username: "bob", role: .admin, createdAt: 0, createdBy: nil)
        try await store.write { $0.insertAdminAccount(bob, ifTaken: AccountTaken()) }
        let bobs = passkey()
        _ = try await enroll(bobs, ticket: try await ticket("adm_b"))
        clock.advance(by: 300)
        guard case .success(let stale) = try await session(signedIn.cookie) else { Issue.record("refused"); return }
        #expect(!stale.recentlyAuthenticated)
        await expectCode(.unauthorized) { _ = try await assert(bobs, account: "adm_b", reauthenticating: stale) }
        let refreshed = try await assert(device, reauthenticating: stale)
        #expect(refreshed.recentlyAuthenticated && refreshed.caller == stale.caller)
        guard case .success(let reopened) = try await session(refreshed.cookie) else { Issue.record("refused"); return }
        #expect(reopened.authenticatedAt == now && reopened.recentlyAuthenticated)
        #expect(try await store.adminTokens().filter { $0.accountID == AdminAccount.rootID && $0.name == "console session" }.count == 1)
    }

    @Test("CSRF tokens: the session's own, compared whole; another session's or an oversized one is refused")
    func csrf() async throws {
        let device = passkey()
        let first = try await enroll(device, ticket: try await ticket())
        let second = try await assert(device)
        #expect(signIn.checkCSRF(first.csrf, session: first))
        #expect(!signIn.checkCSRF(second.csrf, session: first))
        #expect(!signIn.checkCSRF(nil, session: first))
        #expect(!signIn.checkCSRF(String(first.csrf.dropLast()), session: first))
        #expect(!signIn.checkCSRF(first.csrf + String(repeating: "a", count: 64), session: first))
    }
}
