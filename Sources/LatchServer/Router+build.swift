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

/// Builds the router over assembled services and `pages`. `LatchApp` serves it, with the `documents` its connections'
/// fast path answers from.
public func buildRouter(_ services: LatchServices, pages: WebPages, documents: WellKnownDocuments? = nil) -> Router<LatchRequestContext> {
    let documents = documents ?? WellKnownDocuments(services)
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

    router.addRoutes(documents.endpoints)
    var oauth = OAuthController(tokens: services.tokens, revocation: services.revocation, sessions: services.sessions, clients: services.clients)
    oauth.metrics = services.metrics
    // The unauthenticated endpoints that write (sign-in, registration, challenge) are rate-limited per address.
    router.group("oauth2").add(middleware: limited).addRoutes(oauth.endpoints)
    router.group("v1").add(middleware: limited).addRoutes(
        RegistrationController(registration: services.registration, nonces: services.nonces, metrics: services.metrics).endpoints)
    router.addRoutes(HealthController(store: services.readiness).endpoints, atPath: "health")
    let authorization = AuthorizationController(
        service: services.authorization, pages: HostedPages(renderer: pages.hosted),
        secureCookies: services.settings.issuer.lowercased().hasPrefix("https://"))
    router.group().add(middleware: limited).addRoutes(authorization.endpoints)

    let bearer = AccessTokenMiddleware(accessTokens: services.accessTokens, dpop: services.tokens.dpop)
    oauth.userInfoEndpoints(router.group("oauth2").add(middleware: bearer).group(context: SignedInContext.self))
    let me = router.group("v1/me").add(middleware: bearer).group(context: SignedInContext.self)
    MeController(sessions: services.sessions).add(to: me)
    let audit = AuditController(audit: services.audit)
    audit.addMine(to: me)
    let fido = FidoController(fido: services.fido, sessions: services.sessions)
    router.group("v1/fido").add(middleware: limited).addRoutes(fido.publicEndpoints)
    fido.addRegistration(to: router.group("v1/fido").add(middleware: bearer).group(context: SignedInContext.self))
    fido.addAuthenticators(to: me)
    router.addRoutes(fido.associationFiles)
    let oob = OutOfBandController(oob: services.oob, sessions: services.sessions)
    router.group("v1/oob").add(middleware: limited).addRoutes(oob.publicEndpoints)
    router.addRoutes(oob.openPage)
    oob.addDeviceLinking(to: me)
    let issuerLogin = IssuerLoginController(service: services.issuerLogin, sessions: services.sessions)
    // Resource servers call introspection at their own rate: authenticated, not limited per address.
    router.addRoutes(issuerLogin.introspection)
    issuerLogin.addSession(to: me)
    let custom = CustomRegistrationController(service: services.customRegistration)
    router.group("v1/custom-registrations").add(middleware: limited).addRoutes(custom.publicEndpoints)
    let admin = router.group("admin/v1")
        .add(
            middleware: AdminTokenMiddleware(
                admins: services.adminTokenGate, failures: RateLimiter(perMinute: services.settings.adminFailuresPerMinute, now: now)))
        .group(context: AdminContext.self)
        .add(middleware: AdminPolicyMiddleware(audit: services.audit.recorder))
    let adminController = AdminController(admin: services.admin, issuer: services.settings.issuer)
    adminController.add(to: admin)
    adminController.addUpstreamIdPs(to: admin)
    fido.addAdmin(to: admin)
    oob.addAdmin(to: admin)
    issuerLogin.addAdmin(to: admin)
    custom.addAdmin(to: admin)
    audit.addAdmin(to: admin)
    // An enrollment link for an admin account's passkey (owners), and the console.
    let signIn = services.adminSignIn
    admin.post("admins/:id/enrollment") { _, context -> Response in
        try JSONResponse.make(
            try await signIn.enrollmentLink(accountID: try context.parameters.require("id"), issuer: services.settings.issuer), status: .created)
    }
    ConsoleController(services: services, signIn: signIn, renderer: pages.console).add(to: router, limited: limited)
    if let metrics = services.metrics {
        // Prometheus scrapes with an admin token (`Authorization: Bearer`).
        router.group("metrics")
            .add(
                middleware: AdminTokenMiddleware(
                    admins: services.adminTokenGate, failures: RateLimiter(perMinute: services.settings.adminFailuresPerMinute, now: now))
            )
            .group(context: AdminContext.self)
            .add(middleware: AdminPolicyMiddleware(audit: services.audit.recorder))
            .get { _, _ -> Response in metrics.response() }
    }
    methods.record(router.routes)
    return router
}
