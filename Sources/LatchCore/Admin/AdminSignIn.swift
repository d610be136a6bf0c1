import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import Logging

/// How admins sign in to the console.
public struct AdminSignInSettings: Sendable {
    /// The WebAuthn relying party id: the issuer's host.
    public var rpID: String
    /// The relying party's name shown by authenticators.
    public var rpName = "Latch console"
    /// The origins a ceremony may come from: the issuer's origin.
    public var origins: Set<String>
    /// How long an enrollment link stays valid: 24 hours.
    public var enrollmentLifetime: Int64 = 86_400
    /// A WebAuthn ceremony's lifetime: 5 minutes.
    public var ceremonyLifetime: Int64 = 300
    /// A console session ends after this long without a request: 30 minutes.
    public var idleTimeout: Int64 = 1_800
    /// … and this long after sign-in, whatever happens: 12 hours.
    public var absoluteLifetime: Int64 = 43_200
    /// Dangerous actions need a passkey check this recent: 5 minutes.
    public var reauthenticationWindow: Int64 = 300

    public init(rpID: String, origins: Set<String>) {
        self.rpID = rpID
        self.origins = origins
    }

    /// The relying party of the deployment at `issuer` (its host and origin).
    public static func defaults(issuer: String) -> AdminSignInSettings {
        let fido = FidoSettings.defaults(issuer: issuer)
        return AdminSignInSettings(rpID: fido.rpID, origins: fido.origins)
    }
}

/// A signed-in console session: the admin token it holds, who that is, and when the admin last proved presence.
public struct ConsoleSession: Sendable {
    public var caller: AdminCaller
    public var username: String
    /// When the admin last used a passkey (sign-in or re-authentication).
    public var authenticatedAt: Int64
    /// The sealed cookie value to set: a fresh one whenever the idle clock moved, or nil when the presented one stands.
    public var cookie: String?
    /// The console's CSRF token for this session (forms carry it).
    public var csrf: String
    /// Whether a dangerous action may go ahead without a new passkey check.
    public var recentlyAuthenticated: Bool
    /// The session's admin token (sealed in the cookie; a re-authentication re-seals it).
    var token: String
}

/// Admin sign-in to the console with passkeys (W3C WebAuthn, the same relying-party checks as users' FIDO
/// authenticators), enrollment links, and console sessions.
///
/// - An **enrollment link** (`/console/enroll?ticket=…`) lets one admin account register its first passkey: the
///   ticket is sealed (AES-GCM, its own key), names the account and its expiry, and is consumed as a single-use value
///   in the unit of work that stores the passkey — every replica agrees it was used once.
/// - A **sign-in** is a discoverable-credential assertion with user verification; the passkey's counter moves by
///   compare-and-set, so one assertion signs in once.
/// - A **console session** is an admin token of the account (role: the account's; expiry: the absolute lifetime),
///   carried sealed in a cookie with the time of the last passkey check and of the last request (idle timeout). The
///   token shows in the account's tokens and is revoked at sign-out; revoking it, or deleting the account, ends the
///   session on every replica.
public struct AdminSignIn: Sendable {
    let store: any (UnitOfWork & AdminTokenStore & SingleUseStore)
    let authenticator: AdminTokenGate
    let settings: AdminSignInSettings
    let ceremonies: FidoCeremonies
    let sealer: FederationSealer
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    /// `key`: a key derived from the key-encryption key for the console alone.
    public init(
        store: any (UnitOfWork & AdminTokenStore & SingleUseStore), authenticator: AdminTokenGate, settings: AdminSignInSettings, key: SymmetricKey, clock: LatchClock,
        random: RandomSource, logger: Logger = Logger(label: "latch.console")
    ) {
        self.store = store
        self.authenticator = authenticator
        self.settings = settings
        let material = key.withUnsafeBytes { Array($0) }
        ceremonies = FidoCeremonies(
            key: HKDF<SHA256>.deriveKey(inputKeyMaterial: key, info: Data("admin passkey ceremonies v1".utf8), outputByteCount: 32),
            lifetime: settings.ceremonyLifetime)
        sealer = FederationSealer(keyEncryptionKey: material)
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// How long a console session may last (its cookie's `Max-Age`).
    public var absoluteLifetime: Int64 { settings.absoluteLifetime }

    static let ticketIssuer = "latch:admin-enrollment"
    /// The longest enrollment ticket or session cookie read.
    static let maximumSealedLength = 1024

    struct Ticket: Codable {
        /// The account.
        var a: String
        /// Expiry, Unix seconds.
        var e: Int64
        /// A random nonce (two links for one account are two tickets).
        var n: String
    }

    struct Cookie: Codable {
        /// The session's admin token.
        var t: String
        /// When the admin last used a passkey.
        var a: Int64
        /// When the last request was served (the idle clock).
        var s: Int64
    }

    // MARK: Enrollment links

    /// A one-time link at which admin account `accountID` registers a passkey, valid for the enrollment lifetime.
    public func enrollmentLink(accountID: String, issuer: String) async throws -> AdminEnrollmentLink {
        guard let account = try await store.adminAccounts().first(where: { $0.id == accountID }) else {
            throw LatchError.notFound("no such admin account")
        }
        let expiresAt = clock.seconds() + settings.enrollmentLifetime
        let ticket = try sealer.seal(Ticket(a: account.id, e: expiresAt, n: random.token(byteCount: 16)), as: .adminEnrollment)
        // Issuing a link is recorded (it is a way into the console), in a unit of its own: nothing else is written.
        let event = SecurityEvent.now(
            .admin("admins", "enrollment_link"), actor: "admin", userID: nil,
            detail: "account \(account.id) \"\(account.username)\" link expires \(expiresAt)", clock: clock, random: random)
        try await store.write { $0.record(event) }
        var base = issuer
        while base.hasSuffix("/") { base.removeLast() }
        return AdminEnrollmentLink(accountId: account.id, username: account.username, url: base + "/console/enroll?ticket=" + ticket, expiresAt: expiresAt)
    }

    /// The account an enrollment ticket is for, if it is one Latch issued and it has not expired.
    func openTicket(_ text: String) throws(LatchError) -> Ticket {
        guard let ticket = sealer.open(text, as: .adminEnrollment, Ticket.self, maximumLength: Self.maximumSealedLength) else {
            throw LatchError(.invalidInput, "this enrollment link is not one Latch issued")
        }
        guard clock.seconds() < ticket.e else { throw LatchError(.invalidInput, "this enrollment link has expired; ask an owner for a new one") }
        return ticket
    }

    /// The account an enrollment link is for, to show before the ceremony.
    public func enrollmentAccount(ticket text: String) async throws -> AdminAccount {
        let ticket = try openTicket(text)
        // Said before the authenticator makes a credential that could not be kept (the unit that stores one decides).
        if try await store.isUsed(.jti(PKCE.hashHex(text), issuer: Self.ticketIssuer, until: ticket.e)) {
            throw LatchError(.invalidInput, "this enrollment link was used before; ask an owner for a new one")
        }
        guard let account = try await store.adminAccounts().first(where: { $0.id == ticket.a }) else {
            throw LatchError(.invalidInput, "the account of this enrollment link was deleted")
        }
        return account
    }

    /// `PublicKeyCredentialCreationOptions` for the account of `ticket`: a discoverable credential with user
    /// verification, excluding the account's passkeys.
    public func enrollmentOptions(ticket text: String) async throws -> JSONValue {
        let account = try await enrollmentAccount(ticket: text)
        let existing = try await store.adminPasskeys(accountID: account.id)
        guard existing.count < 10 else { throw LatchError(.conflict, "this account has 10 passkeys, the most allowed") }
        let (id, challenge) = ceremonies.begin(.registration, userID: account.id, bound: PKCE.hashHex(text), random: random, now: clock.seconds())
        return FidoCreationOptions.latch(
            ceremonyID: id, challenge: challenge, rp: .init(id: settings.rpID, name: settings.rpName), userID: account.id, username: account.username,
            exclude: existing.map(\.credentialID), lifetime: settings.ceremonyLifetime,
            selection: .init(residentKey: .required, requireResidentKey: true, userVerification: .required),
            attestation: AttestationConveyancePreference.none
        ).json
    }

    /// Registers the passkey of an enrollment ceremony and signs its admin in. The ticket is spent with it: a link
    /// enrolls once.
    public func enroll(ticket text: String, ceremonyID: String, credential: JSONValue, name: String?) async throws -> ConsoleSession {
        let ticket = try openTicket(text)
        let now = clock.seconds()
        let ceremony = try ceremonies.checkRequest(ceremonyID, .registration, now: now)
        guard ceremony.userID == ticket.a, ceremony.bound == PKCE.hashHex(text) else {
            throw LatchError(.invalidInput, "this ceremony was started for another enrollment link")
        }
        let passkeyName = name ?? "Passkey"
        guard AdminService.isName(passkeyName, max: 64) else { throw LatchError.invalidInput("name must be 1–64 printable characters") }
        let verified = try relyingParty.verifyRegistrationResponse(credential, challenge: ceremony.challenge, now: now)
        guard let account = try await store.adminAccounts().first(where: { $0.id == ticket.a }) else {
            throw LatchError(.invalidInput, "the account of this enrollment link was deleted")
        }
        let passkey = AdminPasskey(
            id: "apk_" + random.token(byteCount: 9), accountID: account.id, credentialID: Data(verified.credentialID),
            publicKeyCOSE: Data(verified.publicKeyCOSE), signCount: verified.signCount, aaguid: Data(verified.aaguid), name: passkeyName,
            createdAt: now)
        let (token, record) = sessionToken(for: account, now: now)
        let actor = "admin:\(account.id)/\(record.id)"
        let events = [
            SecurityEvent.now(
                .admin("passkeys", "create"), actor: actor, userID: nil, detail: "account \(account.id) \"\(account.username)\" passkey \(passkey.id) \"\(passkeyName)\"",
                clock: clock, random: random),
            SecurityEvent.now(.admin("console", "signin"), actor: actor, userID: nil, detail: "account \(account.id) by enrollment", clock: clock, random: random),
        ]
        enum Refusal: Error { case spent, refused }
        do {
            try await store.write { transaction in
                transaction.consume(.jti(PKCE.hashHex(text), issuer: Self.ticketIssuer, until: ticket.e), ifUnavailable: Refusal.spent)
                transaction.consume(ceremony.consumes, ifUnavailable: Refusal.spent)
                transaction.insertAdminPasskey(passkey, ifRefused: Refusal.refused)
                transaction.putAdminTokenOfAccount(record, ifAccountMissing: Refusal.refused)
                for event in events { transaction.record(event) }
            }
        } catch Refusal.spent {
            throw LatchError(.invalidInput, "this enrollment link was used before; ask an owner for a new one")
        } catch Refusal.refused {
            throw LatchError(.conflict, "this passkey is registered already, or the account was deleted")
        }
        try await authenticator.reload()
        logger.info("admin passkey enrolled", metadata: ["account": "\(account.id)", "passkey": "\(passkey.id)"])
        return session(account: account, token: token, tokenID: record.id, authenticatedAt: now, now: now)
    }

    var relyingParty: WebAuthnRelyingParty {
        var party = WebAuthnRelyingParty(rpID: settings.rpID, origins: settings.origins)
        party.requireUserVerification = true
        return party
    }

    // MARK: Sign-in and re-authentication

    /// `PublicKeyCredentialRequestOptions` for a discoverable passkey with user verification.
    public func signInOptions() -> JSONValue {
        let (id, challenge) = ceremonies.begin(.authentication, userID: nil, random: random, now: clock.seconds())
        return FidoRequestOptions.latch(
            ceremonyID: id, challenge: challenge, rpID: settings.rpID, allow: [], lifetime: settings.ceremonyLifetime, userVerification: .required
        ).json
    }

    /// Checks an assertion and opens a console session — or, with `session`, refreshes that session's passkey check
    /// (the passkey must be its account's). Refusals are recorded (`admin.console.signin_failed`) and answered alike
    /// (`unauthorized`), whatever failed.
    public func signIn(ceremonyID: String, credential: JSONValue, reauthenticating session: ConsoleSession? = nil) async throws -> ConsoleSession {
        let now = clock.seconds()
        do {
            return try await checkSignIn(ceremonyID: ceremonyID, credential: credential, session: session, now: now)
        } catch let error as LatchError where error.code != .serverError {
            await AuditRecorder(store: store, clock: clock, random: random, logger: logger).recordAlone(
                .admin("console", "signin_failed"), actor: session.map { "admin:\($0.caller.accountID)/\($0.caller.tokenID)" } ?? "anonymous",
                detail: "\(session == nil ? "sign-in" : "re-authentication"): \(error.code.rawValue): \(error.message)")
            logger.notice("console sign-in refused", metadata: ["code": "\(error.code.rawValue)", "reason": "\(error.message)"])
            throw LatchError(.unauthorized, "the passkey could not sign in: \(error.message)")
        }
    }

    private func checkSignIn(ceremonyID: String, credential: JSONValue, session: ConsoleSession?, now: Int64) async throws -> ConsoleSession {
        let ceremony: FidoCeremonies.Ceremony
        do {
            ceremony = try ceremonies.check(ceremonyID, .authentication, now: now)
        } catch {
            throw LatchError(.invalidInput, error.message)
        }
        guard case .object(let fields) = credential, let rawID = FidoService.bytes(fields["rawId"] ?? fields["id"]),
            case .object(let response)? = fields["response"], let clientData = FidoService.bytes(response["clientDataJSON"]),
            let authenticatorData = FidoService.bytes(response["authenticatorData"]), let signature = FidoService.bytes(response["signature"])
        else { throw LatchError.invalidInput("credential must be an AuthenticationResponseJSON with base64url members") }
        guard let passkey = try await store.adminPasskey(credentialID: Data(rawID)) else {
            throw LatchError(.notFound, "no admin passkey has this credential id")
        }
        let userHandle = FidoService.bytes(response["userHandle"])
        guard userHandle == Array(passkey.accountID.utf8) else { throw LatchError(.webauthnClientDataInvalid, "the user handle is not the passkey's account") }
        if let session, session.caller.accountID != passkey.accountID {
            throw LatchError(.forbidden, "re-authentication needs a passkey of the signed-in account")
        }
        guard let account = try await store.adminAccounts().first(where: { $0.id == passkey.accountID }) else {
            throw LatchError(.notFound, "the passkey's account was deleted")
        }
        var trace = AttestationTrace()
        let asserted: WebAuthnRelyingParty.VerifiedAssertion
        do {
            asserted = try relyingParty.verifyAuthentication(
                clientDataJSON: clientData, authenticatorData: authenticatorData, signature: signature, challenge: ceremony.challenge,
                publicKey: try WebAuthnPublicKey(coseBytes: Array(passkey.publicKeyCOSE)), storedSignCount: passkey.signCount, userHandle: userHandle,
                trace: &trace)
        } catch {
            throw LatchError(error.code, "\(error.step): \(error.detail)")
        }
        enum Refusal: Error { case spent, raced }
        var issued: (token: String, record: AdminTokenRecord)?
        if session == nil { issued = sessionToken(for: account, now: now) }
        let tokenID = issued?.record.id ?? session?.caller.tokenID ?? ""
        let event = SecurityEvent.now(
            .admin("console", session == nil ? "signin" : "reauthenticated"), actor: "admin:\(account.id)/\(tokenID)", userID: nil,
            detail: "account \(account.id) passkey \(passkey.id)", clock: clock, random: random)
        do {
            try await store.write { [issued] transaction in
                transaction.consume(ceremony.consumes, ifUnavailable: Refusal.spent)
                transaction.useAdminPasskey(id: passkey.id, signCount: passkey.signCount, newSignCount: asserted.signCount, at: now, ifRaced: Refusal.raced)
                if let issued { transaction.putAdminTokenOfAccount(issued.record, ifAccountMissing: Refusal.raced) }
                transaction.record(event)
            }
        } catch Refusal.spent {
            throw LatchError(.invalidInput, "this ceremony was completed before; start again")
        } catch Refusal.raced {
            throw LatchError(.invalidInput, "another sign-in used this passkey at the same moment; start again")
        }
        if let issued {
            try await authenticator.reload()
            return self.session(account: account, token: issued.token, tokenID: issued.record.id, authenticatedAt: now, now: now)
        }
        guard let session else { throw LatchError(.unauthorized, "the console session is gone") }
        return self.session(account: account, token: session.token, tokenID: tokenID, authenticatedAt: now, now: now)
    }

    /// A new session token of `account`: its role, the absolute lifetime.
    func sessionToken(for account: AdminAccount, now: Int64) -> (String, AdminTokenRecord) {
        let token = "lat_" + random.token()
        return (
            token,
            AdminTokenRecord(
                id: "cs_" + random.token(byteCount: 9), name: "console session", hash: Secrets.hash(token), createdAt: now, accountID: account.id,
                role: account.role, expiresAt: now + settings.absoluteLifetime)
        )
    }

    func session(account: AdminAccount, token: String, tokenID: String, authenticatedAt: Int64, now: Int64) -> ConsoleSession {
        let cookie = try? sealer.seal(Cookie(t: token, a: authenticatedAt, s: now), as: .consoleSession)
        return ConsoleSession(
            caller: AdminCaller(tokenID: tokenID, accountID: account.id, role: account.role), username: account.username, authenticatedAt: authenticatedAt,
            cookie: cookie, csrf: csrfToken(tokenID: tokenID), recentlyAuthenticated: now - authenticatedAt < settings.reauthenticationWindow,
            token: token)
    }

    // MARK: Sessions

    /// Why a session cookie was refused.
    public enum Refused: Error, Sendable, Equatable {
        /// Not one Latch sealed (forged, truncated, another deployment's).
        case forged
        /// Idle longer than the idle timeout.
        case idle
        /// Its token was revoked or expired (the absolute lifetime), or its account deleted.
        case ended
    }

    /// The session a console cookie holds, or why it is refused. The cookie is re-sealed when the idle clock moved
    /// by a minute or more (``ConsoleSession/cookie``).
    public func session(cookie text: String) async throws -> Result<ConsoleSession, Refused> {
        guard let cookie = sealer.open(text, as: .consoleSession, Cookie.self, maximumLength: Self.maximumSealedLength) else {
            return .failure(.forged)
        }
        let now = clock.seconds()
        guard now - cookie.s < settings.idleTimeout else { return .failure(.idle) }
        // The cookie is genuine: a token another replica just created is worth a reload.
        guard let caller = try await authenticator.caller(of: cookie.t, reloadingOnMiss: true),
            let account = try await store.adminAccounts().first(where: { $0.id == caller.accountID })
        else { return .failure(.ended) }
        var session = session(account: account, token: cookie.t, tokenID: caller.tokenID, authenticatedAt: cookie.a, now: now)
        session.caller.role = caller.role
        if now - cookie.s < 60 { session.cookie = nil }
        return .success(session)
    }

    /// Ends `session`: its token is revoked.
    public func signOut(_ session: ConsoleSession) async throws {
        let now = clock.seconds()
        guard let record = try await store.adminTokens().first(where: { $0.id == session.caller.tokenID }) else { return }
        let event = SecurityEvent.now(
            .admin("console", "signout"), actor: "admin:\(session.caller.accountID)/\(session.caller.tokenID)", userID: nil,
            detail: "account \(session.caller.accountID)", clock: clock, random: random)
        _ = try await store.revokeAdminToken(record, at: now, recording: event)
        try await authenticator.reload()
    }

    /// The CSRF token of the session holding admin token `tokenID`: an HMAC, so any replica checks it.
    func csrfToken(tokenID: String) -> String { sealer.mac("console csrf|" + tokenID) }

    /// Whether `presented` is `session`'s CSRF token (constant time).
    public func checkCSRF(_ presented: String?, session: ConsoleSession) -> Bool {
        guard let presented, presented.utf8.count <= 64 else { return false }
        return Secrets.constantTimeEquals(Data(presented.utf8), Data(session.csrf.utf8))
    }

    /// The passkeys of `accountID`.
    public func passkeys(accountID: String) async throws -> [AdminPasskey] { try await store.adminPasskeys(accountID: accountID) }
}
