import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import Logging

/// What a deployment's FIDO relying party is.
public struct FidoSettings: Sendable {
    /// The relying party id: by default the issuer's host.
    public var rpID: String
    /// The relying party's display name.
    public var rpName: String
    /// Accepted origins: by default the issuer's origin.
    public var origins: Set<String>
    /// Whether user verification is required (`required`), else `preferred`.
    public var requireUserVerification = false
    /// Seconds a ceremony stays valid.
    public var ceremonyLifetime: Int64 = 300
    /// The most authenticators one user may register.
    public var maximumAuthenticatorsPerUser = 10
    /// AAGUIDs (lower-case hex) accepted at registration; empty: any not denied.
    public var allowedAAGUIDs: Set<String> = []
    /// AAGUIDs refused at registration (and at sign-in: a model denied later stops signing in).
    public var deniedAAGUIDs: Set<String> = []
    /// Whether registration requires an attestation chaining to a trust anchor.
    public var requireTrustedAttestation = false
    /// PIN authenticators' lockout and length policy.
    public var pin = PinPolicy()
    /// Whether passwordless sign-up (a new user whose first credential is an authenticator) is open.
    public var signUpEnabled = true
    /// Roots for attestation certificates of models without their own in `metadata`.
    public var attestationAnchors = TrustAnchors([])
    /// Roots and FIDO statuses per authenticator model.
    public var metadata = FidoMetadata()

    public init(rpID: String, rpName: String, origins: Set<String>) {
        self.rpID = rpID
        self.rpName = rpName
        self.origins = origins
    }

    /// The relying party id and origin of an issuer URL (`https://id.example.com` → `id.example.com`).
    public static func defaults(issuer: String) -> FidoSettings {
        let url = URLComponents(string: issuer)
        let host = url?.host ?? "localhost"
        var origin = (url?.scheme ?? "https") + "://" + host
        if let port = url?.port { origin += ":\(port)" }
        return FidoSettings(rpID: host, rpName: host, origins: [origin])
    }
}

/// FIDO authenticators on accounts: WebAuthn registration by a signed-in user, the sign-in ceremony's options, and
/// the user's list. Responses are WebAuthn Level 3 JSON (`PublicKeyCredentialCreationOptionsJSON`,
/// `RegistrationResponseJSON`, …); the verification is ``WebAuthnRelyingParty``'s.
public struct FidoService: Sendable {
    public typealias Store = UnitOfWork & AuthenticatorStore & UserStore

    let store: any Store
    let settings: FidoSettings
    let ceremonies: FidoCeremonies
    /// The registered apps, whose native origins are accepted besides `settings.origins`.
    let apps: EvidenceApps?
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(store: any Store, settings: FidoSettings, ceremonies: FidoCeremonies, apps: EvidenceApps? = nil, clock: LatchClock,
                random: RandomSource, logger: Logger = Logger(label: "latch.fido")) {
        self.store = store
        self.settings = settings
        self.ceremonies = ceremonies
        self.apps = apps
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    /// The relying party, accepting `settings.origins` and the registered apps' native origins.
    func relyingParty() async throws -> WebAuthnRelyingParty {
        var party = WebAuthnRelyingParty(rpID: settings.rpID, origins: settings.origins)
        party.requireUserVerification = settings.requireUserVerification
        party.requireTrustedAttestation = settings.requireTrustedAttestation
        party.attestationAnchors = settings.attestationAnchors
        party.metadata = settings.metadata
        if let apps { party.origins.formUnion(Self.nativeOrigins(try await apps.snapshot(), rpID: settings.rpID)) }
        return party
    }

    /// Native app origins (WebAuthn Level 3 §5.8.1 leaves them to the platform): Android's
    /// `android:apk-key-hash:<base64url SHA-256 of the signing certificate>` for each registered Android app's
    /// signing certificates, and `https://<rpId>` — what iOS sends for an app whose associated domains name the
    /// relying party — when an iOS app is registered.
    static func nativeOrigins(_ snapshot: EvidenceApps.Snapshot, rpID: String) -> Set<String> {
        var origins = Set<String>()
        for (_, app) in snapshot.android {
            for digest in snapshot.signingCertificates[app.clientID] ?? [] { origins.insert("android:apk-key-hash:" + Base64URL.encode(Data(digest))) }
        }
        if !snapshot.appAttest.isEmpty { origins.insert("https://" + rpID) }
        return origins
    }

    /// `GET /v1/fido/policy`.
    public var policy: FidoPolicy {
        FidoPolicy(
            rpId: settings.rpID, userVerification: userVerification.rawValue, allowedAaguids: settings.allowedAAGUIDs.sorted(),
            deniedAaguids: settings.deniedAAGUIDs.sorted(), attestationRequired: settings.requireTrustedAttestation,
            maxAuthenticatorsPerUser: settings.maximumAuthenticatorsPerUser,
            pin: .init(
                minLength: settings.pin.minLength, maxLength: settings.pin.maxLength, maxAttempts: settings.pin.maxAttempts,
                coolDowns: settings.pin.coolDowns))
    }

    /// Refuses an authenticator model the policy does not accept.
    func admitModel(_ aaguid: [UInt8]) throws(LatchError) {
        let hex = Hex.encode(aaguid)
        guard !settings.deniedAAGUIDs.contains(hex), settings.allowedAAGUIDs.isEmpty || settings.allowedAAGUIDs.contains(hex) else {
            throw LatchError(.authenticatorNotAllowed, "the authenticator model \(hex) is not allowed by this deployment's policy")
        }
    }

    var userVerification: UserVerificationRequirement { settings.requireUserVerification ? .required : .preferred }

    enum Refusal: Error { case taken, missing, counter }

    // MARK: Registration

    /// `POST /v1/fido/registration/options` for the signed-in `user`.
    public func registrationOptions(for user: User) async throws -> JSONValue {
        let existing = try await store.authenticators(userID: user.id)
        guard existing.count < settings.maximumAuthenticatorsPerUser else {
            throw LatchError(.conflict, "this account has \(existing.count) authenticators, the most allowed; delete one first")
        }
        let (id, challenge) = ceremonies.begin(.registration, userID: user.id, random: random, now: clock.seconds())
        return creationOptions(ceremonyID: id, challenge: challenge, userID: user.id, username: user.username, exclude: existing)
    }

    /// `POST /v1/fido/sign-up/options {username?}`: a registration ceremony for a user who does not exist yet —
    /// passwordless sign-up. The new user's id (the WebAuthn user handle) and username are chosen now and bound to
    /// the ceremony; the user is created by `POST /v1/registrations` with `challengeType` `WEBAUTHN`, which
    /// completes it. A username already taken is refused at once (and again, atomically, when the user is created);
    /// without one, the username is the new user's id.
    public func signUpOptions(username requested: String?) async throws -> JSONValue {
        guard settings.signUpEnabled else { throw LatchError(.challengeTypeDisabled, "passwordless sign-up is disabled on this deployment") }
        let userID = random.uuid()
        var username = userID
        if let requested {
            do {
                username = try Usernames.native(requested)
            } catch {
                throw LatchError.invalidInput("username \(error)")
            }
            guard username.utf8.count <= RegistrationService.maximumIdentifierLength else {
                throw LatchError.invalidInput("username must be at most \(RegistrationService.maximumIdentifierLength) bytes")
            }
            if try await store.user(username: username) != nil {
                throw LatchError(.alreadyRegistered, "this username is taken")
            }
        }
        let (id, challenge) = ceremonies.begin(.signUp, userID: userID, bound: username, random: random, now: clock.seconds())
        // A passkey for a new account: discoverable, so that signing in needs no username.
        return creationOptions(ceremonyID: id, challenge: challenge, userID: userID, username: username, exclude: [], residentKey: .required)
    }

    /// `{ceremonyId, publicKey: PublicKeyCredentialCreationOptionsJSON}` for `userID`, excluding `exclude`'s
    /// credentials.
    func creationOptions(
        ceremonyID: String, challenge: [UInt8], userID: String, username: String, exclude: [Authenticator], residentKey: ResidentKeyRequirement = .preferred
    ) -> JSONValue {
        FidoCreationOptions.latch(
            ceremonyID: ceremonyID, challenge: challenge, rp: .init(id: settings.rpID, name: settings.rpName), userID: userID, username: username,
            exclude: exclude.map(\.credentialID), lifetime: settings.ceremonyLifetime,
            selection: .init(residentKey: residentKey, requireResidentKey: residentKey == .required, userVerification: userVerification),
            attestation: settings.requireTrustedAttestation ? .direct : AttestationConveyancePreference.none
        ).json
    }

    /// `POST /v1/fido/registration {ceremonyId, credential, name?}` for the signed-in `user`.
    public func register(for user: User, ceremonyID: String, credential: JSONValue, name: String?) async throws -> FidoAuthenticatorInfo {
        let now = clock.seconds()
        let ceremony = try ceremonies.checkRequest(ceremonyID, .registration, now: now)
        guard ceremony.userID == user.id else { throw LatchError(.invalidInput, "this ceremony was started by another user") }
        let authenticator = try await verifyNewCredential(credential, challenge: ceremony.challenge, userID: user.id, name: name, now: now)
        let event = SecurityEvent.now(
            .authenticatorRegistered, actor: "user", userID: user.id, detail: authenticator.format, clock: clock, random: random)
        do {
            try await store.write { transaction in
                transaction.consume(ceremony.consumes, ifUnavailable: Refusal.missing)
                transaction.insertAuthenticator(authenticator, ifTaken: Refusal.taken)
                transaction.record(event)
            }
        } catch Refusal.missing {
            throw LatchError.invalidInput("this ceremony was completed before; start again")
        } catch Refusal.taken {
            throw LatchError(.conflict, "this credential is registered already")
        }
        return info(authenticator)
    }

    /// A registration response verified (§7.1) and admitted by the policy: the authenticator to store for `userID`.
    func verifyNewCredential(_ credential: JSONValue, challenge: [UInt8], userID: String, name: String?, now: Int64) async throws -> Authenticator {
        if let name, !(1...64).contains(name.count) { throw LatchError.invalidInput("name must be 1–64 characters") }
        let verified = try await relyingParty().verifyRegistrationResponse(credential, challenge: challenge, now: now)
        try admitModel(verified.aaguid)
        let isPin = LatchAuthenticatorModel(rawValue: Hex.encode(verified.aaguid)) == .pin
        if isPin, !verified.userVerified {
            throw LatchError(.webauthnUserNotVerified, "a PIN authenticator must set the UV flag")
        }
        var bindingKey: Data?
        if let member = credential["pinBinding"] {
            guard isPin else { throw LatchError.invalidInput("pinBinding is only for PIN authenticators") }
            bindingKey = try Self.pinBindingKey(member, challenge: challenge, credentialID: verified.credentialID)
        }
        return Authenticator(
            id: random.uuid(), userID: userID, credentialID: Data(verified.credentialID), publicKeyCOSE: Data(verified.publicKeyCOSE),
            signCount: verified.signCount, aaguid: Data(verified.aaguid), format: verified.format, name: name ?? "Authenticator",
            backupEligible: verified.backupEligible, createdAt: now, pinBindingKey: bindingKey)
    }

    /// A PIN authenticator's binding key from a registration's `pinBinding {publicKey, signature}` (docs/fido.md, "PIN
    /// binding"): a P-256 point (65 bytes, uncompressed) and its ES256 signature over
    /// ``PinBinding/registrationMessage(challenge:credentialID:publicKey:)`` — proof that the device holds the key.
    /// Sizes are checked before anything is decoded; refused with `pin_binding_invalid`.
    static func pinBindingKey(_ member: JSONValue, challenge: [UInt8], credentialID: [UInt8]) throws(LatchError) -> Data {
        guard case .object(let binding) = member, binding.count == 2, let keyText = binding["publicKey"]?.stringValue,
            let signatureText = binding["signature"]?.stringValue, let key = PinBinding.publicKey(base64URL: keyText),
            let signature = PinBinding.signature(base64URL: signatureText)
        else {
            throw LatchError(
                .pinBindingInvalid, "pinBinding must be {publicKey, signature}: a P-256 point (65 bytes) and an ES256 signature (64 bytes), base64url")
        }
        let point = key.x963Representation
        let message = PinBinding.registrationMessage(challenge: challenge, credentialID: credentialID, publicKey: Array(point))
        guard PinBinding.verifies(signature, publicKey: point, message: message) else {
            throw LatchError(.pinBindingInvalid, "the pinBinding signature does not verify with its publicKey")
        }
        return point
    }

    // MARK: Sign-in options

    /// `POST /v1/fido/authentication/options {username?}`: with a username, its credentials (an unknown username
    /// gets an empty list, answered the same way); without, a discoverable-credential ceremony.
    public func authenticationOptions(username: String?) async throws -> JSONValue {
        var allowed: [Authenticator] = []
        var userID: String?
        if let username {
            let name: String
            do {
                name = try Usernames.native(username)
            } catch {
                throw LatchError.invalidInput("username \(error)")
            }
            if let user = try await store.user(username: name) {
                userID = user.id
                allowed = try await store.authenticators(userID: user.id)
            }
        }
        let (id, challenge) = ceremonies.begin(.authentication, userID: userID, random: random, now: clock.seconds())
        return requestOptions(ceremonyID: id, challenge: challenge, allow: allowed)
    }

    /// `{ceremonyId, publicKey: PublicKeyCredentialRequestOptionsJSON}` allowing `allow`'s credentials (none: a
    /// discoverable-credential ceremony).
    func requestOptions(ceremonyID: String, challenge: [UInt8], allow: [Authenticator], userVerification: UserVerificationRequirement? = nil) -> JSONValue {
        FidoRequestOptions.latch(
            ceremonyID: ceremonyID, challenge: challenge, rpID: settings.rpID, allow: allow.map(\.credentialID), lifetime: settings.ceremonyLifetime,
            userVerification: userVerification ?? self.userVerification
        ).json
    }

    // MARK: The user's authenticators

    public func list(for user: User) async throws -> FidoAuthenticatorList {
        FidoAuthenticatorList(authenticators: try await store.authenticators(userID: user.id).map(info))
    }

    public func rename(_ id: String, for user: User, to name: String) async throws {
        guard (1...64).contains(name.count) else { throw LatchError.invalidInput("name must be 1–64 characters") }
        guard try await store.succeeds({ $0.renameAuthenticator(id: id, userID: user.id, name: name, ifMissing: $1) }) else {
            throw LatchError.notFound("no such authenticator")
        }
    }

    /// `DELETE /v1/me/authenticators`: every authenticator of the user.
    public func deleteAll(for user: User, actor: String = "user") async throws {
        let count = try await store.authenticators(userID: user.id).count
        let event = SecurityEvent.now(.authenticatorDeleted, actor: actor, userID: user.id, detail: "all (\(count))", clock: clock, random: random)
        try await store.write { transaction in
            transaction.deleteAuthenticators(userID: user.id)
            transaction.record(event)
        }
    }

    public func delete(_ id: String, for user: User, actor: String = "user") async throws {
        let event = SecurityEvent.now(.authenticatorDeleted, actor: actor, userID: user.id, detail: id, clock: clock, random: random)
        guard try await store.succeeds({ transaction, refusal in
            transaction.deleteAuthenticator(id: id, userID: user.id, ifMissing: refusal)
            transaction.record(event)
        }) else { throw LatchError.notFound("no such authenticator") }
    }

    func info(_ authenticator: Authenticator) -> FidoAuthenticatorInfo {
        FidoAuthenticatorInfo(
            id: authenticator.id, name: authenticator.name, aaguid: Hex.encode(authenticator.aaguid), format: authenticator.format,
            backupEligible: authenticator.backupEligible, createdAt: authenticator.createdAt, lastUsedAt: authenticator.lastUsedAt,
            credentialId: Base64URL.encode(authenticator.credentialID), pinStatus: settings.pin.status(of: authenticator, now: clock.seconds()))
    }

    /// `POST /v1/fido/authenticators/status {credentialId}`: a PIN authenticator's status, for the device that holds
    /// the credential (its id is the capability: random, at least 16 bytes). Other authenticators and unknown ids
    /// answer `not_found` alike.
    public func pinStatus(credentialID: String) async throws -> FidoPinStatus {
        guard credentialID.utf8.count <= 1400, let id = Base64URL.decode(credentialID), !id.isEmpty else {
            throw LatchError.invalidInput("credentialId must be base64url")
        }
        guard let (_, authenticator) = try await store.authenticator(credentialID: id),
            let status = settings.pin.status(of: authenticator, now: clock.seconds())
        else { throw LatchError.notFound("no PIN authenticator has this credential id") }
        return status
    }

    static func bytes(_ value: JSONValue?) -> [UInt8]? {
        guard let text = value?.stringValue, text.utf8.count <= 96 * 1024 else { return nil }
        return Base64URL.decode(text).map(Array.init)
    }
}
