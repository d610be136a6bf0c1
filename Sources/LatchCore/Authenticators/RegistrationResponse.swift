import Foundation
import LatchAttestation
import LatchModel

extension WebAuthnRelyingParty {
    /// A `RegistrationResponseJSON` (WebAuthn Level 3 §5.1.4.2's JSON form) verified by §7.1 against `challenge` at
    /// `now`: the one registration check behind FIDO authenticators (in-app, passwordless sign-up, out-of-band), the
    /// new key of a PIN change and admin console passkeys.
    ///
    /// Its `response.clientDataJSON` and `response.attestationObject` must be base64url strings (each at most 96 KiB),
    /// else `invalid_input`; a §7.1 step that fails keeps its WebAuthn error code, its message naming the step after
    /// `context` (e.g. "credential ").
    func verifyRegistrationResponse(_ credential: JSONValue, challenge: [UInt8], now: Int64, context: String = "") throws(LatchError)
        -> VerifiedCredential
    {
        guard case .object(let response)? = credential["response"], let clientData = FidoService.bytes(response["clientDataJSON"]),
            let attestationObject = FidoService.bytes(response["attestationObject"])
        else { throw LatchError.invalidInput("credential must be a RegistrationResponseJSON with base64url response members") }
        var trace = AttestationTrace()
        do {
            return try verifyRegistration(
                clientDataJSON: clientData, attestationObject: attestationObject, challenge: challenge, at: Date(timeIntervalSince1970: TimeInterval(now)),
                trace: &trace)
        } catch {
            throw LatchError(error.code, "\(context)\(error.step): \(error.detail)")
        }
    }
}

extension FidoCeremonies {
    /// The ceremony a request body's `ceremonyId` names, for `kind`: as ``check(_:_:now:)``, refused as `invalid_input`
    /// (at the token endpoint the same check answers `invalid_grant`).
    func checkRequest(_ id: String, _ kind: Kind, now: Int64) throws(LatchError) -> Ceremony {
        do {
            return try check(id, kind, now: now)
        } catch {
            throw LatchError(.invalidInput, error.message)
        }
    }
}
