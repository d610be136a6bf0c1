import LatchJOSE
import LatchModel

/// Custom federated sign-in: the customer's backend signs a short-lived JWT for a registered user
/// (``FederatedAssertion``). The claims the issuer allows are kept on the user, updated when they change.
public struct FederatedSignIn: AssertionSignIn {
    public var method: String { "federated" }
    let store: any UserStore & SignOnIssuerStore
    let verifier: AssertionVerifier
    let settings: AssertionSettings
    /// Login issuers marked for custom federation sign sign-in JWTs too.
    var loginIssuers: LoginIssuerRegistry?

    public init(
        store: any UserStore & SignOnIssuerStore, verifier: AssertionVerifier, settings: AssertionSettings, loginIssuers: LoginIssuerRegistry? = nil
    ) {
        self.loginIssuers = loginIssuers
        self.store = store
        self.verifier = verifier
        self.settings = settings
    }

    /// Every assertion no other method recognised: register this method last.
    public func recognizes(_ assertion: ParsedJWS) -> Bool { true }

    public func verify(_ assertion: ParsedJWS, now: Int64) async throws -> VerifiedSignIn {
        let verified = try await verifier.verify(
            assertion,
            as: FederatedAssertion(
                store: store, code: .invalidGrant, noun: "assertion", skew: settings.clockSkew, now: now, loginIssuers: loginIssuers))
        let claims = verified.claims
        guard let user = try await store.federatedUser(issuer: claims.issuer, subject: claims.subject) else {
            throw LatchError.invalidGrant("this user is not registered")
        }
        let kept = FederatedAssertion.keptClaims(claims.all, allowed: verified.key.allowedClaims)
        return VerifiedSignIn(
            user: user, amr: ["fed"], consumes: .jti(claims.jwtID, issuer: claims.issuer, until: claims.expiresAt.adding(seconds: settings.clockSkew)),
            // Only a change is written: most sign-ins carry the same claims as last time.
            updatedClaims: kept == user.claims ? nil : kept)
    }
}
