import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel

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

    let fido: FidoService
    let scopes: ScopePolicy
    let sessions: SessionOpener
    let clock: LatchClock

    public init(fido: FidoService, scopes: ScopePolicy, sessions: SessionOpener, clock: LatchClock) {
        self.fido = fido
        self.scopes = scopes
        self.sessions = sessions
        self.clock = clock
    }

    public func exchange(_ request: TokenRequest) async throws -> TokenResponse {
        // Step 1. Parameters.
        let ceremonyID = try request.required("ceremony_id")
        let credentialText = try request.required("credential")
        let scope = try scopes.grant(request.parameters["scope"])
        let now = clock.seconds()
        let ceremony = try fido.ceremonies.check(ceremonyID, .authentication, now: now)
        guard credentialText.utf8.count <= 64 * 1024, let credential = try? JSONValue.parse(Data(credentialText.utf8)), credential.objectValue != nil else {
            throw LatchError.invalidRequest("credential must be an AuthenticationResponseJSON with base64url members")
        }
        // Steps 2–4. The credential and its user, the policy and PIN gate, the assertion (FidoService.checkAssertion).
        let checked = try await fido.checkAssertion(credential, ceremony: ceremony, now: now, code: .invalidGrant)
        // Step 5. One unit of work: ceremony consumed, counter moved and failures cleared (compare-and-set on both),
        // session opened.
        let signIn = VerifiedSignIn(
            user: checked.user, amr: Self.methods(checked.authenticator, model: checked.model, userVerified: checked.asserted.userVerified),
            consumes: ceremony.consumes, usesAuthenticator: checked.use)
        do {
            return try await sessions.open(signIn, client: request.client, scope: scope, now: now, dpop: request.dpop)
        } catch {
            // Verified, then refused (the ceremony raced, …): the PIN was right, so its reserved attempt goes back.
            await fido.releaseVerifiedPinAttempt(checked)
            throw error
        }
    }

    /// RFC 8176 `amr`: the Latch SDK model's methods (`pin`, `face`, `fpt` and the key's kind), else `hwk` or `swk`
    /// (a backup-eligible passkey is a synced software key) and `user`; `mfa` when the user was verified.
    static func methods(_ authenticator: Authenticator, model: LatchAuthenticatorModel?, userVerified: Bool) -> [String] {
        let methods = model?.methods ?? [authenticator.backupEligible ? "swk" : "hwk"]
        return methods + ["user"] + (userVerified ? ["mfa"] : [])
    }
}
