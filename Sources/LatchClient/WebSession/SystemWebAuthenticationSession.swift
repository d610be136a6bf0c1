// `ASWebAuthenticationSession` on iOS, macOS and visionOS. Excluded on Linux, where command-line tools use a loopback
// redirect instead (`latch device federated-sign-in`).
#if canImport(AuthenticationServices) && !os(Linux) && !os(tvOS) && !os(watchOS)
import AuthenticationServices
import Foundation

/// Browser sign-in and sign-out in an `ASWebAuthenticationSession` presented over the app's window, sharing the
/// browser's cookies (single sign-on with the identity provider, and a sign-out that reaches it).
///
/// A custom-scheme callback uses the iOS 16 API (`init(url:callbackURLScheme:completionHandler:)`); a claimed `https`
/// callback needs the iOS 17.4 / macOS 14.4 `Callback` API and is refused with
/// ``UserClientError/Code/invalidConfiguration`` on earlier systems.
///
/// ```swift
/// let session = SystemWebAuthenticationSession(anchor: window)
/// try await client.signInWithBrowser(session)
/// ```
@available(iOS 16, macOS 13, *)
@MainActor
public final class SystemWebAuthenticationSession: NSObject, WebAuthenticationSession,
    @preconcurrency ASWebAuthenticationPresentationContextProviding
{
    private let anchor: ASPresentationAnchor
    /// Private browsing: no cookies shared with Safari (no single sign-on), and no "wants to use … to sign in" alert.
    public var prefersEphemeralWebBrowserSession = false
    private var session: ASWebAuthenticationSession?

    /// A session presented over `anchor` (the app's key window).
    public init(anchor: ASPresentationAnchor) {
        self.anchor = anchor
    }

    /// The window the sheet is presented over (AuthenticationServices calls this on the main thread).
    public func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor { anchor }

    public func start(url: URL, callback: WebAuthenticationCallback) async throws(UserClientError) -> URL {
        guard session == nil else { throw .invalidConfiguration("a browser session is already showing") }
        let result: Result<URL, any Error> = await withCheckedContinuation { continuation in
            let completion: @Sendable (URL?, (any Error)?) -> Void = { callbackURL, error in
                if let callbackURL {
                    continuation.resume(returning: .success(callbackURL))
                } else {
                    continuation.resume(returning: .failure(error ?? ASWebAuthenticationSessionError(.canceledLogin)))
                }
            }
            let made: ASWebAuthenticationSession
            switch callback {
            case .customScheme(let scheme):
                made = ASWebAuthenticationSession(url: url, callbackURLScheme: scheme, completionHandler: completion)
            case .https(let host, let path):
                guard let session = Self.httpsSession(url: url, host: host, path: path, completion: completion) else {
                    continuation.resume(
                        returning: .failure(UserClientError.invalidConfiguration("an https redirect needs iOS 17.4 / macOS 14.4: use a custom scheme")))
                    return
                }
                made = session
            }
            made.presentationContextProvider = self
            made.prefersEphemeralWebBrowserSession = prefersEphemeralWebBrowserSession
            session = made
            if !made.start() {
                // Not started (no window, or another session is showing): the completion handler is not called.
                continuation.resume(returning: .failure(ASWebAuthenticationSessionError(.presentationContextInvalid)))
            }
        }
        session = nil
        switch result {
        case .success(let url): return url
        case .failure(let error as UserClientError): throw error
        case .failure(let error as ASWebAuthenticationSessionError) where error.code == .canceledLogin: throw .cancelled
        case .failure(let error as ASWebAuthenticationSessionError) where error.code == .presentationContextNotProvided
            || error.code == .presentationContextInvalid:
            throw .invalidConfiguration("the browser session could not be presented (no window, or another session is showing)")
        case .failure(let error): throw .network(underlying: error)
        }
    }

    /// The iOS 17.4 `Callback` session for a claimed https link; nil where the system (or the SDK the app builds
    /// with) has no such API. `Observation` ships with the iOS 17 SDK: its absence means the `Callback` type is absent too.
    private static func httpsSession(
        url: URL, host: String, path: String, completion: @escaping @Sendable (URL?, (any Error)?) -> Void
    ) -> ASWebAuthenticationSession? {
        #if canImport(Observation)
        if #available(iOS 17.4, macOS 14.4, visionOS 1.1, *) {
            return ASWebAuthenticationSession(url: url, callback: .https(host: host, path: path), completionHandler: completion)
        }
        #endif
        return nil
    }
}

extension UserClient {
    /// ``signInWithBrowser(_:redirectURI:idpHint:prompt:loginHint:)`` in a ``SystemWebAuthenticationSession`` over `anchor`.
    @available(iOS 16, macOS 13, *)
    @MainActor
    @discardableResult
    public func presentFederatedSignInUI(
        anchor: ASPresentationAnchor, redirectURI: String? = nil, idpHint: String? = nil, prompt: String? = nil, loginHint: String? = nil
    ) async throws(UserClientError) -> AuthenticationTokens {
        try await signInWithBrowser(
            SystemWebAuthenticationSession(anchor: anchor), redirectURI: redirectURI, idpHint: idpHint, prompt: prompt, loginHint: loginHint)
    }
}
#endif
