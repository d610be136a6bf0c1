import Foundation
import Hummingbird
import LatchCore
import LatchJOSE
import LatchWeb

/// Builds the router over assembled services and the built-in pages. Tests drive it in-process.
public func buildRouter(_ services: LatchServices) -> Router<LatchRequestContext> {
    buildRouter(services, pages: builtInPages)
}

/// The built-in pages, checked once. Their templates are constants that LatchWebTests checks; `LatchApp` makes its
/// own ``WebPages`` so that a deployment reports a broken template as a start-up error.
private let builtInPages: WebPages = {
    do {
        return try WebPages()
    } catch {
        preconditionFailure("built-in web pages: \(error)")
    }
}()

/// Builds the router over assembled services and `pages`. `LatchApp` serves it.
public func buildRouter(_ services: LatchServices, pages: WebPages) -> Router<LatchRequestContext> {
    let router = Router(context: LatchRequestContext.self, options: .autoGenerateHeadEndpoints)
    let methods = RouteMethods()
    // Outermost: the span covers everything else.
    if services.settings.tracing { router.add(middleware: RequestTracingMiddleware()) }
    // Outside the error middleware: refusals count with the status they answer.
    if let metrics = services.metrics { router.add(middleware: MetricsMiddleware(metrics: metrics)) }
    router.add(middleware: ErrorMiddleware(routes: methods))
    if services.settings.trustForwardedFor { router.add(middleware: ForwardedForMiddleware(hops: services.settings.trustedHops)) }
    router.add(middleware: AuditOriginMiddleware())
    let clock = services.clock
    let now: @Sendable () -> Double = { clock.now().timeIntervalSince1970 }
    let limited = RateLimitMiddleware(limiter: RateLimiter(perMinute: services.settings.rateLimitPerMinute, now: now))

    router.addRoutes(
        DiscoveryController(
            keys: services.keys, issuer: services.settings.issuer, algorithms: services.keys.idTokenAlgorithms.map(\.rawValue),
            scopes: services.settings.scopes, grantTypes: services.tokens.grantTypes, proofTypes: services.registration.proofTypes,
            introspection: services.issuerLogin != nil, customRegistration: services.customRegistration != nil,
            dpop: services.tokens.dpop != nil, authorization: services.authorization != nil
        ).endpoints)
    var oauth = OAuthController(tokens: services.tokens, revocation: services.revocation, sessions: services.sessions, clients: services.clients)
    oauth.metrics = services.metrics
    // The unauthenticated endpoints that write (sign-in, registration, challenge) are rate-limited per address.
    router.group("oauth2").add(middleware: limited).addRoutes(oauth.endpoints)
    router.group("v1").add(middleware: limited).addRoutes(
        RegistrationController(registration: services.registration, nonces: services.nonces, metrics: services.metrics).endpoints)
    router.addRoutes(HealthController(store: services.readiness).endpoints, atPath: "health")
    if let authorization = services.authorization {
        let controller = AuthorizationController(
            service: authorization, pages: HostedPages(renderer: pages.hosted), secureCookies: services.settings.issuer.lowercased().hasPrefix("https://"))
        router.group().add(middleware: limited).addRoutes(controller.endpoints)
    }

    let bearer = AccessTokenMiddleware(accessTokens: services.accessTokens, dpop: services.tokens.dpop)
    oauth.userInfoEndpoints(router.group("oauth2").add(middleware: bearer).group(context: SignedInContext.self))
    let me = router.group("v1/me").add(middleware: bearer).group(context: SignedInContext.self)
    MeController(sessions: services.sessions).add(to: me)
    if let audit = services.audit { AuditController(audit: audit).addMine(to: me) }
    if let fido = services.fido {
        let controller = FidoController(fido: fido, sessions: services.sessions)
        router.group("v1/fido").add(middleware: limited).addRoutes(controller.publicEndpoints)
        controller.addRegistration(to: router.group("v1/fido").add(middleware: bearer).group(context: SignedInContext.self))
        controller.addAuthenticators(to: me)
        router.addRoutes(controller.associationFiles)
    }
    if let oob = services.oob {
        let controller = OutOfBandController(oob: oob, sessions: services.sessions)
        router.group("v1/oob").add(middleware: limited).addRoutes(controller.publicEndpoints)
        router.addRoutes(controller.openPage)
        controller.addDeviceLinking(to: me)
    }
    if let issuerLogin = services.issuerLogin {
        let controller = IssuerLoginController(service: issuerLogin, sessions: services.sessions)
        // Resource servers call introspection at their own rate: authenticated, not limited per address.
        router.addRoutes(controller.introspection)
        controller.addSession(to: me)
    }
    if let custom = services.customRegistration {
        router.group("v1/custom-registrations").add(middleware: limited).addRoutes(CustomRegistrationController(service: custom).publicEndpoints)
    }
    let admin = router.group("admin/v1")
        .add(
            middleware: AdminTokenMiddleware(
                admins: services.adminTokenGate, failures: RateLimiter(perMinute: services.settings.adminFailuresPerMinute, now: now)))
        .group(context: AdminContext.self)
        .add(middleware: AdminPolicyMiddleware(audit: services.audit?.recorder))
    AdminController(admin: services.admin, issuer: services.settings.issuer).add(to: admin)
    if services.authorization != nil { AdminController(admin: services.admin, issuer: services.settings.issuer).addUpstreamIdPs(to: admin) }
    if let fido = services.fido { FidoController(fido: fido, sessions: services.sessions).addAdmin(to: admin) }
    if let oob = services.oob { OutOfBandController(oob: oob, sessions: services.sessions).addAdmin(to: admin) }
    if let issuerLogin = services.issuerLogin {
        IssuerLoginController(service: issuerLogin, sessions: services.sessions).addAdmin(to: admin)
    }
    if let custom = services.customRegistration { CustomRegistrationController(service: custom).addAdmin(to: admin) }
    if let audit = services.audit { AuditController(audit: audit).addAdmin(to: admin) }
    if let signIn = services.adminSignIn {
        // An enrollment link for an admin account's passkey (owners), and the console.
        admin.post("admins/:id/enrollment") { _, context -> Response in
            try JSONResponse.make(
                try await signIn.enrollmentLink(accountID: try context.parameters.require("id"), issuer: services.settings.issuer), status: .created)
        }
        ConsoleController(services: services, signIn: signIn, renderer: pages.console).add(to: router, limited: limited)
    }
    if let metrics = services.metrics {
        // Prometheus scrapes with an admin token (`Authorization: Bearer`).
        router.group("metrics")
            .add(
                middleware: AdminTokenMiddleware(
                    admins: services.adminTokenGate, failures: RateLimiter(perMinute: services.settings.adminFailuresPerMinute, now: now))
            )
            .group(context: AdminContext.self)
            .add(middleware: AdminPolicyMiddleware(audit: services.audit?.recorder))
            .get { _, _ -> Response in metrics.response() }
    }
    methods.record(router.routes)
    return router
}
