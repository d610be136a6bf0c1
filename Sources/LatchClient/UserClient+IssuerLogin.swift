import Foundation
import LatchJOSE
import LatchModel

// Issuer login (Thales D1-style): an app's backends — the login issuers — sign short-lived issuer tokens naming the
// consumers the user is; the client exchanges one or more of them for ONE Latch session holding every
// (issuer, consumer) pair, adds more pairs to it later, and ends it (here, or on every device holding a pair).

extension UserClient {
    // MARK: Login

    /// Logs in with one or more issuer tokens (`urn:latch:params:oauth:grant-type:issuer-login`): one session holding
    /// every (issuer, consumer) pair the tokens name. The tokens are stored as the client's session, as every sign-in
    /// stores them (status `signedIn`; claims are verified against the server's JWKS when read).
    ///
    /// A session held before is replaced locally (it is not revoked; call ``logout()`` first to end it). To add pairs
    /// to the current session instead, use ``addIssuerTokens(_:)``.
    ///
    /// - Throws: ``UserClientError/issuerTokenRejected(tokenIndex:message:)`` naming the 0-based position of the first
    ///   token the server refused; ``UserClientError/notAuthorized`` for other refusals of the grant (e.g. a token
    ///   used before).
    @discardableResult
    public func login(issuerTokens: [String], scope: String? = nil) async throws(UserClientError) -> AuthenticationTokens {
        try Self.checkIssuerTokens(issuerTokens)
        setStatus(.signingIn)
        do throws(UserClientError) {
            let key = try newSessionKey()
            let response = try await send(
                "POST", "oauth2/token", form: issuerLoginForm(issuerTokens, scope: scope), proof: key.map { DPoPProofSpec(key: $0) })
            guard response.status == 200 else { throw Self.issuerLoginError(response) }
            return try storeTokens(response, proofKey: key)
        } catch {
            setStatus(.notSignedIn(.signInFailed))
            throw error
        }
    }

    /// Adds the pairs of `tokens` to the current session: the same grant with the session's access token as
    /// `Authorization: Bearer` — or `DPoP`, with a proof of the session's key, for a bound session — (refreshed first
    /// when it expires within 60 s). The session keeps its id (`sid`); its login time restarts (a new login for
    /// ``requireRecentLogin()``); the new tokens are stored.
    ///
    /// - Throws: ``UserClientError/notSignedIn`` without a session (or when it has ended — the client is then
    ///   signed out); ``UserClientError/issuerTokenRejected(tokenIndex:message:)`` with the index into `tokens`.
    ///   A refusal leaves the current session as it was.
    @discardableResult
    public func addIssuerTokens(_ tokens: [String]) async throws(UserClientError) -> AuthenticationTokens {
        try Self.checkIssuerTokens(tokens)
        let session = try await validTokens()
        // A bound session proves its key (an unbound one gets a bound access token, as a refresh does).
        let key = try sessionKey(for: session)
        let response = try await send(
            "POST", "oauth2/token", form: issuerLoginForm(tokens, scope: nil),
            authorization: (session.isDPoPBound ? "DPoP " : "Bearer ") + session.accessToken,
            proof: key.map { DPoPProofSpec(key: $0, accessToken: session.isDPoPBound ? session.accessToken : nil) })
        guard response.status == 200 else {
            let error = Self.issuerLoginError(response)
            if error == .notSignedIn {
                // The access token was refused: the session has ended.
                remove(Item.tokens)
                setStatus(.notSignedIn(.sessionEnded))
            }
            throw error
        }
        return try storeTokens(response, proofKey: key)
    }

    // MARK: Logout

    /// Ends this session on the server (`POST /v1/me/logout`), then forgets the tokens here. Succeeds when no
    /// session is held or the server had ended it already. Returns how many sessions the server ended (0 or 1).
    @discardableResult
    public func logout() async throws(UserClientError) -> Int {
        guard load(AuthenticationTokens.self, Item.tokens) != nil else {
            setStatus(.notSignedIn(.signedOut))
            return 0
        }
        var revoked = 0
        do {
            revoked = try Self.decode(SessionsRevoked.self, try await authorized("POST", "v1/me/logout")).revoked
        } catch .notSignedIn {
            // Ended already (revoked, expired): the outcome the caller asked for.
        }
        remove(Item.tokens)
        setStatus(.notSignedIn(.signedOut))
        return revoked
    }

    /// Ends every session, on every device, that holds any (issuer, consumer) pair of this login — this one included
    /// (`POST /v1/me/logout-all`) — then forgets the tokens here. Returns how many sessions the server ended.
    ///
    /// - Throws: ``UserClientError/notSignedIn`` when no live session is held (the pairs to log out are not known).
    @discardableResult
    public func logoutAll() async throws(UserClientError) -> Int {
        let revoked = try Self.decode(SessionsRevoked.self, try await authorized("POST", "v1/me/logout-all")).revoked
        remove(Item.tokens)
        setStatus(.notSignedIn(.signedOut))
        return revoked
    }

    // MARK: Status

    /// The (issuer, consumer) pairs of this login, from the `consumers` claim of the stored ID token — read only after
    /// the token verified against the server's JWKS (refreshed first when it expires within 60 s; no other round
    /// trip). Empty for a session that is not an issuer login. ``loginStatus()`` asks the server instead.
    public var consumers: [LoginConsumer] {
        get async throws(UserClientError) {
            let claims = try await userClaims()
            guard let claim = claims["consumers"] else { return [] }
            guard let pairs = Self.loginConsumers(claim) else { throw .invalidInput("malformed consumers claim") }
            return pairs
        }
    }

    /// Seconds since the latest login into this session: the client's clock minus the verified ID token's
    /// `auth_time` (adding tokens renews it). ``loginStatus()`` gives the server's count.
    public var loginAge: TimeInterval {
        get async throws(UserClientError) {
            guard let authTime = try await userClaims()["auth_time"]?.doubleValue else { throw .invalidInput("the ID token has no auth_time") }
            return max(0, clock().timeIntervalSince1970 - authTime)
        }
    }

    /// The server's view of this session (`GET /v1/me/login-status`): login time and age, pairs, the sensitive window,
    /// and when the session ends.
    public func loginStatus() async throws(UserClientError) -> LoginStatus {
        try Self.decode(LoginStatus.self, try await authorizedGET("v1/me/login-status", query: []))
    }

    /// Checks with the server that the login is recent enough for a sensitive operation
    /// (`GET /v1/me/login-status?sensitive=true`), and returns the status.
    ///
    /// - Throws: ``UserClientError/insufficientAuthentication(maxAge:)`` when the login is older than the window
    ///   (`maxAge` seconds): log in again (or add a fresh issuer token with ``addIssuerTokens(_:)``), then retry. The
    ///   SDK maps every `insufficient_user_authentication` answer to that one case.
    @discardableResult
    public func requireRecentLogin() async throws(UserClientError) -> LoginStatus {
        try Self.decode(LoginStatus.self, try await authorizedGET("v1/me/login-status", query: [URLQueryItem(name: "sensitive", value: "true")]))
    }

    // MARK: Per-issuer handles

    /// A handle on this client's login for the consumers of `issuer` (as D1's per-issuer task objects). Every handle
    /// shares the client's ONE session: making handles logs nothing in, and their calls go through this client.
    ///
    /// - Throws: ``UserClientError/notSignedIn`` without a session. A handle of an issuer the login holds no pair of
    ///   has no consumers; ``IssuerSession/addIssuerTokens(_:)`` adds that issuer's to the shared session.
    public func issuerSession(issuer: String) async throws(UserClientError) -> IssuerSession {
        let held = try await consumers
        return IssuerSession(client: self, issuer: issuer, consumers: held.filter { $0.issuer == issuer }.map(\.consumer))
    }

    // MARK: Helpers

    func issuerLoginForm(_ tokens: [String], scope: String?) -> [(String, String)] {
        var form = [("grant_type", GrantType.issuerLogin)]
        form += tokens.map { ("issuer_token", $0) }
        form.append(("client_id", configuration.clientId))
        if let scope { form.append(("scope", scope)) }
        return form
    }

    static func checkIssuerTokens(_ tokens: [String]) throws(UserClientError) {
        guard !tokens.isEmpty, !tokens.contains(where: \.isEmpty) else { throw .invalidInput("give one or more issuer tokens") }
    }

    /// The error of a refused issuer-login grant: one naming the refused token when the server says which
    /// (`tokenIndex`), else the usual mapping.
    static func issuerLoginError(_ response: HTTPResponseData) -> UserClientError {
        if let answer = try? JSONDecoder().decode(IssuerLoginErrorBody.self, from: response.body), answer.error == ErrorCode.invalidGrant.rawValue,
            let index = answer.tokenIndex
        {
            return .issuerTokenRejected(tokenIndex: index, message: answer.errorDescription)
        }
        return UserClientError.from(status: response.status, body: response.body, headers: response.headers)
    }

    private struct IssuerLoginErrorBody: Decodable {
        var error: String
        var errorDescription: String?
        var tokenIndex: Int?

        enum CodingKeys: String, CodingKey {
            case error, tokenIndex
            case errorDescription = "error_description"
        }
    }

    static func loginConsumers(_ claim: JSONValue) -> [LoginConsumer]? {
        guard let members = claim.arrayValue else { return nil }
        var pairs: [LoginConsumer] = []
        for member in members {
            guard let issuer = member["issuer"]?.stringValue, let consumer = member["consumer"]?.stringValue else { return nil }
            pairs.append(LoginConsumer(issuer: issuer, consumer: consumer))
        }
        return pairs
    }

    /// A GET with the access token and a query; an answer saying the session ended signs this device out (as
    /// ``authorized(_:_:json:)``).
    func authorizedGET(_ path: String, query: [URLQueryItem]) async throws(UserClientError) -> HTTPResponseData {
        let tokens = try await validTokens()
        let (authorization, proof) = try self.authorization(tokens)
        var components = URLComponents(url: url(path), resolvingAgainstBaseURL: false)
        if !query.isEmpty { components?.queryItems = query }
        guard let target = components?.url else { throw .invalidConfiguration("cannot form the URL of \(path)") }
        let request = HTTPRequestData(method: "GET", url: target, headers: ["Accept": "application/json", "Authorization": authorization])
        let response = try await perform(request, proof: proof)
        guard (200..<300).contains(response.status) else {
            let error = UserClientError.from(status: response.status, body: response.body, headers: response.headers)
            if error == .notSignedIn {
                remove(Item.tokens)
                setStatus(.notSignedIn(.sessionEnded))
            }
            throw error
        }
        return response
    }
}

/// One issuer's view of a ``UserClient``'s issuer login (D1's per-issuer task objects): obtained with
/// ``UserClient/issuerSession(issuer:)``. Handles are cheap values; every handle of a client shares its ONE session,
/// and every call goes through that client (one refresh, one set of tokens). Logging out through any handle ends the
/// session for all of them.
public struct IssuerSession: Sendable {
    let client: UserClient
    /// The login issuer this handle is for.
    public let issuer: String
    /// This issuer's consumer ids in the login when the handle was made (``currentConsumers()`` reads them again).
    public let consumers: [String]

    /// This issuer's consumer ids in the login now (from the verified ID token).
    public func currentConsumers() async throws(UserClientError) -> [String] {
        try await client.consumers.filter { $0.issuer == issuer }.map(\.consumer)
    }

    /// The shared session's access token (refreshed when it expires within 60 s).
    public func accessToken() async throws(UserClientError) -> String { try await client.accessToken() }

    /// The shared session's status, from the server.
    public func loginStatus() async throws(UserClientError) -> LoginStatus { try await client.loginStatus() }

    /// ``UserClient/requireRecentLogin()`` on the shared session.
    @discardableResult
    public func requireRecentLogin() async throws(UserClientError) -> LoginStatus { try await client.requireRecentLogin() }

    /// Adds issuer tokens to the shared session; returns a handle showing this issuer's consumers afterwards.
    @discardableResult
    public func addIssuerTokens(_ tokens: [String]) async throws(UserClientError) -> IssuerSession {
        try await client.addIssuerTokens(tokens)
        return try await client.issuerSession(issuer: issuer)
    }

    /// Ends the shared session (every handle's): ``UserClient/logout()``.
    @discardableResult
    public func logout() async throws(UserClientError) -> Int { try await client.logout() }

    /// Ends every session on every device holding any pair of the shared login: ``UserClient/logoutAll()``.
    @discardableResult
    public func logoutAll() async throws(UserClientError) -> Int { try await client.logoutAll() }
}
