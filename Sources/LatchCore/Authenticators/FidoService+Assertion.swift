import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel
import Logging

extension FidoService {
    /// An assertion that verified: the user, the authenticator and what the assertion moves it to.
    struct CheckedAssertion: Sendable {
        var user: User
        var authenticator: Authenticator
        var model: LatchAuthenticatorModel?
        var asserted: WebAuthnRelyingParty.VerifiedAssertion

        /// The counter move and the failure count it was read with (for the compare-and-set that records the use).
        /// A PIN authenticator's verified attempt clears whatever count there is (nil): its reservation enforced the
        /// lockout, and concurrent right PINs must not refuse each other for moving the count.
        var use: (id: String, signCount: UInt32, failedAttempts: Int?) {
            (authenticator.id, asserted.signCount, model == .pin ? nil : authenticator.failedAttempts)
        }
    }

    /// Checks an AuthenticationResponseJSON against `ceremony` (W3C WebAuthn §7.2): the credential is found by its id;
    /// a ceremony bound to a user accepts only that user's credentials, a discoverable one needs the `userHandle`;
    /// a model denied by the policy is refused; a PIN authenticator locked out or cooling down is refused before any
    /// check, and otherwise — once steps 10–20 and its UV flag pass — reserves the attempt atomically before its
    /// signature is verified (refused when no attempt is left or a cool-down runs, on any replica): a signature that
    /// does not verify keeps the reservation as the counted wrong PIN, a verified one is settled by the unit that
    /// records the use (``CheckedAssertion/use`` carries the reserved count); a counter that went back is recorded (with the
    /// ceremony consumed). Refusals carry `code` (`invalid_grant` at the token endpoint), or for `nil` their own
    /// WebAuthn code (`pin_attempt_failed` for a wrong PIN).
    func checkAssertion(_ credential: JSONValue, ceremony: FidoCeremonies.Ceremony, now: Int64, code: ErrorCode?) async throws -> CheckedAssertion {
        func refusal(_ own: ErrorCode, _ message: String) -> LatchError {
            code.map { LatchError($0, message, detail: own.rawValue) } ?? LatchError(own, message)
        }
        guard case .object(let fields) = credential, let rawID = Self.bytes(fields["rawId"] ?? fields["id"]),
            case .object(let response)? = fields["response"], let clientData = Self.bytes(response["clientDataJSON"]),
            let authenticatorData = Self.bytes(response["authenticatorData"]), let signature = Self.bytes(response["signature"])
        else {
            throw LatchError(code == .invalidGrant ? .invalidRequest : .invalidInput, "credential must be an AuthenticationResponseJSON with base64url members")
        }
        // The credential, and the user it may act for.
        guard let (user, authenticator) = try await store.authenticator(credentialID: Data(rawID)) else {
            throw refusal(.notFound, "no authenticator is registered with this credential id")
        }
        let model = LatchAuthenticatorModel.of(authenticator)
        // A bound PIN authenticator's assertion is vouched for by its device first: without a binding signature that
        // verifies, it is refused before anything is read, reserved or counted — a stranger's key is not a wrong PIN.
        if model == .pin, let bindingKey = authenticator.pinBindingKey {
            do {
                try Self.checkPinBinding(
                    fields["pinBinding"], key: bindingKey, challenge: ceremony.challenge, credentialID: rawID, authenticatorData: authenticatorData,
                    clientDataJSON: clientData)
            } catch {
                throw code.map { LatchError($0, error.message, detail: error.code.rawValue, members: ["reason": .string(error.code.rawValue)]) } ?? error
            }
        }
        let userHandle = Self.bytes(response["userHandle"])
        if let expected = ceremony.userID {
            guard expected == user.id else { throw refusal(.webauthnClientDataInvalid, "this credential does not belong to the user the ceremony is for") }
        } else {
            guard userHandle == Array(user.id.utf8) else {
                throw refusal(.webauthnClientDataInvalid, "a discoverable sign-in needs the credential's user handle")
            }
        }
        // The policy: a model denied since registration no longer signs; a PIN authenticator locked out or cooling
        // down is refused before any check (nothing counted).
        do {
            try admitModel(Array(authenticator.aaguid))
        } catch {
            throw refusal(error.code, error.message)
        }
        try settings.pin.admit(authenticator, now: now, code: code ?? .pinAttemptFailed)
        // The assertion.
        let party = try await relyingParty()
        var trace = AttestationTrace()
        var reserved = authenticator
        if model == .pin {
            // Everything but the signature first (nothing counted for a malformed or foreign assertion), then the
            // attempt is reserved: concurrent wrong PINs never get more verifications than attempts are left.
            do {
                try party.checkAssertionBeforeSignature(
                    clientDataJSON: clientData, authenticatorData: authenticatorData, challenge: ceremony.challenge, requireUserVerified: true,
                    trace: &trace)
            } catch {
                throw refusal(error.code, "\(error.step): \(error.detail)")
            }
            reserved.failedAttempts = try await reservePinAttempt(of: authenticator, now: now, code: code ?? .pinAttemptFailed)
            reserved.lastFailedAt = now
        }
        let asserted: WebAuthnRelyingParty.VerifiedAssertion
        do {
            asserted = try party.verifyAuthentication(
                clientDataJSON: clientData, authenticatorData: authenticatorData, signature: signature, challenge: ceremony.challenge,
                publicKey: try WebAuthnPublicKey(coseBytes: Array(authenticator.publicKeyCOSE)), storedSignCount: authenticator.signCount,
                userHandle: userHandle, trace: &trace)
        } catch {
            // A PIN authenticator's key comes from the PIN: a signature that does not verify is a wrong PIN, and the
            // reservation is its count. Any other refusal gives the reservation back.
            if model == .pin {
                if error.code == .webauthnSignatureInvalid {
                    throw try await settlePinFailure(of: reserved, user: user, code: code ?? .pinAttemptFailed)
                }
                let id = authenticator.id
                try await store.write { $0.releasePinAttempt(id: id) }
            }
            if error.code == .webauthnCounterRegressed {
                // Step 22 follows step 21: the signature verified, so the refusal names the user.
                do {
                    try await flagCounter(user: user, authenticator: authenticator, ceremony: ceremony.consumes, code: code)
                } catch let refused as LatchError {
                    throw refused.afterVerifying(user.id)
                }
                throw refusal(error.code, "\(error.step): \(error.detail)").afterVerifying(user.id)
            }
            throw refusal(error.code, "\(error.step): \(error.detail)")
        }
        return CheckedAssertion(user: user, authenticator: reserved, model: model, asserted: asserted)
    }

    /// Checks a PIN assertion's `pinBinding {signature}` (docs/fido.md, "PIN binding"): the binding key `key`'s ES256
    /// signature (R ‖ S, base64url) over ``PinBinding/assertionMessage(challenge:credentialID:authenticatorData:clientDataJSON:)``.
    /// Sizes are checked before anything is decoded or verified; refused with `pin_binding_invalid`.
    static func checkPinBinding(
        _ member: JSONValue?, key: Data, challenge: [UInt8], credentialID: [UInt8], authenticatorData: [UInt8], clientDataJSON: [UInt8]
    ) throws(LatchError) {
        guard let member else {
            throw LatchError(.pinBindingInvalid, "this PIN authenticator is bound to its device: the assertion needs its pinBinding signature")
        }
        guard case .object(let binding) = member, binding.count == 1, let text = binding["signature"]?.stringValue,
            let signature = PinBinding.signature(base64URL: text)
        else { throw LatchError(.pinBindingInvalid, "pinBinding must be {signature}: 64 bytes (ES256 R ‖ S) in base64url") }
        let message = PinBinding.assertionMessage(
            challenge: challenge, credentialID: credentialID, authenticatorData: authenticatorData, clientDataJSON: clientDataJSON)
        guard PinBinding.verifies(signature, publicKey: key, message: message) else {
            throw LatchError(.pinBindingInvalid, "the pinBinding signature does not verify with this PIN authenticator's binding key")
        }
    }

    /// A counter that went back is recorded for the operator (a cloned authenticator is possible) — unless the
    /// ceremony was completed before: a retried or replayed request repeats a counter without any clone. Consuming
    /// the ceremony and recording the event in one unit tells the two apart atomically.
    func flagCounter(user: User, authenticator: Authenticator, ceremony: SingleUse, code: ErrorCode?) async throws {
        let event = SecurityEvent.now(
            .authenticatorCounterRegressed, actor: "system", userID: user.id, detail: authenticator.id, clock: clock, random: random)
        guard try await store.succeeds({ transaction, refusal in
            transaction.consume(ceremony, ifUnavailable: refusal)
            transaction.record(event)
        }) else { throw LatchError(code ?? .invalidInput, "this ceremony was completed before; start a new one") }
        logger.warning("authenticator counter went back", metadata: ["user": "\(user.id)", "authenticator": "\(authenticator.id)"])
    }
}
