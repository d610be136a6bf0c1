import LatchModel

/// `FSSO`: the answer is a custom federated JWT (``FederatedAssertion``); the username is its `sub`, and the
/// user has no device key (they sign in with further such JWTs).
public struct FederatedJWTProof: RegistrationProof {
    public var proofType: RegistrationMethod { .fsso }

    let store: any SignOnIssuerStore
    let verifier: AssertionVerifier
    let assertions: AssertionSettings

    /// Login issuers marked for custom federation sign registration JWTs too.
    var loginIssuers: LoginIssuerRegistry?

    public init(store: any SignOnIssuerStore, verifier: AssertionVerifier, assertions: AssertionSettings, loginIssuers: LoginIssuerRegistry? = nil) {
        self.loginIssuers = loginIssuers
        self.store = store
        self.verifier = verifier
        self.assertions = assertions
    }

    public func checkShape(_ request: RegistrationRequest) throws(LatchError) {
        guard request.publicKey == nil else { throw LatchError.invalidInput("FSSO registrations carry no device key") }
    }

    public func verify(_ request: RegistrationRequest, now: Int64) async throws -> VerifiedRegistration {
        let verified = try await verifier.verify(
            request.answer,
            as: FederatedAssertion(
                store: store, code: .invalidProof, noun: "answer", skew: assertions.clockSkew, now: now, loginIssuers: loginIssuers))
        let claims = verified.claims
        if let problem = Usernames.federatedProblem(claims.subject) {
            throw LatchError.invalidProof("sub cannot name a user: it \(problem)")
        }
        return VerifiedRegistration(
            username: claims.subject, kind: .federated, federatedIdentity: (claims.issuer, claims.subject),
            claims: FederatedAssertion.keptClaims(claims.all, allowed: verified.key.allowedClaims),
            consumes: .jti(claims.jwtID, issuer: claims.issuer, until: claims.expiresAt.adding(seconds: assertions.clockSkew)))
    }
}
