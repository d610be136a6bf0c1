import Crypto
import Foundation
import LatchJOSE
import LatchModel

// Browser sign-in (federated): Latch is the app's OpenID provider and sends the browser on to the customer's upstream
// identity provider. The app opens the authorization endpoint in a browser (ASWebAuthenticationSession, or the system
// browser for a command-line tool) and gets the answer at its redirect URI: the authorization code flow with PKCE
// (RFC 6749 §4.1, RFC 7636), `state` and `nonce` (OIDC Core §3.1.2.1), the issuer identified in the answer (RFC 9207),
// native-app rules (RFC 8252). The code is exchanged here, with a DPoP proof when the client binds its sessions.

/// The request a browser sign-in is waiting on: kept in the key store, so an app killed while the browser is open
/// can still finish it when the redirect arrives. One at a time: a new request replaces it.
struct PendingFederatedSignIn: Codable {
    /// The PKCE `code_verifier` (32 random bytes, base64url).
    var codeVerifier: String
    var state: String
    var nonce: String
    /// The redirect URI as sent (the token request repeats it, byte for byte).
    var redirectURI: String
    /// The issuer of the discovery document the request was built from: the answer's `iss` must be it (RFC 9207).
    var issuer: String
    var created: Date
}

extension UserClient {
    /// How long a browser sign-in may take before its answer is refused (the server's own limits are shorter).
    static let federatedSignInLifetime: TimeInterval = 3600
    static let pendingFederatedSignIn = "pending-federated-sign-in"
    /// `RegistrationMethod` of the registration a browser sign-in leaves on a device without one (client-side only).
    static let federatedRegistrationType = RegistrationMethod(rawValue: "OIDC")

    // MARK: Sign-in

    /// The authorization request to open in a browser: Latch's authorization endpoint (from discovery) with
    /// `response_type=code`, PKCE S256, a fresh `state` and `nonce`, and this client's id.
    ///
    /// The verifier, state and nonce are kept in the key store until the answer is processed by
    /// ``processFederatedSignInTokens(url:)`` (a later call replaces them: one browser sign-in at a time).
    ///
    /// - Parameters:
    ///   - redirectURI: where the browser comes back (default: the configuration's `federatedSignInRedirectURI`); registered exactly for the client (`PATCH /admin/v1/clients/{id}`
    ///     `redirectUris`) — a private-use scheme (`com.example.app:/callback`), a claimed https link, or a loopback
    ///     `http://127.0.0.1/…` (any port matches, RFC 8252 §7.3).
    ///   - idpHint: the upstream identity provider to go to (its id), skipping Latch's chooser.
    ///   - prompt: `login` to make the user sign in at the upstream again; `none` to fail with `login_required` instead
    ///     of showing a page; `select_account` for the chooser.
    ///   - loginHint: passed to the upstream (e.g. the user's email).
    ///   - maxAge: the most seconds since the user's last sign-in at the upstream that a web session may reuse.
    ///   - scope: space-separated; must include `openid`.
    public func federatedSignInURL(
        redirectURI: String? = nil, idpHint: String? = nil, prompt: String? = nil, loginHint: String? = nil, maxAge: Int? = nil,
        scope: String = "openid profile offline_access"
    ) async throws(UserClientError) -> URL {
        guard let redirectURI = redirectURI ?? configuration.federatedSignInRedirectURI else {
            throw .invalidConfiguration("no redirect URI: pass one, or set federatedSignInRedirectURI in the client configuration")
        }
        guard !redirectURI.isEmpty, URL(string: redirectURI)?.scheme != nil else { throw .invalidInput("the redirect URI must be an absolute URI") }
        guard scope.split(separator: " ").contains("openid") else { throw .invalidInput("the scope must include openid") }
        let discovery = try await discoveryDocument()
        guard let issuer = discovery["issuer"]?.stringValue, let endpoint = discovery["authorization_endpoint"]?.stringValue,
            var components = URLComponents(string: endpoint)
        else { throw .invalidConfiguration("the server does not offer browser sign-in (no authorization_endpoint)") }
        let pending = PendingFederatedSignIn(
            codeVerifier: Self.randomToken(32), state: Self.randomToken(16), nonce: Self.randomToken(16), redirectURI: redirectURI,
            issuer: issuer, created: clock())
        var parameters: [(String, String)] = [
            ("response_type", "code"), ("client_id", configuration.clientId), ("redirect_uri", redirectURI), ("scope", scope),
            ("state", pending.state), ("nonce", pending.nonce), ("code_challenge", Self.codeChallenge(pending.codeVerifier)),
            ("code_challenge_method", "S256"),
        ]
        if let idpHint { parameters.append(("idp_hint", idpHint)) }
        if let prompt { parameters.append(("prompt", prompt)) }
        if let loginHint { parameters.append(("login_hint", loginHint)) }
        if let maxAge { parameters.append(("max_age", String(maxAge))) }
        let existing = components.percentEncodedQuery.map { $0.isEmpty ? "" : $0 + "&" } ?? ""
        components.percentEncodedQuery = existing + Self.formEncode(parameters)
        guard let url = components.url else { throw .invalidInput("the authorization URL cannot be built") }
        try save(pending, Self.pendingFederatedSignIn)
        return url
    }

    /// Finishes a browser sign-in with the URL the browser was redirected to (the redirect URI with the answer in its
    /// query), and stores the tokens as every sign-in does (status `signedIn`).
    ///
    /// Checks, in order: a browser sign-in is pending and `url` is its redirect URI; `state` is the pending one
    /// (constant time); from here the pending request is spent, whatever happens next; `iss` is the issuer the request
    /// went to (RFC 9207, against mix-up attacks); an `error` answer is thrown; the code is exchanged (with the PKCE
    /// verifier and, when the client binds sessions, a DPoP proof); the ID token verifies against the server's JWKS
    /// (signature, `iss`, `aud`, `exp`) and carries the request's `nonce`.
    ///
    /// A device without a registration remembers the signed-in user (``userName()``, ``subject()``) as a federated one.
    ///
    /// - Throws: ``UserClientError/federatedSignInStateMismatch`` when no browser sign-in is pending (never started,
    ///   finished already — a replayed URL —, or started over an hour ago) or `state` is not the pending one (the
    ///   pending request is kept: the right answer may still come);
    ///   ``UserClientError/federatedSignInIssuerMismatch`` for an answer naming another issuer;
    ///   ``UserClientError/federatedSignInFailed(code:description:)`` with the server's `error` (`access_denied` when
    ///   the user or the upstream refused, `login_required` after `prompt=none`, …);
    ///   ``UserClientError/notAuthorized`` when the code is refused or the ID token fails verification (the session the
    ///   server opened is then revoked, best effort).
    @discardableResult
    public func processFederatedSignInTokens(url: URL) async throws(UserClientError) -> AuthenticationTokens {
        // Step 1. A pending request, and this is its redirect URI.
        guard let pending = load(PendingFederatedSignIn.self, Self.pendingFederatedSignIn),
            clock().timeIntervalSince(pending.created) < Self.federatedSignInLifetime
        else { throw .federatedSignInStateMismatch }
        guard Self.withoutQuery(url.absoluteString) == Self.withoutQuery(pending.redirectURI) else {
            throw .invalidInput("the URL is not the redirect URI of the pending browser sign-in")
        }
        let parameters = Self.queryParameters(url)
        // Step 2. The state is the pending one.
        guard let state = parameters["state"], Self.constantTimeEqual(state, pending.state) else { throw .federatedSignInStateMismatch }
        // Step 3. Single use: an answer to this request, good or bad, ends it.
        remove(Self.pendingFederatedSignIn)
        setStatus(.signingIn)
        do throws(UserClientError) {
            // Step 4. RFC 9207 §2.4: the answer comes from the issuer the request went to.
            guard let issuer = parameters["iss"], issuer == pending.issuer else { throw .federatedSignInIssuerMismatch }
            // Step 5. An error answer (RFC 6749 §4.1.2.1).
            if let error = parameters["error"] {
                throw .federatedSignInFailed(code: error, description: parameters["error_description"])
            }
            guard let code = parameters["code"], !code.isEmpty else { throw .invalidInput("the answer carries neither code nor error") }
            // Step 6. The token request (RFC 6749 §4.1.3, RFC 7636 §4.5), bound like every new session.
            let key = try newSessionKey()
            let response = try await send(
                "POST", "oauth2/token",
                form: [
                    ("grant_type", "authorization_code"), ("code", code), ("redirect_uri", pending.redirectURI),
                    ("code_verifier", pending.codeVerifier), ("client_id", configuration.clientId),
                ],
                proof: key.map { DPoPProofSpec(key: $0) })
            guard response.status == 200 else {
                throw UserClientError.from(status: response.status, body: response.body, headers: response.headers)
            }
            // Step 7. The ID token (OIDC Core §3.1.3.7), nonce included (§3.1.3.7 step 11), before anything is stored.
            guard let answer = try? JSONDecoder().decode(TokenResponse.self, from: response.body) else {
                throw .invalidInput("malformed token answer")
            }
            let claims: [String: JSONValue]
            do throws(UserClientError) {
                claims = try await verifier.verify(answer.idToken, clientID: configuration.clientId, now: clock())
                guard let nonce = claims["nonce"]?.stringValue, Self.constantTimeEqual(nonce, pending.nonce) else { throw .notAuthorized }
            } catch {
                // The server opened a session this client will not use: end it (best effort).
                _ = try? await send("POST", "oauth2/revoke", form: [("token", answer.refreshToken), ("client_id", configuration.clientId)])
                throw error
            }
            let tokens = try storeTokens(response, proofKey: key)
            if !isRegistered(), let subject = claims["sub"]?.stringValue {
                let username = claims["username"]?.stringValue ?? claims["preferred_username"]?.stringValue ?? subject
                try save(
                    Registration(userId: subject, username: username, type: Self.federatedRegistrationType, deviceKeyId: nil, deviceKey: nil),
                    Item.registration)
            }
            return tokens
        } catch {
            setStatus(.notSignedIn(.signInFailed))
            throw error
        }
    }

    /// Whether a browser sign-in is waiting for its answer (started by ``federatedSignInURL(redirectURI:idpHint:prompt:loginHint:maxAge:scope:)``
    /// within the last hour and not processed yet).
    public func hasPendingFederatedSignIn() -> Bool {
        guard let pending = load(PendingFederatedSignIn.self, Self.pendingFederatedSignIn) else { return false }
        return clock().timeIntervalSince(pending.created) < Self.federatedSignInLifetime
    }

    /// Forgets a pending browser sign-in (its answer, should it come, is then refused).
    public func cancelFederatedSignIn() {
        remove(Self.pendingFederatedSignIn)
    }

    // MARK: Sign-out

    /// The URL that ends the browser's web session at Latch — and at the upstream identity provider — then comes
    /// back to `postLogoutRedirectURI` with `state` (OpenID Connect RP-Initiated Logout 1.0): the end-session
    /// endpoint (from discovery) with the stored ID token as `id_token_hint` (expired ones are accepted) and this
    /// client's id.
    ///
    /// It does not end the app's session: the tokens stay valid. Call ``signOut()`` (this device) or
    /// ``globalSignOut()`` (every device) for that — after opening this URL, which needs the ID token.
    ///
    /// - Parameters:
    ///   - postLogoutRedirectURI: registered exactly for the client (`postLogoutRedirectUris`).
    ///   - state: echoed back on the redirect.
    public func federatedSignOutURL(postLogoutRedirectURI: String? = nil, state: String? = nil) async throws(UserClientError) -> URL {
        guard let postLogoutRedirectURI = postLogoutRedirectURI ?? configuration.federatedSignOutRedirectURI else {
            throw .invalidConfiguration("no post-logout redirect URI: pass one, or set federatedSignOutRedirectURI in the client configuration")
        }
        let discovery = try await discoveryDocument()
        guard let endpoint = discovery["end_session_endpoint"]?.stringValue, var components = URLComponents(string: endpoint) else {
            throw .invalidConfiguration("the server does not offer browser sign-out (no end_session_endpoint)")
        }
        var parameters: [(String, String)] = []
        if let tokens = load(AuthenticationTokens.self, Item.tokens) { parameters.append(("id_token_hint", tokens.idToken)) }
        parameters += [("client_id", configuration.clientId), ("post_logout_redirect_uri", postLogoutRedirectURI)]
        if let state { parameters.append(("state", state)) }
        let existing = components.percentEncodedQuery.map { $0.isEmpty ? "" : $0 + "&" } ?? ""
        components.percentEncodedQuery = existing + Self.formEncode(parameters)
        guard let url = components.url else { throw .invalidInput("the end-session URL cannot be built") }
        return url
    }

    // MARK: Helpers

    /// The server's OpenID Provider metadata.
    func discoveryDocument() async throws(UserClientError) -> [String: JSONValue] {
        let response = try await send("GET", ".well-known/openid-configuration")
        guard response.status == 200 else { throw UserClientError.from(status: response.status, body: response.body, headers: response.headers) }
        guard case .object(let metadata)? = try? JSONValue.parse(response.body) else { throw .invalidInput("malformed discovery document") }
        return metadata
    }

    /// `byteCount` random bytes (the system's CSPRNG), base64url.
    static func randomToken(_ byteCount: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return Base64URL.encode((0..<byteCount).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// `BASE64URL(SHA256(ASCII(verifier)))` (RFC 7636 §4.2).
    static func codeChallenge(_ verifier: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Data(verifier.utf8))))
    }

    /// The query of `url` as `application/x-www-form-urlencoded` (`+` is a space); the first value of each name.
    static func queryParameters(_ url: URL) -> [String: String] {
        guard let query = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery else { return [:] }
        var result: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let decode = { (text: Substring) in String(text).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            let name = decode(parts[0])
            if result[name] == nil { result[name] = parts.count > 1 ? decode(parts[1]) : "" }
        }
        return result
    }

    /// A URI without its query and fragment.
    static func withoutQuery(_ uri: String) -> Substring {
        uri.prefix { $0 != "?" && $0 != "#" }
    }

    /// Equality of two strings' bytes in time that depends only on their lengths.
    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for index in x.indices { difference |= x[index] ^ y[index] }
        return difference == 0
    }
}
