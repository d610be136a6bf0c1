import Foundation
import LatchAttestation

/// What device attestation trusts and requires on this deployment.
public struct AttestationSettings: Sendable {
    /// Seconds a registration challenge stays valid.
    public var challengeLifetime: Int64 = 300
    /// Longest accepted evidence (`answer`), bytes.
    public var maximumAnswerBytes = 48 * 1024
    /// Roots App Attest chains must end at: Apple's App Attest root, plus the test root while test keys are on.
    public var appAttestAnchors: TrustAnchors
    /// Roots Android key attestation chains must end at: Google's hardware attestation roots, plus the test root
    /// while test keys are on.
    public var androidKeyAnchors: TrustAnchors

    /// What Android key attestation requires (security level, verified boot, revoked serials).
    public var androidKeyPolicy = AndroidKeyAttestation.Policy()
    /// What Play Integrity verdicts must say.
    public var playIntegrityPolicy = PlayIntegrity.Policy()

    public init(appAttestAnchors: TrustAnchors, androidKeyAnchors: TrustAnchors) {
        self.appAttestAnchors = appAttestAnchors
        self.androidKeyAnchors = androidKeyAnchors
    }
}
