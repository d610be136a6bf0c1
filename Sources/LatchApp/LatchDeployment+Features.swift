import LatchCore
import LatchModel
import LatchServer

extension SharedEngines {
    /// Sessions: the signed-in user's own endpoints.
    func sessionService() -> SessionService {
        var sessions = SessionService(store: store, sensitiveMaxAge: configuration.sensitiveMaxAge, clock: clock, random: random, logger: logger)
        sessions.issuerLoginSensitiveMaxAge = configuration.issuerLogin.sensitiveMaxAge
        return sessions
    }

    /// The admin API.
    func adminService() -> AdminService {
        AdminService(
            store: store, keys: signingKeys, clients: clients, authenticator: adminTokenGate, assertions: assertions, clock: clock, random: random,
            sealer: sealer, evidenceApps: evidenceApps, logger: logger)
    }

    /// Tracing and metrics (the store's commits and, when it has one, its connection pool).
    func addObservability(to services: inout LatchServices) {
        services.settings.tracing = configuration.tracingEnabled
        if configuration.tracingEnabled { LatchTracing.setEnabled(true) }
        if configuration.metricsEnabled {
            let metrics = LatchMetrics()
            services.metrics = metrics
            store.observers.set(metrics)
            if let pool = store.connectionPool { metrics.observePool(pool) }
        }
    }

    /// The audit log, FIDO, the admin console's sign-in, issuer login, custom registration, browser sign-in
    /// (federation) and out-of-band enrollment.
    func features(hookCaller: (any HookCaller)?, upstreamHTTP: (any UpstreamHTTPClient)?) -> LatchServices.Features {
        let hookPolicy = HookAddressPolicy(allowPrivateAddresses: configuration.hooksAllowPrivateAddresses)
        var oobSettings = OutOfBandService.Settings(issuer: configuration.issuerURL)
        oobSettings.tokenLifetime = configuration.oobTokenLifetime
        return LatchServices.Features(
            fido: fido,
            oob: OutOfBandService(store: store, fido: fido, settings: oobSettings, clock: clock, random: random, logger: logger),
            issuerLogin: IssuerLoginService(
                store: store, registry: loginIssuers, accessTokens: accessTokens, refreshTokens: refreshTokens, settings: configuration.issuerLogin,
                clock: clock, random: random, logger: logger),
            customRegistration: CustomRegistrationService(
                store: store, clients: clients, sealer: sealer, caller: hookCaller ?? HTTPHookCaller(policy: hookPolicy), policy: hookPolicy,
                transactionKey: keys.customTransactions, clock: clock, random: random, logger: logger),
            authorization: AuthorizationService(
                store: store, clients: clients,
                upstream: UpstreamOpenIDClient(
                    http: upstreamHTTP ?? AsyncUpstreamHTTPClient(), clock: clock, timeout: configuration.federation.upstreamTimeout,
                    clockSkew: assertions.clockSkew, logger: logger),
                sealer: federationSealer, secrets: sealer, keys: signingKeys, tokens: tokens, settings: configuration.federation, clock: clock,
                random: random, logger: logger),
            audit: AuditLog(
                store: store, chain: store.auditChain,
                retention: configuration.auditRetentionDays == 0 ? nil : configuration.auditRetentionDays * 86_400, clock: clock, random: random,
                logger: logger),
            adminSignIn: AdminSignIn(
                store: store, authenticator: adminTokenGate, settings: AdminSignInSettings.defaults(issuer: configuration.issuerURL),
                key: keys.adminConsole, clock: clock, random: random, logger: logger))
    }
}
