import Foundation

/// Where a browser session comes back to the app: what the session listens for.
public enum WebAuthenticationCallback: Sendable, Hashable {
    /// A private-use URI scheme (`com.example.app:/callback`): works on iOS 16 and later.
    case customScheme(String)
    /// A claimed `https` link of an associated domain (`webcredentials:`): iOS 17.4 and later.
    case https(host: String, path: String)

    /// What the session listens for, for `redirectURI`: its scheme, or, for `https`, its host and path.
    /// - Throws: ``UserClientError/Code/invalidInput`` for a relative URI, an `https` URI without a host, or `http`
    ///   (a browser session cannot come back to plain http; command-line tools use a loopback listener instead).
    public init(redirectURI: String) throws(UserClientError) {
        guard let components = URLComponents(string: redirectURI), let scheme = components.scheme?.lowercased() else {
            throw .invalidInput("the redirect URI must be an absolute URI")
        }
        if scheme == "https" {
            guard let host = components.host, !host.isEmpty else { throw .invalidInput("an https redirect URI needs a host") }
            self = .https(host: host, path: components.path.isEmpty ? "/" : components.path)
            return
        }
        guard scheme != "http" else { throw .invalidInput("a browser session cannot come back to an http URI") }
        self = .customScheme(scheme)
    }

    /// Whether `url` is this callback (the session's own test, for fakes and checks).
    public func matches(_ url: URL) -> Bool {
        switch self {
        case .customScheme(let scheme): url.scheme?.lowercased() == scheme
        case .https(let host, let path): url.scheme?.lowercased() == "https" && url.host?.lowercased() == host.lowercased() && url.path == path
        }
    }
}

/// A browser session that opens a URL and returns the URL the browser was sent back to: the platform call behind
/// browser sign-in and sign-out. ``SystemWebAuthenticationSession`` (`ASWebAuthenticationSession`) on Apple
/// platforms; tests pass one that drives a real server over HTTP.
public protocol WebAuthenticationSession: Sendable {
    /// Opens `url` and waits for the browser to reach `callback`.
    /// - Throws: ``UserClientError/cancelled`` when the user closed the browser; ``UserClientError/Code/invalidConfiguration``
    ///   when the session cannot start (no window to present from, or a callback this OS version cannot listen for).
    func start(url: URL, callback: WebAuthenticationCallback) async throws(UserClientError) -> URL
}

extension UserClient {
    /// Signs in through the browser: opens Latch's authorization endpoint in `session`, waits for the redirect to
    /// `redirectURI`, then finishes with ``processFederatedSignInTokens(url:)``. A cancelled or failed session ends the
    /// pending sign-in: nothing is stored.
    ///
    /// - Parameters:
    ///   - session: the browser (``SystemWebAuthenticationSession`` in an app).
    ///   - redirectURI: registered for the client: a private-use scheme URI (`com.example.app:/callback`), or a claimed
    ///     `https` link (iOS 17.4+). Default: the configuration's `federatedSignInRedirectURI`.
    /// - Throws: ``UserClientError/cancelled`` when the user closes the browser; the errors of
    ///   ``processFederatedSignInTokens(url:)``.
    @discardableResult
    public func signInWithBrowser(
        _ session: any WebAuthenticationSession, redirectURI: String? = nil, idpHint: String? = nil, prompt: String? = nil,
        loginHint: String? = nil
    ) async throws(UserClientError) -> AuthenticationTokens {
        guard let redirectURI = redirectURI ?? configuration.federatedSignInRedirectURI else {
            throw .invalidConfiguration("no redirect URI: pass one, or set federatedSignInRedirectURI in the client configuration")
        }
        let callback = try WebAuthenticationCallback(redirectURI: redirectURI)
        let url = try await federatedSignInURL(redirectURI: redirectURI, idpHint: idpHint, prompt: prompt, loginHint: loginHint)
        let answer: URL
        do {
            answer = try await session.start(url: url, callback: callback)
        } catch {
            cancelFederatedSignIn()
            throw error
        }
        return try await processFederatedSignInTokens(url: answer)
    }

    /// Ends the browser's web session at Latch and at the identity provider (``federatedSignOutURL(postLogoutRedirectURI:state:)``)
    /// in `session`, and checks the redirect carries the request's `state`.
    ///
    /// The app's tokens stay valid: call ``signOut()`` or ``globalSignOut()`` afterwards to end the app's session.
    ///
    /// - Throws: ``UserClientError/cancelled`` when the user closes the browser;
    ///   ``UserClientError/federatedSignInStateMismatch`` when the redirect does not carry the request's `state`.
    public func signOutOfBrowser(_ session: any WebAuthenticationSession, postLogoutRedirectURI: String? = nil) async throws(UserClientError) {
        guard let postLogoutRedirectURI = postLogoutRedirectURI ?? configuration.federatedSignOutRedirectURI else {
            throw .invalidConfiguration("no post-logout redirect URI: pass one, or set federatedSignOutRedirectURI in the client configuration")
        }
        let callback = try WebAuthenticationCallback(redirectURI: postLogoutRedirectURI)
        let state = Self.randomToken(16)
        let url = try await federatedSignOutURL(postLogoutRedirectURI: postLogoutRedirectURI, state: state)
        let answer = try await session.start(url: url, callback: callback)
        guard let returned = Self.queryParameters(answer)["state"], Self.constantTimeEqual(returned, state) else {
            throw .federatedSignInStateMismatch
        }
    }
}
