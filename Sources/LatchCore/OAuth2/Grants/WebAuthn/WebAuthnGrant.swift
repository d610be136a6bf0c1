import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import Logging

/// Sign-in with a FIDO authenticator (`urn:latch:params:oauth:grant-type:webauthn`): `ceremony_id` from
/// `POST /v1/fido/authentication/options` and `credential`, the AuthenticationResponseJSON as a JSON string.
///
/// The ceremony must be Latch's and unexpired; the credential is found by its id; a ceremony begun for a username
/// accepts only that user's credentials, a discoverable one requires the `userHandle` to be the credential's user.
/// The assertion is verified (W3C WebAuthn §7.2), then one unit of work consumes the ceremony, moves the counter
/// forward (compare-and-set: a counter that did not grow is refused and recorded as a possible clone) and opens the
/// session. A PIN authenticator (``LatchAuthenticatorModel/pin``) locked out or cooling down is refused first; its
/// signature failures are wrong PINs, counted (`invalid_grant` with `pinStatus`).
public struct WebAuthnGrant: TokenGrant {
    public var grantType: String { GrantType.webauthn }

    let store: any UserStore & AuthenticatorStore & UnitOfWork
    let fido: FidoService
    let scopes: ScopePolicy
    let sessions: SessionOpener
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(
        store: any UserStore & AuthenticatorStore & UnitOfWork, fido: FidoService, scopes: ScopePolicy, sessions: SessionOpener, clock: LatchClock,
        random: RandomSource, logger: Logger = Logger(label: "latch.fido")
    ) {
        self.store = store
        self.fido = fido
        self.scopes = scopes
        self.sessions = sessions
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    public func exchange(_ request: TokenRequest) async throws -> TokenResponse {
        // Step 1. Parameters.
        let ceremonyID = try request.required("ceremony_id")
        let credentialText = try request.required("credential")
        let scope = try scopes.grant(request.parameters["scope"])
        let now = clock.seconds()
        let ceremony = try fido.ceremonies.check(ceremonyID, .authentication, now: now)
        guard credentialText.utf8.count <= 64 * 1024, case .object(let credential)? = try? JSONValue.parse(Data(credentialText.utf8)),
            let rawID = FidoService.bytes(credential["rawId"] ?? credential["id"]), case .object(let response)? = credential["response"],
            let clientData = FidoService.bytes(response["clientDataJSON"]), let authenticatorData = FidoService.bytes(response["authenticatorData"]),
            let signature = FidoService.bytes(response["signature"])
        else { throw LatchError.invalidRequest("credential must be an AuthenticationResponseJSON with base64url members") }
        // Step 2. The credential, and the user it may sign in.
        guard let (user, authenticator) = try await store.authenticator(credentialID: Data(rawID)) else {
            throw LatchError.invalidGrant("no authenticator is registered with this credential id")
        }
        let userHandle = FidoService.bytes(response["userHandle"])
        if let expected = ceremony.userID {
            guard expected == user.id else { throw LatchError.invalidGrant("this credential does not belong to the user the ceremony is for") }
        } else {
            guard userHandle == Array(user.id.utf8) else {
                throw LatchError.invalidGrant("a discoverable sign-in needs the credential's user handle")
            }
        }
        // Step 3. The policy: a model denied since registration no longer signs in; a PIN authenticator locked out
        // or cooling down is refused before any check (nothing counted).
        do {
            try fido.admitModel(Array(authenticator.aaguid))
        } catch {
            throw LatchError.invalidGrant(error.message, detail: error.code.rawValue)
        }
        let model = LatchAuthenticatorModel.of(authenticator)
        try fido.settings.pin.admit(authenticator, now: now, code: .invalidGrant)
        // Step 4. The assertion.
        let party = try await fido.relyingParty()
        var trace = AttestationTrace()
        let asserted: WebAuthnRelyingParty.VerifiedAssertion
        do {
            asserted = try party.verifyAuthentication(
                clientDataJSON: clientData, authenticatorData: authenticatorData, signature: signature, challenge: ceremony.challenge,
                publicKey: try WebAuthnPublicKey(coseBytes: Array(authenticator.publicKeyCOSE)), storedSignCount: authenticator.signCount, userHandle: userHandle, trace: &trace)
        } catch {
            if error.code == .webauthnCounterRegressed {
                try await flag(user: user, authenticator: authenticator, ceremony: ceremony.consumes)
            }
            // A PIN authenticator's key comes from the PIN: a signature that does not verify is a wrong PIN, counted.
            if error.code == .webauthnSignatureInvalid, model == .pin {
                throw try await fido.countFailure(of: authenticator, user: user, code: .invalidGrant)
            }
            throw LatchError.invalidGrant("\(error.step): \(error.detail)", detail: error.code.rawValue)
        }
        if model == .pin, !asserted.userVerified { throw LatchError.invalidGrant("a PIN authenticator must set the UV flag") }
        // Step 5. One unit of work: ceremony consumed, counter moved and failures cleared (compare-and-set on both),
        // session opened.
        let signIn = VerifiedSignIn(
            user: user, amr: Self.methods(authenticator, model: model, userVerified: asserted.userVerified), consumes: ceremony.consumes,
            usesAuthenticator: (authenticator.id, asserted.signCount, authenticator.failedAttempts))
        return try await sessions.open(signIn, client: request.client, scope: scope, now: now)
    }

    /// RFC 8176 `amr`: the Latch SDK model's methods (`pin`, `face`, `fpt` and the key's kind), else `hwk` or `swk`
    /// (a backup-eligible passkey is a synced software key) and `user`; `mfa` when the user was verified.
    static func methods(_ authenticator: Authenticator, model: LatchAuthenticatorModel?, userVerified: Bool) -> [String] {
        let methods = model?.methods ?? [authenticator.backupEligible ? "swk" : "hwk"]
        return methods + ["user"] + (userVerified ? ["mfa"] : [])
    }

    /// A counter that went back is recorded for the operator (a cloned authenticator is possible) — unless the
    /// ceremony was completed before: a retried or replayed request repeats a counter without any clone. Consuming
    /// the ceremony and recording the event in one unit tells the two apart atomically.
    func flag(user: User, authenticator: Authenticator, ceremony: SingleUse) async throws {
        let event = SecurityEvent.now(
            .authenticatorCounterRegressed, actor: "system", userID: user.id, detail: authenticator.id, clock: clock, random: random)
        guard try await store.succeeds({ transaction, refusal in
            transaction.consume(ceremony, ifUnavailable: refusal)
            transaction.record(event)
        }) else { throw LatchError.invalidGrant("this ceremony was completed before; start a new one") }
        logger.warning("authenticator counter went back", metadata: ["user": "\(user.id)", "authenticator": "\(authenticator.id)"])
    }
}
