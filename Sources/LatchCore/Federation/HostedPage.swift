/// What the authorization endpoints answer a browser: a redirect or one of Latch's hosted pages, with the cookies to
/// set. The edge renders pages (templates, localised strings, security headers); the engine decides.
public struct BrowserAnswer: Sendable {
    public enum Body: Sendable {
        /// 303 See Other to this URL.
        case redirect(String)
        case page(HostedPage)
    }

    public var body: Body
    public var cookies: [BrowserCookie]

    public init(_ body: Body, cookies: [BrowserCookie] = []) {
        self.body = body
        self.cookies = cookies
    }

    public static func redirect(_ url: String, cookies: [BrowserCookie] = []) -> BrowserAnswer { BrowserAnswer(.redirect(url), cookies: cookies) }
    public static func page(_ page: HostedPage, cookies: [BrowserCookie] = []) -> BrowserAnswer { BrowserAnswer(.page(page), cookies: cookies) }
}

/// A cookie Latch sets on its own origin: always HttpOnly and SameSite=Lax, Secure with the `__Host-` prefix when the
/// issuer is https.
public struct BrowserCookie: Sendable, Hashable {
    /// The name without the `__Host-` prefix.
    public var name: String
    /// Empty with `maxAge` 0 deletes the cookie.
    public var value: String
    public var maxAge: Int64

    public init(name: String, value: String, maxAge: Int64) {
        self.name = name
        self.value = value
        self.maxAge = maxAge
    }

    /// The browser sign-in session.
    public static let session = "latch_session"
    /// Binds a sign-in in progress to the browser that started it (login CSRF defence).
    public static let binding = "latch_authz"
}

/// The hosted pages.
public enum HostedPage: Sendable, Hashable {
    /// Choose an identity provider (the app allows several).
    case chooser(clientName: String, choices: [Choice])
    /// Something went wrong: a stable code and a message safe to show (never internal detail).
    case error(code: String, message: String, status: Int)
    /// Confirm sign-out (RP-initiated logout without an ID token hint): the form posts back with `csrf`.
    case confirmSignOut(fields: [String: String], csrf: String)
    /// Signed out; `returnURL` when the app registered where to go back.
    case signedOut(returnURL: String?)
    /// Continue to `url` (a meta refresh and a link): how a form's answer leaves Latch's origin, since a redirect
    /// after a form post stays under the page's CSP `form-action 'self'`.
    case proceed(url: String)

    public struct Choice: Sendable, Hashable {
        public var id: String
        public var displayName: String
        public var url: String

        public init(id: String, displayName: String, url: String) {
            self.id = id
            self.displayName = displayName
            self.url = url
        }
    }
}
