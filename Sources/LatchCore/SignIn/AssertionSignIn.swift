import LatchJOSE
import LatchModel

/// What a verified sign-in proof yields: who signs in, how, and the single-use value the sign-in spends.
public struct VerifiedSignIn: Sendable {
    public var user: User
    /// Authentication methods (RFC 8176 values, or Latch's `fed`).
    public var amr: [String]
    /// Consumed in the same transaction that opens the session.
    public var consumes: SingleUse
    /// Replaces the user's kept custom claims, when they changed.
    public var updatedClaims: [String: JSONValue]?
    /// An attested device key whose signature counter moves to `signCount` in the same transaction (compare-and-set:
    /// a counter that is not greater than the stored one refuses the sign-in).
    public var advancesSignCount: (keyID: String, signCount: UInt32)?
    /// A FIDO authenticator whose counter moves to `signCount` in the same transaction (compare-and-set).
    public var usesAuthenticator: (id: String, signCount: UInt32, failedAttempts: Int?)?
    /// The registered device sign-in key that signed the assertion, for attested DPoP (the proof key must be it).
    public var deviceKey: DeviceKey?
    /// The RFC 7638 thumbprint of a DPoP key the sign-in's attested key vouched for (App Attest: `dpop_jkt` in the
    /// signed `client_data`): the proof key must be it, and it counts as attested for attested DPoP.
    public var vouchedDPoPKey: String?

    public init(
        user: User, amr: [String], consumes: SingleUse, updatedClaims: [String: JSONValue]? = nil,
        advancesSignCount: (keyID: String, signCount: UInt32)? = nil, usesAuthenticator: (id: String, signCount: UInt32, failedAttempts: Int?)? = nil
    ) {
        self.usesAuthenticator = usesAuthenticator
        self.user = user
        self.amr = amr
        self.consumes = consumes
        self.updatedClaims = updatedClaims
        self.advancesSignCount = advancesSignCount
    }
}

/// A way to sign in with a JWT at the JWT-bearer grant (RFC 7523 §2.1). A new kind of sign-in assertion is a new
/// type conforming to this, registered with ``JWTBearerGrant`` ahead of the catch-all.
public protocol AssertionSignIn: Sendable {
    /// The method's name where sign-ins are counted by method (`latch_signins_total{method=…}`): stable, lowercase.
    var method: String { get }
    /// Whether this method takes `assertion`, decided from the token alone (no lookup, nothing trusted yet).
    func recognizes(_ assertion: ParsedJWS) -> Bool
    /// Verifies the assertion — key, signature, claims — at `now`, and says who signs in.
    func verify(_ assertion: ParsedJWS, now: Int64) async throws -> VerifiedSignIn
}
