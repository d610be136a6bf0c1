import LatchCore
import LatchModel

extension SharedEngines {
    /// The token endpoint: its grants, the JWT-bearer grant's sign-in methods (the catch-all last), the DPoP gate.
    func tokenEndpoint() -> TokenEndpoint {
        let grants: [any TokenGrant] = [
            AuthorizationCodeGrant(
                store: store, sealer: federationSealer, minter: minter, refreshTokens: refreshTokens, tokens: tokens, clock: clock, random: random,
                logger: logger),
            WebAuthnGrant(fido: fido, scopes: scopes, sessions: sessionOpener, clock: clock),
            AppAttestGrant(store: store, apps: evidenceApps, nonces: nonceCodec, scopes: scopes, sessions: sessionOpener, clock: clock),
            JWTBearerGrant(
                methods: [
                    DeviceKeySignIn(store: store, verifier: verifier, settings: assertions, nonces: nonceCodec),
                    FederatedSignIn(store: store, verifier: verifier, settings: assertions, loginIssuers: loginIssuers),
                ],
                verifier: verifier, scopes: scopes, sessions: sessionOpener, clock: clock),
            RefreshTokenGrant(
                store: store, minter: minter, refreshTokens: refreshTokens, tokens: tokens, clock: clock, consumers: store, audit: audit,
                logger: logger),
            IssuerLoginGrant(
                store: store, registry: loginIssuers, verifier: verifier, scopes: scopes, accessTokens: accessTokens, minter: minter,
                refreshTokens: refreshTokens, tokens: tokens, settings: configuration.issuerLogin, clock: clock, random: random, logger: logger),
        ]
        return TokenEndpoint(
            grants: grants, clients: clients,
            dpop: DPoPGate(
                store: store, settings: DPoPSettings(requireNonce: configuration.dpopRequireNonce),
                nonces: DPoPNonces(key: keys.dpopNonces, lifetime: 300, clock: clock), issuer: configuration.issuerURL, clock: clock),
            failures: audit)
    }

    /// Revocation (RFC 7009) of refresh and access tokens.
    func revocation() -> TokenRevocation {
        TokenRevocation(store: store, refreshTokens: refreshTokens, accessTokens: accessTokens, clock: clock, random: random, logger: logger)
    }
}
