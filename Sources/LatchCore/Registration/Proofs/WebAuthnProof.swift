import Foundation
import LatchJOSE
import LatchModel

/// `WEBAUTHN`: passwordless sign-up. The answer is a JSON object `{ceremonyId, credential, name?}` — the ceremony
/// from `POST /v1/fido/sign-up/options` and the authenticator's `RegistrationResponseJSON` — and the user created is
/// the one the ceremony chose: its id is the WebAuthn user handle, its username the one asked for (or the id). The
/// credential becomes the user's first FIDO authenticator, checked like any other (WebAuthn §7.1 and the deployment's
/// FIDO policy); the ceremony is consumed in the unit of work that creates the user. No device key is registered:
/// the user signs in with the `webauthn` grant.
public struct WebAuthnProof: RegistrationProof {
    public var proofType: RegistrationMethod { .webauthn }

    let fido: FidoService

    public init(fido: FidoService) {
        self.fido = fido
    }

    /// The credential JSON with its attestation object and client data (as the device attestation types: 48 KiB).
    public var maximumAnswerBytes: Int? { 48 * 1024 }

    public func checkShape(_ request: RegistrationRequest) throws(LatchError) {
        guard request.publicKey == nil else {
            throw LatchError.invalidInput("a WEBAUTHN registration carries its key in the credential, not in publicKey")
        }
    }

    public func verify(_ request: RegistrationRequest, now: Int64) async throws -> VerifiedRegistration {
        guard case .object(let answer)? = try? JSONValue.parse(Data(request.answer.utf8)), case .string(let ceremonyID)? = answer["ceremonyId"],
            let credential = answer["credential"], credential.objectValue != nil
        else {
            throw LatchError.invalidProof("the answer must be a JSON object with ceremonyId (a string) and credential (a RegistrationResponseJSON)")
        }
        var name: String?
        if let given = answer["name"] {
            guard case .string(let text) = given else { throw LatchError.invalidProof("name must be a string") }
            name = text
        }
        let ceremony: FidoCeremonies.Ceremony
        do {
            ceremony = try fido.ceremonies.check(ceremonyID, .signUp, now: now)
        } catch {
            throw LatchError.invalidProof(error.message)
        }
        guard let userID = ceremony.userID, let username = ceremony.bound else {
            throw LatchError.invalidProof("the ceremony names no new user")
        }
        let authenticator = try await fido.verifyNewCredential(credential, challenge: ceremony.challenge, userID: userID, name: name, now: now)
        return VerifiedRegistration(username: username, kind: .webauthn, userID: userID, authenticator: authenticator, consumes: ceremony.consumes)
    }
}
