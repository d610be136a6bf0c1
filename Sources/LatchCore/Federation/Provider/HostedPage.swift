import LatchModel

/// What the authorization endpoints answer a browser: a redirect or one of Latch's hosted pages, with the cookies to
/// set. The engine decides; LatchWeb words and renders the pages (in the browser's language), the edge adds headers.
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
    /// Something went wrong: why, as a typed reason with a stable error code; the words are LatchWeb's.
    case error(SignInProblem)
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

/// Why a browser sign-in or sign-out stopped at Latch's error page. Each reason has a stable error code (shown on the
/// page) and an HTTP status; what the page says about it, in each language, is LatchWeb's catalogue. A problem after
/// the redirect URI is known is not one of these: it goes back to the app as an RFC 6749 §4.1.2.1 error redirect.
public enum SignInProblem: String, Sendable, Hashable, CaseIterable {
    /// `client_id` or `redirect_uri` appears twice.
    case repeatedClientParameters
    /// No usable `client_id`.
    case missingClientID
    case unknownClient
    /// No `redirect_uri`, or one the client did not register (RFC 6749 §4.1.2.1: no redirect then).
    case unregisteredRedirectURI
    /// The chooser's sealed request is expired or not Latch's.
    case requestExpired
    /// The chooser's choice is not an upstream the app allows.
    case identityProviderNotAllowed
    /// The upstream was deleted since the sign-in began.
    case identityProviderNotConfigured
    /// The upstream's discovery document could not be fetched.
    case upstreamUnreachable
    /// The upstream's `state` is expired, forged or for another upstream.
    case stateNotFromHere
    /// The browser binding cookie does not match the `state` (login CSRF defence).
    case otherBrowser
    /// The callback's `iss` is not the upstream's (RFC 9207).
    case answerFromOtherIssuer
    case answerWithoutCode
    /// The upstream's ID token failed verification.
    case answerNotVerified
    /// The upstream's token endpoint did not answer.
    case upstreamTimedOut
    /// The verified email's domain is not among the upstream's allowed domains.
    case emailDomainRefused
    case usernameClaimMissing
    /// The `state` was spent already (a replayed callback).
    case alreadyCompleted
    /// The username belongs to another subject of the upstream.
    case usernameTaken
    /// RP-initiated logout: `id_token_hint` is not an ID token Latch issued.
    case foreignIDTokenHint
    /// RP-initiated logout: `client_id` and the hint's audience differ.
    case twoApps
    /// RP-initiated logout: the confirmation form's CSRF token no longer matches.
    case signOutFormExpired
    /// The query string is malformed or over its limit.
    case malformedAddress
    /// A form body that could not be parsed.
    case unreadableForm
    /// A form body over its limit.
    case formTooLarge
    /// The store or another dependency failed: nothing was changed.
    case temporarilyUnavailable

    /// The stable error code the page shows.
    public var code: ErrorCode {
        switch self {
        case .repeatedClientParameters, .missingClientID, .answerWithoutCode, .foreignIDTokenHint, .twoApps, .signOutFormExpired, .malformedAddress,
            .unreadableForm:
            .invalidRequest
        case .unknownClient: .invalidClient
        case .unregisteredRedirectURI: .unregisteredRedirectURI
        case .requestExpired, .stateNotFromHere, .otherBrowser, .answerFromOtherIssuer, .alreadyCompleted: .invalidAuthorizationState
        case .identityProviderNotAllowed, .identityProviderNotConfigured: .upstreamIdPUnknown
        case .upstreamUnreachable, .upstreamTimedOut: .upstreamUnavailable
        case .answerNotVerified: .upstreamInvalidIDToken
        case .emailDomainRefused, .usernameClaimMissing, .usernameTaken: .upstreamIdentityRefused
        case .formTooLarge: .requestTooLarge
        case .temporarilyUnavailable: .temporarilyUnavailable
        }
    }

    /// The HTTP status of the page.
    public var status: Int {
        switch self {
        case .upstreamUnreachable, .answerNotVerified, .upstreamTimedOut: 502
        case .emailDomainRefused, .usernameClaimMissing: 403
        case .usernameTaken: 409
        case .temporarilyUnavailable: 503
        default: 400
        }
    }
}
