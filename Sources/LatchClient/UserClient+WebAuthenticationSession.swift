// Browser sign-in and sign-out with ASWebAuthenticationSession (iOS, macOS, visionOS). Excluded on Linux, where
// command-line tools use a loopback redirect instead (`latch device federated-sign-in`).
#if canImport(AuthenticationServices) && !os(Linux) && !os(tvOS) && !os(watchOS)
import AuthenticationServices
import Foundation

extension UserClient {
    /// Signs in through the browser: opens Latch's authorization endpoint in an `ASWebAuthenticationSession` (sharing
    /// the browser's cookies, so a user signed in at the identity provider is not asked again), waits for the redirect
    /// to `redirectURI`, then finishes with ``processFederatedSignInTokens(url:)``.
    ///
    /// - Parameters:
    ///   - anchor: the window the browser sheet is presented over.
    ///   - redirectURI: registered for the client: a private-use scheme URI (`com.example.app:/callback`) or a claimed
    ///     `https` link of an associated domain (`webcredentials`); the session listens for its scheme, or its host and
    ///     path.
    /// - Throws: ``UserClientError/federatedSignInCancelled`` when the user closes the sheet; the errors of
    ///   ``processFederatedSignInTokens(url:)``.
    ///
    /// On the main actor (not the client's): the anchor is a window, which must not leave it.
    @available(iOS 17.4, macOS 14.4, visionOS 1.1, *)
    @MainActor
    @discardableResult
    public func presentFederatedSignInUI(
        anchor: ASPresentationAnchor, redirectURI: String? = nil, idpHint: String? = nil, prompt: String? = nil, loginHint: String? = nil
    ) async throws(UserClientError) -> AuthenticationTokens {
        guard let redirectURI = redirectURI ?? configuration.federatedSignInRedirectURI else {
            throw .invalidConfiguration("no redirect URI: pass one, or set federatedSignInRedirectURI in the client configuration")
        }
        let callback = try Self.webAuthenticationCallback(redirectURI)
        let url = try await federatedSignInURL(redirectURI: redirectURI, idpHint: idpHint, prompt: prompt, loginHint: loginHint)
        let answer: URL
        do throws(UserClientError) {
            answer = try await WebAuthenticationRunner.run(url: url, callback: callback, anchor: anchor)
        } catch {
            await cancelFederatedSignIn()
            throw error
        }
        return try await processFederatedSignInTokens(url: answer)
    }

    /// Ends the browser's web session at Latch and at the identity provider (``federatedSignOutURL(postLogoutRedirectURI:state:)``)
    /// in an `ASWebAuthenticationSession`, and waits for the redirect to `postLogoutRedirectURI`.
    ///
    /// The app's tokens stay valid: call ``signOut()`` or ``globalSignOut()`` afterwards to end the app's session.
    ///
    /// - Throws: ``UserClientError/federatedSignInCancelled`` when the user closes the sheet;
    ///   ``UserClientError/federatedSignInStateMismatch`` when the redirect does not carry the request's `state`.
    @available(iOS 17.4, macOS 14.4, visionOS 1.1, *)
    @MainActor
    public func presentFederatedSignOutUI(anchor: ASPresentationAnchor, postLogoutRedirectURI: String? = nil) async throws(UserClientError) {
        guard let postLogoutRedirectURI = postLogoutRedirectURI ?? configuration.federatedSignOutRedirectURI else {
            throw .invalidConfiguration("no post-logout redirect URI: pass one, or set federatedSignOutRedirectURI in the client configuration")
        }
        let callback = try Self.webAuthenticationCallback(postLogoutRedirectURI)
        let state = Self.randomToken(16)
        let url = try await federatedSignOutURL(postLogoutRedirectURI: postLogoutRedirectURI, state: state)
        let answer = try await WebAuthenticationRunner.run(url: url, callback: callback, anchor: anchor)
        guard let returned = Self.queryParameters(answer)["state"], Self.constantTimeEqual(returned, state) else {
            throw .federatedSignInStateMismatch
        }
    }

    /// What the session listens for: the redirect URI's scheme, or, for `https`, its host and path.
    @available(iOS 17.4, macOS 14.4, visionOS 1.1, *)
    static func webAuthenticationCallback(_ redirectURI: String) throws(UserClientError) -> ASWebAuthenticationSession.Callback {
        guard let components = URLComponents(string: redirectURI), let scheme = components.scheme?.lowercased() else {
            throw .invalidInput("the redirect URI must be an absolute URI")
        }
        if scheme == "https" {
            guard let host = components.host, !host.isEmpty else { throw .invalidInput("an https redirect URI needs a host") }
            return .https(host: host, path: components.path.isEmpty ? "/" : components.path)
        }
        guard scheme != "http" else { throw .invalidInput("ASWebAuthenticationSession cannot come back to an http URI") }
        return .customScheme(scheme)
    }
}

/// One `ASWebAuthenticationSession`, kept alive (with its presentation anchor) until it completes.
@available(iOS 17.4, macOS 14.4, visionOS 1.1, *)
@MainActor
final class WebAuthenticationRunner: NSObject, @preconcurrency ASWebAuthenticationPresentationContextProviding {
    private let anchor: ASPresentationAnchor
    private var session: ASWebAuthenticationSession?

    private init(anchor: ASPresentationAnchor) {
        self.anchor = anchor
    }

    func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor { anchor }

    /// Opens `url` and returns the URL the browser was redirected to.
    static func run(
        url: URL, callback: ASWebAuthenticationSession.Callback, anchor: ASPresentationAnchor
    ) async throws(UserClientError) -> URL {
        let runner = WebAuthenticationRunner(anchor: anchor)
        let result: Result<URL, any Error> = await withCheckedContinuation { continuation in
            let session = ASWebAuthenticationSession(url: url, callback: callback) { @Sendable callbackURL, error in
                if let callbackURL {
                    continuation.resume(returning: .success(callbackURL))
                } else {
                    continuation.resume(returning: .failure(error ?? ASWebAuthenticationSessionError(.canceledLogin)))
                }
            }
            session.presentationContextProvider = runner
            // Shares the browser's cookies: single sign-on with the identity provider, and a sign-out that reaches it.
            session.prefersEphemeralWebBrowserSession = false
            runner.session = session
            if !session.start() {
                // Not started (no anchor, or another session is showing): the completion handler is not called.
                runner.session = nil
                continuation.resume(returning: .failure(ASWebAuthenticationSessionError(.presentationContextInvalid)))
            }
        }
        runner.session = nil
        switch result {
        case .success(let url): return url
        case .failure(let error as ASWebAuthenticationSessionError) where error.code == .canceledLogin: throw .federatedSignInCancelled
        case .failure(let error): throw .network(underlying: error)
        }
    }
}
#endif
