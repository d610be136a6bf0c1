import Foundation
import HTTPTypes
import Hummingbird
import LatchCore
import LatchModel
import Logging

/// The browser-facing endpoints: the authorization endpoint (OAuth 2.1 code flow with PKCE), the chooser's choice,
/// the upstream identity providers' callbacks, RP-initiated logout, and the hosted pages' stylesheet.
///
/// Every answer is a 303 redirect or a hosted page; nothing here answers JSON, and no error reaches the browser as a
/// stack trace or a bare 500: a failure of the store is a "try again" page (503).
struct AuthorizationController {
    let service: AuthorizationService
    let pages: HostedPages
    /// Cookies are `Secure` with the `__Host-` prefix when the issuer is https.
    let secureCookies: Bool
    let logger = Logger(label: "latch.authorize")

    /// The largest query string read (a sealed pending request is about 1 KiB).
    static let maximumQueryBytes = 8 * 1024

    var endpoints: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.get("oauth2/authorize") { request, _ -> Response in
            await answer(request) {
                let (parameters, repeated) = try query(request)
                return try await service.authorize(parameters, repeated: repeated, cookies: cookies(request))
            }
        }
        routes.get("oauth2/authorize/continue") { request, _ -> Response in
            await answer(request) {
                let (parameters, _) = try query(request)
                return try await service.continue(request: parameters["request"], idp: parameters["idp"], cookies: cookies(request))
            }
        }
        routes.get("oauth2/upstream/:id/callback") { request, context -> Response in
            await answer(request) {
                let (parameters, _) = try query(request)
                return try await service.callback(idp: try context.parameters.require("id"), parameters, cookies: cookies(request))
            }
        }
        routes.get("oauth2/upstream/:id/signed-out") { request, _ -> Response in
            await answer(request) { service.upstreamSignedOut(state: try query(request).0["state"]) }
        }
        routes.get("oauth2/logout") { request, _ -> Response in
            await answer(request) { try await service.logout(try query(request).0, cookies: cookies(request), confirmed: false) }
        }
        routes.post("oauth2/logout") { request, _ -> Response in
            await answer(request) {
                let form = try await request.formParameters()
                return try await service.logout(form, cookies: cookies(request), confirmed: form["confirm"] == "yes")
            }
        }
        // Browsers ask every page's origin for it; an empty answer keeps their consoles quiet.
        routes.get("favicon.ico") { _, _ -> Response in
            Response(status: .noContent, headers: [.cacheControl: "public, max-age=86400"])
        }
        routes.get("oauth2/assets/latch.css") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "text/css; charset=utf-8", .cacheControl: "public, max-age=3600", .xContentTypeOptions: "nosniff"],
                body: .init(byteBuffer: .init(string: HostedPages.stylesheet)))
        }
        return routes
    }

    struct MalformedQuery: Error {}

    /// The query's parameters (first value each) and the names repeated.
    func query(_ request: Request) throws -> ([String: String], Set<String>) {
        let raw = request.uri.query ?? ""
        guard raw.utf8.count <= Self.maximumQueryBytes, let parsed = try? FormURLEncoded.parseQuery(raw.utf8) else { throw MalformedQuery() }
        return parsed
    }

    /// The request's cookies by name (the `__Host-` prefix taken off when cookies are secure; then only prefixed ones
    /// count, so a sibling subdomain cannot plant one).
    func cookies(_ request: Request) -> [String: String] {
        var cookies: [String: String] = [:]
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2 else { continue }
                var name = parts[0].trimmingCharacters(in: .whitespaces)
                if secureCookies {
                    guard name.hasPrefix("__Host-") else { continue }
                    name.removeFirst("__Host-".count)
                }
                if cookies[name] == nil { cookies[name] = parts[1].trimmingCharacters(in: .whitespaces) }
            }
        }
        return cookies
    }

    func setCookie(_ cookie: BrowserCookie) -> String {
        let name = secureCookies ? "__Host-" + cookie.name : cookie.name
        return "\(name)=\(cookie.value); Path=/; Max-Age=\(cookie.maxAge); HttpOnly; SameSite=Lax" + (secureCookies ? "; Secure" : "")
    }

    /// Runs `decide` and turns its answer — or its failure — into a browser response.
    func answer(_ request: Request, _ decide: () async throws -> BrowserAnswer) async -> Response {
        let languages = request.headers[.acceptLanguage]
        let decided: BrowserAnswer
        do {
            decided = try await decide()
        } catch is MalformedQuery {
            decided = .page(.error(.malformedAddress))
        } catch let error as LatchError where error.code == .requestTooLarge || error.code == .invalidRequest {
            decided = .page(.error(error.code == .requestTooLarge ? .formTooLarge : .unreadableForm))
        } catch {
            logger.error("browser sign-in failed", metadata: ["error": "\(error)"])
            decided = .page(.error(.temporarilyUnavailable))
        }
        var headers = HTTPFields()
        for cookie in decided.cookies { headers.append(HTTPField(name: .setCookie, value: setCookie(cookie))) }
        switch decided.body {
        case .redirect(let location) where request.method == .post:
            // A redirect answering a form post is still governed by the form page's `form-action 'self'` in Chromium:
            // leave the origin by a new navigation instead (meta refresh, with a link for browsers that refuse it).
            return pages.response(.proceed(url: location), languages: languages, headers: headers)
        case .redirect(let location):
            var all = HostedPages.securityHeaders
            all[.location] = location
            all.append(contentsOf: headers)
            return Response(status: .seeOther, headers: all)
        case .page(let page):
            return pages.response(page, languages: languages, headers: headers)
        }
    }
}
