import Foundation
import HTTPTypes
import Hummingbird
import LatchCore
import Mustache

/// Renders Latch's hosted pages with swift-mustache: server-side HTML, no script, every value escaped by the template
/// engine, strings from ``PageStrings`` in the browser's language, and headers that forbid framing, inline code,
/// sniffing, referrers and caching.
struct HostedPages: Sendable {
    let library: MustacheLibrary

    init() {
        var library = MustacheLibrary()
        do {
            for (name, text) in Self.templates { try library.register(text, named: name) }
        } catch {
            // The templates are constants of this file: a parse error is a programming error caught by every test run.
            preconditionFailure("hosted page template: \(error)")
        }
        self.library = library
    }

    /// The content security policy of every page: nothing but the stylesheet and same-origin forms; no framing
    /// (clickjacking), no base URI, no plugins.
    static let contentSecurityPolicy =
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

    /// Renders `page` for a browser whose `Accept-Language` is `languages`.
    func response(_ page: HostedPage, languages: String?, headers extra: HTTPFields = [:]) -> Response {
        let strings = PageStrings.for(acceptLanguage: languages)
        var context: [String: Any] = ["t": strings.table, "lang": strings.language]
        let template: String
        var status = HTTPResponse.Status.ok
        switch page {
        case .chooser(let clientName, let choices):
            template = "chooser"
            context["title"] = strings.table["chooserTitle"]
            context["clientName"] = clientName
            context["choices"] = choices.map { ["id": $0.id, "name": $0.displayName, "url": $0.url] }
        case .error(let code, let message, let httpStatus):
            template = "error"
            context["title"] = strings.table["errorTitle"]
            context["code"] = code
            // The engine's message is English; a translated one exists for the codes a browser meets.
            context["message"] = strings.table["error." + code] ?? message
            status = HTTPResponse.Status(code: httpStatus)
        case .confirmSignOut(let fields, let csrf):
            template = "confirmSignOut"
            context["title"] = strings.table["confirmTitle"]
            context["fields"] = fields.sorted { $0.key < $1.key }.map { ["name": $0.key, "value": $0.value] }
            context["csrf"] = csrf
        case .proceed(let url):
            template = "proceed"
            context["title"] = strings.table["proceedTitle"]
            context["refreshURL"] = url
        case .signedOut(let returnURL):
            template = "signedOut"
            context["title"] = strings.table["signedOutTitle"]
            if let returnURL { context["returnURL"] = returnURL }
        }
        let html = library.render(context, withTemplate: template) ?? ""
        var headers = Self.securityHeaders
        headers[.contentType] = "text/html; charset=utf-8"
        headers[.contentLanguage] = strings.language
        headers.append(contentsOf: extra)
        return Response(status: status, headers: headers, body: .init(byteBuffer: .init(string: html)))
    }

    static var securityHeaders: HTTPFields {
        [
            .cacheControl: "no-store", .contentSecurityPolicy: contentSecurityPolicy, .xContentTypeOptions: "nosniff",
            .xFrameOptions: "DENY", .referrerPolicy: "no-referrer",
        ]
    }

    /// The stylesheet (`/oauth2/assets/latch.css`): readable on phones and desktops, dark mode, visible focus.
    static let stylesheet = """
        :root { color-scheme: light dark; --accent: #2451b7; --fg: #1b1f24; --bg: #f6f7f9; --card: #fff; --muted: #57606a; }
        @media (prefers-color-scheme: dark) { :root { --accent: #8fb0ff; --fg: #e6e8eb; --bg: #111418; --card: #1b2027; --muted: #a4adb8; } }
        * { box-sizing: border-box; }
        body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
        main { max-width: 28rem; margin: 10vh auto; padding: 2rem; background: var(--card); border-radius: 12px; box-shadow: 0 1px 4px rgba(0,0,0,.12); }
        h1 { font-size: 1.4rem; margin: 0 0 1rem; }
        p { color: var(--muted); }
        ul { list-style: none; padding: 0; margin: 1.5rem 0 0; }
        li + li { margin-top: .75rem; }
        a.button, button { display: block; width: 100%; padding: .8rem 1rem; border: 1px solid var(--accent); border-radius: 8px; color: var(--accent);
          background: transparent; font: inherit; text-align: center; text-decoration: none; cursor: pointer; }
        a.button:hover, button:hover { background: var(--accent); color: var(--card); }
        a:focus-visible, button:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
        code { font-size: .85em; }
        @media (max-width: 30rem) { main { margin: 0; border-radius: 0; min-height: 100vh; } }
        """

    static let templates: [String: String] = [
        "head": """
            <!doctype html>
            <html lang="{{lang}}">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="no-referrer">
            {{#refreshURL}}<meta http-equiv="refresh" content="0;url={{refreshURL}}">{{/refreshURL}}
            <title>{{title}}</title>
            <link rel="stylesheet" href="/oauth2/assets/latch.css">
            </head>
            <body>
            <main>
            """,
        "foot": """
            </main>
            </body>
            </html>
            """,
        "chooser": """
            {{> head}}
            <h1 id="title">{{title}}</h1>
            <p>{{t.chooserIntro}} <strong>{{clientName}}</strong>{{#t.chooserIntroAfter}} {{t.chooserIntroAfter}}{{/t.chooserIntroAfter}}.</p>
            <nav aria-labelledby="title">
            <ul>
            {{#choices}}
            <li><a class="button" id="idp-{{id}}" href="{{url}}">{{t.continueWith}} {{name}}</a></li>
            {{/choices}}
            </ul>
            </nav>
            {{> foot}}
            """,
        "error": """
            {{> head}}
            <h1>{{title}}</h1>
            <p role="alert">{{message}}</p>
            <p><small>{{t.errorCode}} <code id="error-code">{{code}}</code></small></p>
            {{> foot}}
            """,
        "confirmSignOut": """
            {{> head}}
            <h1>{{title}}</h1>
            <p>{{t.confirmIntro}}</p>
            <form method="post" action="/oauth2/logout">
            {{#fields}}
            <input type="hidden" name="{{name}}" value="{{value}}">
            {{/fields}}
            <input type="hidden" name="csrf" value="{{csrf}}">
            <input type="hidden" name="confirm" value="yes">
            <button type="submit" id="sign-out">{{t.signOut}}</button>
            </form>
            {{> foot}}
            """,
        "proceed": """
            {{> head}}
            <h1>{{title}}</h1>
            <p><a class="button" id="continue" href="{{refreshURL}}">{{t.continue}}</a></p>
            {{> foot}}
            """,
        "signedOut": """
            {{> head}}
            <h1>{{title}}</h1>
            <p>{{t.signedOutIntro}}</p>
            {{#returnURL}}<p><a class="button" href="{{returnURL}}">{{t.returnToApp}}</a></p>{{/returnURL}}
            {{> foot}}
            """,
    ]
}

/// The hosted pages' strings, per language (English and German); the first supported language of `Accept-Language`
/// wins, English otherwise.
struct PageStrings: Sendable {
    let language: String
    let table: [String: String]

    static let english: [String: String] = [
        "chooserTitle": "Choose how to sign in",
        "chooserIntro": "Sign in with your organisation's account to continue to",
        "continueWith": "Continue with",
        "errorTitle": "Sign-in could not continue",
        "errorCode": "Error code:",
        "confirmTitle": "Sign out?",
        "confirmIntro": "You are signed in to this service in this browser. Sign out now?",
        "signOut": "Sign out",
        "signedOutTitle": "You are signed out",
        "signedOutIntro": "You have been signed out of this service in this browser. You can close this window.",
        "returnToApp": "Return to the app",
        "proceedTitle": "Signing you out…",
        "continue": "Continue",
    ]

    static let german: [String: String] = [
        "chooserTitle": "Anmeldung auswählen",
        "chooserIntro": "Melden Sie sich mit dem Konto Ihrer Organisation an, um zu",
        "chooserIntroAfter": "zu gelangen",
        "continueWith": "Weiter mit",
        "errorTitle": "Die Anmeldung konnte nicht fortgesetzt werden",
        "errorCode": "Fehlercode:",
        "confirmTitle": "Abmelden?",
        "confirmIntro": "Sie sind in diesem Browser bei diesem Dienst angemeldet. Jetzt abmelden?",
        "signOut": "Abmelden",
        "signedOutTitle": "Sie sind abgemeldet",
        "signedOutIntro": "Sie wurden in diesem Browser von diesem Dienst abgemeldet. Sie können dieses Fenster schließen.",
        "returnToApp": "Zurück zur App",
        "proceedTitle": "Sie werden abgemeldet …",
        "continue": "Weiter",
        "error.invalid_authorization_state": "Diese Anmeldung ist abgelaufen oder wurde nicht hier begonnen. Kehren Sie zur App zurück und beginnen Sie neu.",
        "error.upstream_unavailable": "Der Identitätsanbieter ist nicht erreichbar. Es wurde nichts geändert; versuchen Sie es gleich noch einmal.",
        "error.unregistered_redirect_uri": "Die App möchte zu einer Adresse zurückkehren, die sie nicht registriert hat.",
        "error.invalid_client": "Die App, die Sie hierher geschickt hat, ist nicht bekannt.",
    ]

    static func `for`(acceptLanguage: String?) -> PageStrings {
        for range in (acceptLanguage ?? "").split(separator: ",").prefix(10) {
            let tag = range.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
            if tag == "de" || tag.hasPrefix("de-") { return PageStrings(language: "de", table: english.merging(german) { _, german in german }) }
            if tag == "en" || tag.hasPrefix("en-") { break }
        }
        return PageStrings(language: "en", table: english)
    }
}

extension HTTPField.Name {
    /// RFC 7034: the hosted pages may not be framed (with CSP `frame-ancestors 'none'` for current browsers).
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
    /// W3C Referrer Policy.
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
}
