import LatchJOSE
import LatchModel

/// The JWT-bearer grant (RFC 7523 §2.1): a signed assertion is exchanged for a session and its tokens.
///
/// - Step 1. `assertion` is present and the requested scope is allowed.
/// - Step 2. The assertion passes the checks every JWT gets (``AssertionVerifier/parse(_:code:noun:)``).
/// - Step 3. The first sign-in method that recognises it — from the token alone — verifies it.
/// - Step 4. The session opens, spending the assertion's single-use value.
public struct JWTBearerGrant: TokenGrant {
    public var grantType: String { GrantType.jwtBearer }

    let methods: [any AssertionSignIn]
    let verifier: AssertionVerifier
    let scopes: ScopePolicy
    let sessions: SessionOpener
    let clock: LatchClock

    /// `methods` are asked in order; put a catch-all last.
    public init(methods: [any AssertionSignIn], verifier: AssertionVerifier, scopes: ScopePolicy, sessions: SessionOpener, clock: LatchClock) {
        self.methods = methods
        self.verifier = verifier
        self.scopes = scopes
        self.sessions = sessions
        self.clock = clock
    }

    public func exchange(_ request: TokenRequest) async throws -> TokenResponse {
        // Step 1.
        let assertion = try request.required("assertion")
        let scope = try scopes.grant(request.parameters["scope"])
        // Step 2.
        let parsed = try verifier.parse(assertion, code: .invalidGrant, noun: "assertion")
        // Step 3.
        guard let method = methods.first(where: { $0.recognizes(parsed) }) else {
            throw LatchError.invalidGrant("no sign-in method accepts this assertion")
        }
        SignInReport.record(method.method)
        let now = clock.seconds()
        let signIn = try await method.verify(parsed, now: now)
        // Step 4.
        return try await sessions.open(signIn, client: request.client, scope: scope, now: now, dpop: request.dpop)
    }
}
