import Foundation
import LatchJOSE
import LatchModel
import Logging

/// Issuer logins around the grant (``IssuerLoginGrant``): the admin's login issuers and resource servers, a session's
/// login status, logout and logout-all, and token introspection (RFC 7662) for resource servers.
public struct IssuerLoginService: Sendable {
    let store: any (UnitOfWork & IssuerLoginStore & SessionStore)
    public let registry: LoginIssuerRegistry
    let accessTokens: AccessTokenGate
    let refreshTokens: RefreshTokenCodec
    public let settings: IssuerLoginSettings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    public init(
        store: any (UnitOfWork & IssuerLoginStore & SessionStore), registry: LoginIssuerRegistry, accessTokens: AccessTokenGate, refreshTokens: RefreshTokenCodec,
        settings: IssuerLoginSettings, clock: LatchClock, random: RandomSource, logger: Logger = Logger(label: "latch.issuer-login")
    ) {
        self.store = store
        self.registry = registry
        self.accessTokens = accessTokens
        self.refreshTokens = refreshTokens
        self.settings = settings
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    // MARK: Login issuers

    /// `POST /admin/v1/login-issuers`.
    public func addIssuer(_ request: AdminLoginIssuerRequest) async throws -> AdminLoginIssuer {
        guard AdminService.isName(request.issuerId, max: 255) else { throw LatchError.invalidInput("issuerId must be 1–255 printable characters") }
        guard AdminService.isName(request.audience, max: 255) else { throw LatchError.invalidInput("audience must be 1–255 printable characters") }
        let keys = request.keys ?? []
        switch (keys.isEmpty, request.jwksURL) {
        case (true, nil): throw LatchError.invalidInput("give keys or a jwksURL")
        case (false, _?): throw LatchError.invalidInput("give keys or a jwksURL, not both")
        default: break
        }
        guard keys.count <= 16 else { throw LatchError.invalidInput("at most 16 keys per issuer") }
        var forms: [LoginIssuerKeyForm] = []
        for key in keys {
            guard AdminService.isName(key.kid, max: 255) else { throw LatchError.invalidInput("a key's kid must be 1–255 printable characters") }
            guard !forms.contains(where: { $0.kid == key.kid }) else { throw LatchError.invalidInput("the kid \(key.kid) is given twice") }
            guard let algorithm = JWSAlgorithm(rawValue: key.algorithm) else {
                throw LatchError(.invalidPublicKey, "a key's algorithm must be ES256, ES384 or RS256")
            }
            let parsed: PublicKey
            do {
                parsed = try PublicKey(pemOrBase64DER: key.publicKey, algorithm: algorithm)
            } catch {
                throw LatchError(.invalidPublicKey, "key \(key.kid): \(error.detail)")
            }
            forms.append(LoginIssuerKeyForm(kid: key.kid, algorithm: algorithm.rawValue, publicKey: parsed.pemRepresentation))
        }
        if let url = request.jwksURL, let problem = Self.jwksURLProblem(url) { throw LatchError.invalidInput(problem) }
        let lifetime = request.maxTokenLifetime ?? 300
        guard (1...3600).contains(lifetime) else { throw LatchError.invalidInput("maxTokenLifetime must be 1–3600 seconds") }
        let scopes = request.allowedScopes ?? []
        guard scopes.count <= 64, scopes.allSatisfy({ AdminService.isName($0, max: 128) && !$0.contains(" ") }) else {
            throw LatchError.invalidInput("allowedScopes must be at most 64 scope values without spaces")
        }
        let keysJSON = String(decoding: try JSONEncoder().encode(forms), as: UTF8.self)
        let issuer = LoginIssuer(
            id: request.issuerId, audience: request.audience, keysJSON: keysJSON, jwksURL: request.jwksURL, maxTokenLifetime: Int64(lifetime),
            allowedScopes: scopes, customFederation: request.customFederation ?? false, createdAt: clock.seconds())
        let event = change(
            "login_issuers", "create",
            "login issuer \(issuer.id) audience \(issuer.audience) keys \(forms.map(\.kid).joined(separator: ","))\(issuer.jwksURL.map { " jwks \($0)" } ?? "")")
        guard try await store.addLoginIssuer(issuer, recording: event) else { throw LatchError(.conflict, "a login issuer with this issuerId exists") }
        try await registry.reload()
        logger.info("login issuer added", metadata: ["issuer": "\(issuer.id)"])
        return Self.view(issuer)
    }

    /// `GET /admin/v1/login-issuers`.
    public func issuers() async throws -> AdminLoginIssuerList {
        AdminLoginIssuerList(loginIssuers: try await store.loginIssuers().map(Self.view))
    }

    /// `DELETE /admin/v1/login-issuers/{issuerId}`: its tokens are refused at once on this replica, within seconds on
    /// others. Sessions it logged in keep running to their end (log them out with logout-all).
    public func deleteIssuer(_ id: String) async throws {
        guard try await store.loginIssuers().contains(where: { $0.id == id }) else { throw LatchError.notFound("no such login issuer") }
        guard try await store.removeLoginIssuer(id: id, recording: change("login_issuers", "delete", "login issuer \(id)")) else {
            throw LatchError.notFound("no such login issuer")
        }
        try await registry.reload()
        logger.info("login issuer removed", metadata: ["issuer": "\(id)"])
    }

    static func view(_ issuer: LoginIssuer) -> AdminLoginIssuer {
        let forms = (try? JSONDecoder().decode([LoginIssuerKeyForm].self, from: Data(issuer.keysJSON.utf8))) ?? []
        return AdminLoginIssuer(
            issuerId: issuer.id, audience: issuer.audience, keys: forms.map { LoginIssuerKey(kid: $0.kid, algorithm: $0.algorithm, publicKey: $0.publicKey) },
            jwksURL: issuer.jwksURL, maxTokenLifetime: Int(issuer.maxTokenLifetime), allowedScopes: issuer.allowedScopes,
            customFederation: issuer.customFederation, createdAt: issuer.createdAt)
    }

    /// Why a JWKS URL is refused, or nil: https, or http to a loopback host (development and tests).
    static func jwksURLProblem(_ text: String) -> String? {
        guard text.utf8.count <= 2048, let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty,
            url.user == nil, url.password == nil
        else { return "jwksURL must be an absolute http(s) URL without credentials" }
        switch scheme {
        case "https": return nil
        case "http" where ["localhost", "127.0.0.1", "::1", "[::1]"].contains(host.lowercased()): return nil
        default: return "jwksURL must be https (http only to localhost)"
        }
    }

    // MARK: Resource servers

    /// `POST /admin/v1/resource-servers`: a credential for `/oauth2/introspect`, its secret shown once.
    public func createResourceServer(_ request: AdminResourceServerRequest) async throws -> AdminResourceServerCreated {
        guard AdminService.isName(request.name, max: 128) else { throw LatchError.invalidInput("name must be 1–128 printable characters") }
        let id = "lrs_" + random.token(byteCount: 12)
        let secret = "lrss_" + random.token(byteCount: 32)
        let server = ResourceServer(id: id, name: request.name, secretHash: Secrets.hash(secret), createdAt: clock.seconds())
        guard try await store.addResourceServer(server, recording: change("resource_servers", "create", "resource server \(id) \"\(server.name)\"")) else { throw LatchError(.conflict, "this resource server id exists; try again") }
        logger.info("resource server created", metadata: ["id": "\(id)"])
        return AdminResourceServerCreated(clientId: id, clientSecret: secret, name: server.name, createdAt: server.createdAt)
    }

    public func resourceServers() async throws -> AdminResourceServerList {
        AdminResourceServerList(
            resourceServers: try await store.resourceServers().map { AdminResourceServer(clientId: $0.id, name: $0.name, createdAt: $0.createdAt) })
    }

    public func deleteResourceServer(id: String) async throws {
        guard try await store.resourceServers().contains(where: { $0.id == id }) else { throw LatchError.notFound("no such resource server") }
        guard try await store.removeResourceServer(id: id, recording: change("resource_servers", "delete", "resource server \(id)")) else {
            throw LatchError.notFound("no such resource server")
        }
    }

    /// The resource server whose Basic credential this is; `invalid_client` otherwise (the secret compared in
    /// constant time; an unknown id costs the same hash).
    public func authenticateResourceServer(id: String, secret: String) async throws -> ResourceServer {
        let presented = Secrets.hash(secret)
        guard id.utf8.count <= 128, secret.utf8.count <= 256, let server = try await store.resourceServer(id: id),
            Secrets.constantTimeEquals(server.secretHash, presented)
        else { throw LatchError.invalidClient("unknown resource server or wrong secret") }
        return server
    }

    // MARK: The signed-in session

    /// How recent a login a sensitive operation of `session` needs: the issuer-login window for issuer logins.
    public func sensitiveMaxAge(of session: Session, default fallback: Int64) -> Int64 {
        session.amr.contains(IssuerLoginGrant.method) ? settings.sensitiveMaxAge : fallback
    }

    /// `GET /v1/me/login-status`; with `requireSensitive`, a login older than the sensitive window is refused with
    /// RFC 9470 `insufficient_user_authentication` and its `max_age`.
    public func loginStatus(_ caller: SignedInCaller, sensitiveMaxAge: Int64, requireSensitive: Bool) async throws -> LoginStatus {
        let now = clock.seconds()
        let age = max(0, now - caller.session.authTime)
        if requireSensitive, age > sensitiveMaxAge { throw LatchError.insufficientUserAuthentication(maxAge: Int(sensitiveMaxAge)) }
        let consumers = try await store.sessionConsumers(sessionID: caller.session.id)
        return LoginStatus(
            authTime: caller.session.authTime, loginAge: age, consumers: consumers.map { LoginConsumer(issuer: $0.issuer, consumer: $0.consumer) },
            sensitiveMaxAge: sensitiveMaxAge, sensitiveAllowed: age <= sensitiveMaxAge, expiresAt: caller.session.expiresAt)
    }

    /// `POST /v1/me/logout`: ends this session.
    public func logout(_ caller: SignedInCaller) async throws -> Int {
        let now = clock.seconds()
        let event = SecurityEvent.now(.loggedOut, actor: "user", userID: caller.user.id, sessionID: caller.session.id, clock: clock, random: random)
        return try await store.count { transaction in
            let revoked = transaction.revokeSession(id: caller.session.id, at: now)
            transaction.record(event)
            return revoked
        }
    }

    /// `POST /v1/me/logout-all`: ends every session, on every device, that holds any (issuer, consumer) pair of this
    /// one — this one included. A session that is not an issuer login ends with every session of its user.
    public func logoutAll(_ caller: SignedInCaller) async throws -> Int {
        let pairs = try await store.sessionConsumers(sessionID: caller.session.id)
        let now = clock.seconds()
        let event = SecurityEvent.now(
            .sessionsRevoked, actor: "user", userID: caller.user.id, sessionID: caller.session.id, detail: "logout-all: \(pairs.count) consumers",
            clock: clock, random: random)
        let userID = caller.user.id
        let revoked = try await store.count { transaction in
            let revoked = pairs.isEmpty ? transaction.revokeSessions(userID: userID, at: now) : transaction.revokeSessions(holdingAny: pairs, at: now)
            transaction.record(event)
            return revoked
        }
        logger.info("logout-all", metadata: ["user": "\(caller.user.id)", "sessions": "\(revoked)"])
        return revoked
    }

    /// Admin: ends every session of one consumer, on every device.
    public func logoutConsumer(issuer: String, consumer: String) async throws -> Int {
        let now = clock.seconds()
        let event = SecurityEvent.now(
            .sessionsRevoked, actor: "admin", userID: nil, detail: "consumer logout-all: issuer \(issuer) consumer \(consumer)", clock: clock, random: random)
        return try await store.count { transaction in
            let revoked = transaction.revokeSessions(holdingAny: [ConsumerPair(issuer: issuer, consumer: consumer)], at: now)
            transaction.record(event)
            return revoked
        }
    }

    // MARK: Introspection (RFC 7662)

    /// The introspection answer for `token` (RFC 7662 §2.2): `{"active": false}` for anything not live — malformed,
    /// expired, revoked, or of a session that has ended — and otherwise the token's claims with `auth_time` and, for
    /// issuer logins, `consumers`.
    ///
    /// RFC 9470 for resource servers: with `maxAge` (the request's `max_age`), an active token whose login is older
    /// carries `"error": "insufficient_user_authentication"` and `"max_age"`: the resource server answers its client
    /// with that challenge.
    ///
    /// The kind of token is known from its form (`lrt_` refresh tokens, JWT access tokens), so `token_type_hint` is
    /// not needed.
    public func introspect(token: String, maxAge: Int64?) async throws -> [String: JSONValue] {
        let inactive: [String: JSONValue] = ["active": .bool(false)]
        guard token.utf8.count <= 16 * 1024 else { return inactive }
        let now = clock.seconds()
        var answer: [String: JSONValue]
        let session: Session
        if token.hasPrefix(RefreshTokenCodec.prefix) {
            guard let (sessionID, generation) = refreshTokens.parse(token), let (found, user) = try await store.sessionWithUser(id: sessionID),
                found.isActive(at: now), generation == found.generation
            else { return inactive }
            session = found
            answer = [
                "active": .bool(true), "token_type": .string("refresh_token"), "client_id": .string(found.clientID), "sub": .string(user.id),
                "username": .string(user.username), "scope": .string(found.scope), "exp": .int(found.expiresAt), "sid": .string(found.id),
            ]
            let consumers = try await store.sessionConsumers(sessionID: found.id)
            if !consumers.isEmpty { answer[ConsumerPair.claimName] = ConsumerPair.claim(consumers) }
            if let jkt = found.dpopJKT { answer["cnf"] = ["jkt": .string(jkt)] }
        } else {
            let caller: SignedInCaller
            do {
                caller = try await accessTokens.authenticate(accessToken: token)
            } catch is LatchError {
                return inactive
            }
            session = caller.session
            let claims = caller.claims
            answer = [
                "active": .bool(true), "token_type": .string(claims.confirmationKey == nil ? "Bearer" : "DPoP"), "client_id": .string(claims.clientID),
                "sub": .string(claims.subject),
                "username": .string(caller.user.username), "scope": .string(claims.scope), "iss": .string(claims.issuer),
                "aud": .string(claims.audience), "iat": .int(claims.issuedAt), "exp": .int(claims.expiresAt), "jti": .string(claims.jwtID),
                "sid": .string(claims.sessionID),
            ]
            // RFC 9449 §6.2: a bound token's key, so the resource server can check the proof.
            if let jkt = claims.confirmationKey { answer["cnf"] = ["jkt": .string(jkt)] }
            // The session's pairs now (adding tokens after this token was issued shows here at once).
            let consumers = session.amr.contains(IssuerLoginGrant.method) ? try await store.sessionConsumers(sessionID: session.id) : []
            if !consumers.isEmpty { answer[ConsumerPair.claimName] = ConsumerPair.claim(consumers) }
        }
        answer["auth_time"] = .int(session.authTime)
        answer["amr"] = .array(session.amr.map(JSONValue.string))
        if let maxAge, now - session.authTime > maxAge {
            answer["error"] = .string(ErrorCode.insufficientUserAuthentication.rawValue)
            answer["max_age"] = .int(maxAge)
        }
        return answer
    }
}
