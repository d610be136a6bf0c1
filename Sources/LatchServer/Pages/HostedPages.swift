import HTTPTypes
import Hummingbird
import LatchCore
import LatchWeb

/// Serves Latch's hosted pages: LatchWeb renders them in the browser's language (`Accept-Language`); the edge adds
/// headers that forbid framing, inline code, sniffing, referrers and caching.
struct HostedPages: Sendable {
    let renderer: HostedPageRenderer

    /// The content security policy of every page: nothing but the stylesheet and same-origin forms; no framing
    /// (clickjacking), no base URI, no plugins.
    static let contentSecurityPolicy =
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    /// The stylesheet (`/oauth2/assets/latch.css`).
    static var stylesheet: String { HostedPageTemplates.stylesheet }

    /// Renders `page` for a browser whose `Accept-Language` is `languages`.
    func response(_ page: HostedPage, languages: String?, headers extra: HTTPFields = [:]) -> Response {
        let rendered = renderer.render(page, language: Language(acceptLanguage: languages))
        var headers = Self.securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.contentLanguage] = rendered.language.rawValue
        headers.append(contentsOf: extra)
        return Response(status: .init(code: rendered.status), headers: headers, body: .init(byteBuffer: .init(string: rendered.html)))
    }

    static var securityHeaders: HTTPFields {
        [
            .cacheControl: "no-store", .contentSecurityPolicy: contentSecurityPolicy, .xContentTypeOptions: "nosniff",
            .xFrameOptions: "DENY", .referrerPolicy: "no-referrer",
        ]
    }
}

extension HTTPField.Name {
    /// RFC 7034: the hosted pages may not be framed (with CSP `frame-ancestors 'none'` for current browsers).
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
    /// W3C Referrer Policy.
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}
