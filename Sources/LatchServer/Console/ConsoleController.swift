import Foundation
import HTTPTypes
import Hummingbird
import LatchCore
import LatchModel
import LatchWeb
import Logging

/// The web console (`/console`): server-rendered pages over the admin engines, for admins signed in with a passkey.
///
/// Every page and action names the admin API route it stands for, and the caller's role is checked against
/// ``AdminPolicy`` for that route — the console can do nothing the API would refuse. Forms carry a CSRF token (an
/// HMAC of the session's token id) and are refused without it or from another origin; the session cookie is
/// `HttpOnly`, `SameSite=Strict` and `__Host-` on https; sessions end after the idle timeout, the absolute lifetime,
/// at sign-out, or when their account or token goes; dangerous actions need a passkey check in the last minutes.
/// Refusals (forged cookies, missing CSRF tokens, refused roles, oversized forms) are audited.
///
/// The pages and their words (English, German by `Accept-Language`) are LatchWeb's ``ConsolePages``: this controller
/// reads requests and forms, calls the engines an action changes, and renders, redirects and sets cookies.
struct ConsoleController {
    let services: LatchServices
    let signIn: AdminSignIn
    let renderer: ConsoleRenderer
    let pageServices: ConsolePages.Services
    let secureCookies: Bool
    let logger = Logger(label: "latch.console")

    init(services: LatchServices, signIn: AdminSignIn, renderer: ConsoleRenderer) {
        self.services = services
        self.signIn = signIn
        self.renderer = renderer
        pageServices = ConsolePages.Services(
            issuer: services.settings.issuer, admin: services.admin, signIn: signIn, fido: services.fido, oob: services.oob,
            issuerLogin: services.issuerLogin, customRegistration: services.customRegistration, audit: services.audit,
            clock: services.clock)
        secureCookies = services.settings.issuer.lowercased().hasPrefix("https://")
    }

    /// The request's language (`Accept-Language`; English by default).
    func language(_ request: Request) -> Language { Language(acceptLanguage: request.headers[.acceptLanguage]) }

    /// The page builders in the request's language.
    func pages(_ request: Request) -> ConsolePages { ConsolePages(services: pageServices, language: language(request)) }

    /// The pages that refuse or report, in the request's language.
    func notices(_ request: Request) -> ConsoleNotices { ConsoleNotices(language: language(request)) }

    static let cookieName = "latch_console"
    /// The largest console form read.
    static let maximumFormBytes = 16 * 1024
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    var issuer: String { services.settings.issuer }
    var admin: AdminService { services.admin }
    var recorder: AuditRecorder { services.audit.recorder }

    /// What a console handler answers.
    enum Outcome {
        case view(ConsoleView)
        /// 303 to a console path.
        case redirect(String)
    }

    // MARK: Routes

    /// `limited`: the per-address rate limit of the unauthenticated endpoints that write, for sign-in and enrollment.
    func add(to router: Router<LatchRequestContext>, limited: RateLimitMiddleware) {
        let console = router.group("console")
        console.get("assets/console.css") { _, _ in Self.asset(ConsoleTemplates.stylesheet, type: "text/css; charset=utf-8") }
        console.get("assets/console.js") { _, _ in Self.asset(ConsoleTemplates.script, type: "text/javascript; charset=utf-8") }
        addSignIn(to: router.group("console").add(middleware: limited))
        addPages(to: console)
    }

    static func asset(_ text: String, type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "public, max-age=3600", .xContentTypeOptions: "nosniff"],
            body: .init(byteBuffer: .init(string: text)))
    }

    // MARK: Sessions and refusals

    /// The console cookie's value, if the request has one (only the `__Host-` one on https).
    func cookie(_ request: Request) -> String? {
        let name = secureCookies ? "__Host-" + Self.cookieName : Self.cookieName
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name { return parts[1].trimmingCharacters(in: .whitespaces) }
            }
        }
        return nil
    }

    func setCookie(_ value: String?) -> HTTPField {
        let name = secureCookies ? "__Host-" + Self.cookieName : Self.cookieName
        let maxAge = value == nil ? 0 : signIn.absoluteLifetime
        return HTTPField(
            name: .setCookie, value: "\(name)=\(value ?? ""); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict" + (secureCookies ? "; Secure" : ""))
    }

    /// The request's session, or the response that refuses it (a redirect to sign-in, the cookie cleared).
    enum SessionCheck {
        case signedIn(ConsoleSession)
        case refused(Response)
    }

    func session(_ request: Request) async throws -> SessionCheck {
        guard let value = cookie(request) else { return .refused(redirect("/console/sign-in")) }
        switch try await signIn.session(cookie: value) {
        case .success(let session): return .signedIn(session)
        case .failure(let refusal):
            if refusal == .forged {
                await recorder.recordAlone(.admin("console", "session_refused"), actor: "anonymous", detail: "a console cookie Latch did not seal")
            }
            var response = redirect("/console/sign-in?reason=" + (refusal == .idle ? "idle" : refusal == .ended ? "ended" : "invalid"))
            response.headers.append(setCookie(nil))
            return .refused(response)
        }
    }

    /// Runs a console page or action for route `route` (`"GET /admin/v1/users"`: the admin API route it stands for,
    /// whose roles it takes): the session, the role, for a post the form (size, origin, CSRF token), for a dangerous
    /// action a recent passkey check; then `body`, as the signed-in admin.
    ///
    /// `page`, for a form's action: the page the form is on. A refused form (a ``LatchError``) then answers that page
    /// with the error and the form refilled with what was posted (secrets left out), instead of an error page.
    func handle(
        _ request: Request, _ context: LatchRequestContext, route: String, dangerous: Bool = false,
        page: (@Sendable (ConsoleSession) async throws -> ConsoleView)? = nil,
        _ body: @escaping @Sendable (ConsoleSession, [String: String]) async throws -> Outcome
    ) async -> Response {
        do {
            let session: ConsoleSession
            switch try await self.session(request) {
            case .signedIn(let found): session = found
            case .refused(let refusal): return refusal
            }
            return try await AuditOrigin.with({ $0.admin = "\(session.caller.accountID)/\(session.caller.tokenID)" }) {
                try await run(request, session: session, route: route, dangerous: dangerous, page: page, body)
            }
        } catch {
            logger.error("console request failed", metadata: ["error": "\(error)"])
            return render(notices(request).unavailable(), session: nil, for: request)
        }
    }

    private func run(
        _ request: Request, session: ConsoleSession, route: String, dangerous: Bool, page: (@Sendable (ConsoleSession) async throws -> ConsoleView)?,
        _ body: @escaping @Sendable (ConsoleSession, [String: String]) async throws -> Outcome
    ) async throws -> Response {
        let parts = route.split(separator: " ", maxSplits: 1).map { String($0) }
        let notices = self.notices(request)
        do {
            try AdminPolicy.check(session.caller.role, method: parts[0], template: parts[1])
        } catch {
            await recorder.recordAlone(
                .admin("access", "forbidden"), actor: "admin", detail: "console: role \(session.caller.role.rawValue) refused \(route): \(error.message)")
            return render(notices.refused(.role(error.message)), session: session, for: request)
        }
        var form: [String: String] = [:]
        if request.method == .post {
            guard let buffer = try? await request.body.collect(upTo: Self.maximumFormBytes) else {
                await recorder.recordAlone(.admin("console", "form_refused"), actor: "admin", detail: "\(route): a form over 16 KiB")
                return render(notices.refused(.formTooLarge), session: session, for: request)
            }
            guard let parsed = try? buffer.withUnsafeReadableBytes({ try FormURLEncoded.parse($0, repeatable: []) }) else {
                return render(notices.refused(.unreadableForm), session: session, for: request)
            }
            form = parsed.single
            // Same origin only (browsers send Origin with every form post), and the session's CSRF token.
            let origin = request.headers[.origin]
            guard origin == nil || origin == Self.origin(of: issuer), signIn.checkCSRF(form["csrf"], session: session) else {
                await recorder.recordAlone(
                    .admin("console", "csrf_refused"), actor: "admin",
                    detail: "\(route): \(form["csrf"] == nil ? "no CSRF token" : "a wrong CSRF token")\(origin.map { " from origin \($0.prefix(100))" } ?? "")")
                return render(notices.refused(.staleForm), session: session, for: request)
            }
            if dangerous, !session.recentlyAuthenticated {
                return render(notices.reauthentication(session, next: form["back"].flatMap(Self.consolePath) ?? "/console"), session: session, for: request)
            }
        }
        let outcome: Outcome
        do {
            outcome = try await body(session, form)
        } catch let error as LatchError {
            let status = Int(ErrorStatus.status(for: error.code).code)
            guard request.method == .post, let page else { return render(notices.failed(error, status: status), session: session, for: request) }
            var view = notices.refusedForm(try await page(session), error, status: status)
            view.refill(action: request.uri.path, with: form)
            return render(view, session: session, for: request)
        }
        switch outcome {
        case .view(let view): return render(view, session: session, for: request)
        case .redirect(let path):
            var response = redirect(path)
            if let cookie = session.cookie { response.headers.append(setCookie(cookie)) }
            return response
        }
    }

    /// `path` when it is a console path (where a re-authentication may send the browser back to).
    static func consolePath(_ path: String) -> String? {
        path.hasPrefix("/console") && !path.hasPrefix("//") && path.utf8.count <= 512 && !path.contains("\\")
            && path.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value < 0x7F } ? path : nil
    }

    static func origin(of issuer: String) -> String {
        guard let url = URLComponents(string: issuer), let scheme = url.scheme, let host = url.host else { return issuer }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    func redirect(_ path: String) -> Response {
        var headers = securityHeaders
        headers[.location] = path
        return Response(status: .seeOther, headers: headers)
    }

    var securityHeaders: HTTPFields {
        [
            .cacheControl: "no-store", .contentSecurityPolicy: Self.contentSecurityPolicy, .xContentTypeOptions: "nosniff", .xFrameOptions: "DENY",
            // Not `no-referrer`: under it, browsers send `Origin: null` with the console's own form posts. Other sites
            // never get a referrer either way.
            .referrerPolicy: "same-origin",
        ]
    }

    /// `view` as the answer to `request`, in its language, for `session`'s admin (nil: no one signed in).
    func render(_ view: ConsoleView, session: ConsoleSession?, for request: Request) -> Response {
        let viewer = session.map { ConsoleRenderer.Viewer(username: $0.username, role: $0.caller.role.rawValue, csrf: $0.csrf) }
        let html = renderer.render(view, viewer: viewer, language: language(request), may: { route in session.map { ConsolePages.may($0, route) } ?? false })
        var headers = securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        if let cookie = session?.cookie { headers.append(setCookie(cookie)) }
        return Response(status: .init(code: view.status), headers: headers, body: .init(byteBuffer: .init(string: html)))
    }

    // MARK: Sign-in, enrollment, re-authentication, sign-out

    struct Ceremony: Decodable {
        var ceremonyId: String
        var credential: JSONValue
        var ticket: String?
        var name: String?
        var next: String?
    }

    struct Ticket: Decodable {
        var ticket: String
    }

    struct Done: Encodable {
        var redirect: String
    }

    func addSignIn(to console: RouterGroup<LatchRequestContext>) {
        console.get("sign-in") { request, _ -> Response in
            if let value = cookie(request), case .success = try await signIn.session(cookie: value) { return redirect("/console") }
            let reason = request.uri.queryParameters.get("reason").flatMap { ConsoleNotices.SignInReason(rawValue: String($0)) }
            return render(notices(request).signIn(reason: reason), session: nil, for: request)
        }
        console.post("sign-in/options") { request, _ -> Response in
            try checkOrigin(request)
            return try JSONResponse.make(signIn.signInOptions())
        }
        console.post("sign-in") { request, _ -> Response in
            try checkOrigin(request)
            let body = try await request.decodeJSON(Ceremony.self)
            let session = try await signIn.signIn(ceremonyID: body.ceremonyId, credential: body.credential)
            return signedIn(session, to: "/console")
        }
        console.get("enroll") { request, _ -> Response in
            let view = try await pages(request).enroll(ticket: request.uri.queryParameters.get("ticket").map { String($0) })
            return render(view, session: nil, for: request)
        }
        console.post("enroll/options") { request, _ -> Response in
            try checkOrigin(request)
            return try JSONResponse.make(try await signIn.enrollmentOptions(ticket: try await request.decodeJSON(Ticket.self).ticket))
        }
        console.post("enroll") { request, _ -> Response in
            try checkOrigin(request)
            let body = try await request.decodeJSON(Ceremony.self)
            guard let ticket = body.ticket else { throw LatchError.invalidInput("ticket is required") }
            let session = try await signIn.enroll(ticket: ticket, ceremonyID: body.ceremonyId, credential: body.credential, name: body.name)
            return signedIn(session, to: "/console")
        }
        console.post("reauth/options") { request, _ -> Response in
            _ = try await sessionForScript(request)
            return try JSONResponse.make(signIn.signInOptions())
        }
        console.post("reauth") { request, _ -> Response in
            let session = try await sessionForScript(request)
            let body = try await request.decodeJSON(Ceremony.self)
            let renewed = try await AuditOrigin.with({ $0.admin = "\(session.caller.accountID)/\(session.caller.tokenID)" }) {
                try await signIn.signIn(ceremonyID: body.ceremonyId, credential: body.credential, reauthenticating: session)
            }
            return signedIn(renewed, to: body.next.flatMap(Self.consolePath) ?? "/console")
        }
        console.post("sign-out") { request, context -> Response in
            await handle(request, context, route: "GET /admin/v1/tokens") { session, _ in
                try await signIn.signOut(session)
                return .redirect("/console/sign-in?reason=signed-out")
            }
        }
    }

    /// The JSON answer of a completed ceremony: where to go, and the session cookie.
    func signedIn(_ session: ConsoleSession, to path: String) -> Response {
        var response = (try? JSONResponse.make(Done(redirect: path))) ?? Response(status: .ok)
        if let cookie = session.cookie { response.headers.append(setCookie(cookie)) }
        return response
    }

    /// The console's script calls come from its own pages: a cross-origin `Origin` is refused.
    func checkOrigin(_ request: Request) throws {
        if let origin = request.headers[.origin], origin != Self.origin(of: issuer) {
            throw LatchError(.invalidCSRFToken, "console calls must come from the console's own origin")
        }
    }

    /// The session of a script call, which carries the CSRF token in `X-CSRF-Token`.
    func sessionForScript(_ request: Request) async throws -> ConsoleSession {
        try checkOrigin(request)
        guard let value = cookie(request), case .success(let session) = try await signIn.session(cookie: value) else {
            throw LatchError(.unauthorized, "the console session ended; sign in again")
        }
        guard signIn.checkCSRF(request.headers[.csrfToken], session: session) else {
            await recorder.recordAlone(.admin("console", "csrf_refused"), actor: "admin:\(session.caller.accountID)/\(session.caller.tokenID)", detail: "re-authentication without its CSRF token")
            throw LatchError(.invalidCSRFToken, "the CSRF token is missing or wrong")
        }
        return session
    }
}

extension HTTPField.Name {
    /// The console script's CSRF token header.
    static let csrfToken = HTTPField.Name("X-CSRF-Token")!
}
