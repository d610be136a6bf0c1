import Foundation
import LatchAttestation
import LatchModel

extension PublicKeyCredentialParameters {
    /// The algorithms the relying party verifies (``WebAuthnPublicKey/Algorithm``), in its order of preference.
    static var verifiable: [Self] { WebAuthnPublicKey.Algorithm.allCases.map { Self(alg: $0.rawValue) } }
}

extension FidoCreationOptions {
    /// The options of a registration ceremony Latch starts (users' authenticators, the console's passkeys): the
    /// user handle is `userID`'s UTF-8, every verifiable algorithm is offered, `exclude`'s credentials are excluded,
    /// and the timeout is the ceremony's `lifetime` (seconds).
    static func latch(
        ceremonyID: String, challenge: [UInt8], rp: PublicKeyCredentialRpEntity, userID: String, username: String, exclude: [Data], lifetime: Int64,
        selection: AuthenticatorSelectionCriteria, attestation: AttestationConveyancePreference
    ) -> Self {
        Self(
            ceremonyId: ceremonyID,
            publicKey: .init(
                rp: rp, user: .init(id: Base64URLBytes(userID.utf8), name: username, displayName: username), challenge: Base64URLBytes(challenge),
                pubKeyCredParams: PublicKeyCredentialParameters.verifiable, timeout: FidoRequestOptions.timeout(lifetime),
                excludeCredentials: exclude.map { .init(id: Base64URLBytes($0)) }, authenticatorSelection: selection, attestation: attestation))
    }
}

extension FidoRequestOptions {
    /// The options of an authentication ceremony Latch starts, allowing `allow`'s credentials (none: a
    /// discoverable-credential ceremony); the timeout is the ceremony's `lifetime` (seconds).
    static func latch(
        ceremonyID: String, challenge: [UInt8], rpID: String, allow: [Data], lifetime: Int64, userVerification: UserVerificationRequirement
    ) -> Self {
        Self(
            ceremonyId: ceremonyID,
            publicKey: .init(
                challenge: Base64URLBytes(challenge), timeout: timeout(lifetime), rpId: rpID, allowCredentials: allow.map { .init(id: Base64URLBytes($0)) },
                userVerification: userVerification))
    }

    /// A ceremony's lifetime in seconds as WebAuthn's `timeout`, in milliseconds.
    static func timeout(_ lifetime: Int64) -> UInt32 { UInt32(clamping: lifetime * 1000) }
}
