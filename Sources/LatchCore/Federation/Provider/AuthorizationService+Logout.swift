import Foundation
import LatchJOSE
import LatchModel

/// Where the upstream's sign-out sends the browser back to.
struct SignOutState: Codable, Sendable {
    var returnTo: String?
    var expiresAt: Int64
}

/// RP-initiated logout and the way back from the upstream's end-session endpoint.
extension AuthorizationService {
    /// `GET|POST /oauth2/logout` (OpenID Connect RP-Initiated Logout 1.0 §2–3).
    ///
    /// - Step 1. `id_token_hint`, when given, is an ID token Latch signed (expired ones too); its `aud` is the
    ///   client, and `client_id`, when given too, must be it.
    /// - Step 2. `post_logout_redirect_uri` is one of that client's registered logout URIs exactly — otherwise an
    ///   error page.
    /// - Step 3. With a signed-in browser, the user confirms on a page (CSRF-protected form back to this endpoint)
    ///   unless the ID token hint is of that browser's sign-in (``hintIsOf(_:_:)``): RP-Initiated Logout 1.0 §2 — a
    ///   logout request without a hint, or with one of another user or session, may come from anyone (a cross-site
    ///   link), so the user is asked.
    /// - Step 4. The web session ends and its cookie is deleted; the app's tokens stay (sign-out and global sign-out
    ///   revoke those). The browser goes through the upstream's end-session endpoint when it has one, then to the
    ///   app's logout URI with `state`, or to the signed-out page.
    public func logout(_ parameters: [String: String], cookies: [String: String], confirmed: Bool) async throws -> BrowserAnswer {
        let now = clock.seconds()
        // Step 1.
        var clientID = parameters["client_id"].flatMap { $0.isEmpty ? nil : $0 }
        var hint: LogoutHint?
        if let token = parameters["id_token_hint"], !token.isEmpty {
            guard let verified = try await verifiedOwnIDToken(token), let audience = verified.audience else {
                return Self.errorPage(.foreignIDTokenHint)
            }
            if let clientID, clientID != audience { return Self.errorPage(.twoApps) }
            clientID = audience
            hint = verified
        }
        // Step 2.
        var returnTo: String?
        if let target = parameters["post_logout_redirect_uri"], !target.isEmpty {
            guard let clientID, let client = try? await clients.resolve(clientID),
                (client.evidence.federation?.postLogoutRedirectUris ?? []).contains(target)
            else {
                return Self.errorPage(.unregisteredRedirectURI)
            }
            var query: [(String, String)] = []
            if let state = parameters["state"], !state.isEmpty, state.utf8.count <= Self.maximumValueLength { query.append(("state", state)) }
            returnTo = FormEncoding.appending(query, to: target)
        }
        let webSession = try await activeWebSession(cookies, now: now)
        // Step 3.
        let hintIsOfSession = if let webSession { try await hintIsOf(hint, webSession) } else { false }
        if let webSession, !confirmed, !hintIsOfSession {
            var fields: [String: String] = [:]
            for name in ["client_id", "post_logout_redirect_uri", "state"] { if let value = parameters[name] { fields[name] = value } }
            // The form does not carry the hint back: the app it named is kept as client_id.
            if let clientID { fields["client_id"] = clientID }
            return .page(.confirmSignOut(fields: fields, csrf: csrfToken(webSessionID: webSession.id)))
        }
        if confirmed {
            guard let webSession, let csrf = parameters["csrf"], Secrets.constantTimeEquals(csrf, csrfToken(webSessionID: webSession.id)) else {
                return Self.errorPage(.signOutFormExpired)
            }
        }
        // Step 4.
        let clear = [BrowserCookie(name: BrowserCookie.session, value: "", maxAge: 0)]
        guard let webSession else {
            return returnTo.map { .redirect($0, cookies: clear) } ?? .page(.signedOut(returnURL: nil), cookies: clear)
        }
        _ = try await store.write { $0.endWebSession(id: webSession.id, at: now) }
        if let idp = try await store.upstreamIdP(id: webSession.upstreamIdP),
            let metadata = try? await upstream.metadata(issuer: idp.settings.issuer), let endSession = metadata.endSessionEndpoint
        {
            var query: [(String, String)] = [
                ("client_id", idp.settings.clientId), ("post_logout_redirect_uri", Self.signedOutURL(issuer: issuer, idp: idp.id)),
                ("state", try sealer.seal(SignOutState(returnTo: returnTo, expiresAt: now.adding(seconds: settings.pendingLifetime)), as: .signOutState)),
            ]
            if let sealed = webSession.sealedUpstreamIDToken, let token = try? secrets.open(sealed, keyID: "web-session-id-token") {
                query.append(("id_token_hint", String(decoding: token, as: UTF8.self)))
            }
            return .redirect(FormEncoding.appending(query, to: endSession), cookies: clear)
        }
        return returnTo.map { .redirect($0, cookies: clear) } ?? .page(.signedOut(returnURL: nil), cookies: clear)
    }

    /// `GET /oauth2/upstream/{id}/signed-out`: back from the upstream's end-session endpoint.
    public func upstreamSignedOut(state: String?) -> BrowserAnswer {
        guard let state, let signOut = sealer.open(state, as: .signOutState, SignOutState.self), signOut.expiresAt > clock.seconds() else {
            return .page(.signedOut(returnURL: nil))
        }
        return signOut.returnTo.map { .redirect($0) } ?? .page(.signedOut(returnURL: nil))
    }

    /// What a logout's `id_token_hint` says: the app, the user and the app session.
    struct LogoutHint {
        var audience: String?
        var subject: String?
        var sessionID: String?
    }

    /// The claims of an ID token Latch signed (expiry not checked: logout accepts old hints).
    func verifiedOwnIDToken(_ token: String) async throws -> LogoutHint? {
        guard let jws = try? ParsedJWS(token), let kid = jws.keyID ?? nil, let key = try await keys.verificationKeyReloading(kid: kid),
            let claims = try? jws.verify(with: key, canonical: true).claims, claims["iss"]?.stringValue == issuer,
            jws.header["typ"]?.stringValue != "at+jwt"
        else { return nil }
        return LogoutHint(audience: claims["aud"]?.stringValue, subject: claims["sub"]?.stringValue, sessionID: claims["sid"]?.stringValue)
    }

    /// Whether `hint` is of the browser's web session, so that the logout needs no confirmation: its `sub` is the web
    /// session's user, and its `sid`, when it has one, names an app session opened from this web session — that
    /// user's, from the same upstream authentication (`auth_time`), opened no earlier than the web session. (An app
    /// session does not store the web session it came from; these are what the two share.)
    func hintIsOf(_ hint: LogoutHint?, _ webSession: WebSession) async throws -> Bool {
        guard let hint, let subject = hint.subject, subject == webSession.userID else { return false }
        guard let sessionID = hint.sessionID else { return true }
        guard let session = try await store.session(id: sessionID) else { return false }
        return session.userID == webSession.userID && session.authTime == webSession.authTime && session.createdAt >= webSession.createdAt
    }

    /// The sign-out form's CSRF token: an HMAC of the web session id under the federation key.
    func csrfToken(webSessionID: String) -> String { sealer.mac("csrf|" + webSessionID) }
}
