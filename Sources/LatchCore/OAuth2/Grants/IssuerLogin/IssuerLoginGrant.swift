import LatchJOSE
import LatchModel
import Logging

/// How issuer logins behave.
public struct IssuerLoginSettings: Sendable {
    /// Seconds a login session lasts (`login.validity`).
    public var validity: Int64 = 3600
    /// How recent a login sensitive operations need, seconds (`login.sensitiveMaxAge`).
    public var sensitiveMaxAge: Int64 = 300
    /// Whether a login session may be refreshed past `validity`, up to the refresh family's lifetime
    /// (`login.refreshBeyondValidity`).
    public var refreshBeyondValidity = false
    /// Most issuer tokens in one request.
    public var maximumTokens = 16
    /// Most (issuer, consumer) pairs one session holds.
    public var maximumPairs = 64
    /// Allowed clock difference, seconds.
    public var clockSkew: Int64 = 60

    public init() {}
}

/// The issuer-login grant (`urn:latch:params:oauth:grant-type:issuer-login`): one or more issuer tokens
/// (`issuer_token`, repeated) log in one session holding every (issuer, consumer) pair they name. With the session's
/// access token as `Authorization: Bearer`, the same request adds the tokens' pairs to that session instead.
///
/// - Step 1. 1–`maximumTokens` tokens, no token twice; the requested scope is allowed.
/// - Step 2. Every token verifies (``IssuerTokenProfile``); the first that does not fails the whole request, named by
///   its 0-based `tokenIndex`. No `(iss, jti)` twice.
/// - Step 3. One unit of work consumes every token's `jti` (first, so a concurrent duplicate on any replica waits,
///   then finds it spent), creates the principal at its first login, and opens the session with its pairs — or, when
///   adding, renews the session's login time and adds the pairs. Nothing is consumed or written when any step fails.
///
/// The session's principal (the tokens' `sub`) is the Latch user of the *first* pair of the first token: created at
/// that pair's first login, the same user at every later one.
public struct IssuerLoginGrant: TokenGrant {
    public var grantType: String { GrantType.issuerLogin }

    let store: any UnitOfWork & UserStore & SessionStore & IssuerLoginStore
    let registry: LoginIssuerRegistry
    let verifier: AssertionVerifier
    let scopes: ScopePolicy
    let accessTokens: AccessTokenGate
    let minter: TokenMinter
    let refreshTokens: RefreshTokenCodec
    let tokens: TokenSettings
    let settings: IssuerLoginSettings
    let clock: LatchClock
    let random: RandomSource
    let logger: Logger

    /// The `amr` value of issuer-login sessions.
    public static let method = "issuer"

    /// Seconds an issuer-login session lasts from its latest login: the login's validity, or the refresh family's lifetime
    /// where the deployment lets issuer logins refresh past it.
    var sessionLifetime: Int64 {
        settings.refreshBeyondValidity ? max(settings.validity, tokens.refreshFamilyLifetime) : settings.validity
    }

    public init(
        store: any UnitOfWork & UserStore & SessionStore & IssuerLoginStore, registry: LoginIssuerRegistry, verifier: AssertionVerifier,
        scopes: ScopePolicy, accessTokens: AccessTokenGate, minter: TokenMinter, refreshTokens: RefreshTokenCodec, tokens: TokenSettings,
        settings: IssuerLoginSettings, clock: LatchClock, random: RandomSource, logger: Logger = Logger(label: "latch.issuer-login")
    ) {
        self.store = store
        self.registry = registry
        self.verifier = verifier
        self.scopes = scopes
        self.accessTokens = accessTokens
        self.minter = minter
        self.refreshTokens = refreshTokens
        self.tokens = tokens
        self.settings = settings
        self.clock = clock
        self.random = random
        self.logger = logger
    }

    enum Refusal: Error {
        /// The token at this index was used before.
        case replayed(Int)
        case principalTaken, userGone, sessionEnded
    }

    static func replayed(_ index: Int) -> LatchError {
        LatchError(.invalidGrant, "issuer token \(index) was used before", members: ["tokenIndex": .int(Int64(index))])
    }

    public func exchange(_ request: TokenRequest) async throws -> TokenResponse {
        // Step 1.
        let presented = request.values("issuer_token")
        guard !presented.isEmpty, !presented.contains(where: \.isEmpty) else { throw LatchError.invalidRequest("issuer_token is required for this grant_type") }
        guard presented.count <= settings.maximumTokens else {
            throw LatchError.invalidRequest("at most \(settings.maximumTokens) issuer tokens may be presented at once")
        }
        let adding = try await request.bearer.asyncFlatMap { try await accessTokens.authenticate(accessToken: $0) }
        let scope = try adding.map { $0.session.scope } ?? scopes.grant(request.parameters["scope"])
        // Step 2.
        let now = clock.seconds()
        var verified: [IssuerTokenClaims] = []
        var seenJWTs: Set<String> = []
        for (index, token) in presented.enumerated() {
            func fail(_ message: String) -> LatchError { LatchError(.invalidGrant, message, members: ["tokenIndex": .int(Int64(index))]) }
            guard seenJWTs.insert(token).inserted else { throw fail("issuer token \(index) is presented twice") }
            let claims: IssuerTokenClaims
            do {
                claims = try await verifier.verify(token, as: IssuerTokenProfile(registry: registry, skew: settings.clockSkew, now: now)).claims
            } catch let error as LatchError {
                throw fail("issuer token \(index): \(error.message)")
            }
            guard !verified.contains(where: { $0.issuer == claims.issuer && $0.jwtID == claims.jwtID }) else {
                throw fail("issuer token \(index) repeats the jti of an earlier token of its issuer")
            }
            verified.append(claims)
        }
        var pairs: [ConsumerPair] = []
        for claims in verified {
            for consumer in claims.consumers where !pairs.contains(ConsumerPair(issuer: claims.issuer, consumer: consumer)) {
                pairs.append(ConsumerPair(issuer: claims.issuer, consumer: consumer))
            }
        }
        let spends = verified.map { SingleUse.jti($0.jwtID, issuer: $0.issuer, until: $0.expiresAt.adding(seconds: settings.clockSkew)) }
        // Step 3. DPoP: a new session is bound to the proof's key; adding to a bound session proves that key.
        if request.dpop != nil, request.dpopPolicy.attested {
            throw LatchError(.invalidDPoPProof, "this client binds tokens only to a device's registered sign-in key; an issuer login has none")
        }
        if let caller = adding {
            if let bound = caller.session.dpopJKT, bound != request.dpop?.thumbprint {
                throw LatchError(.invalidDPoPProof, "this session is bound to a DPoP key: prove it to add issuer tokens")
            }
            return try await add(pairs, spending: spends, to: caller, client: request.client, now: now)
        }
        return try await login(pairs, spending: spends, client: request.client, scope: scope, dpopKey: request.dpop?.thumbprint, now: now)
    }

    func login(_ pairs: [ConsumerPair], spending spends: [SingleUse], client: Client, scope: String, dpopKey: String?, now: Int64) async throws
        -> TokenResponse
    {
        guard pairs.count <= settings.maximumPairs else {
            throw LatchError.invalidGrant("a login holds at most \(settings.maximumPairs) (issuer, consumer) pairs")
        }
        let principal = pairs[0]
        let lifetime = sessionLifetime
        // Twice at most: a first login of a pair that races another first login of the same pair finds the user the
        // other created.
        for attempt in 0..<2 {
            let existing = try await store.federatedUser(issuer: principal.userSource, subject: principal.consumer)
            let user =
                existing
                ?? User(
                    id: random.timeOrderedID(now: clock.now()), username: principal.consumer, kind: .issuerLogin, issuer: principal.userSource,
                    subject: principal.consumer, claims: [:], createdAt: now)
            let session = Session(
                id: random.timeOrderedID(now: clock.now()), userID: user.id, clientID: client.id, authTime: now, amr: [Self.method], scope: scope,
                createdAt: now, expiresAt: now.adding(seconds: lifetime), dpopJKT: dpopKey)
            // Built here, not in the unit's body: the body may run on a store thread, without the request's origin.
            let registered = SecurityEvent.now(.userRegistered, actor: "system", userID: user.id, detail: "ISSUER_LOGIN", clock: clock, random: random)
            let signedIn = SecurityEvent.now(
                .signInSucceeded, actor: "user", userID: user.id, sessionID: session.id, clientID: client.id,
                detail: "amr=\(Self.method) pairs=\(pairs.count)", clock: clock, random: random)
            do {
                try await store.write { transaction in
                    for (index, spend) in spends.enumerated() { transaction.consume(spend, ifUnavailable: Refusal.replayed(index)) }
                    if existing == nil {
                        transaction.insertUser(user, ifTaken: Refusal.principalTaken)
                        transaction.record(registered)
                    }
                    transaction.requireUser(id: user.id, ifMissing: Refusal.userGone)
                    transaction.insertSession(session)
                    transaction.insertSessionConsumers(sessionID: session.id, pairs, at: now)
                    transaction.record(signedIn)
                }
            } catch Refusal.replayed(let index) {
                // Every token verified: a principal that exists is the user the refusal names.
                throw existing.map { Self.replayed(index).afterVerifying($0.id) } ?? Self.replayed(index)
            } catch Refusal.principalTaken where attempt == 0 {
                continue
            } catch Refusal.principalTaken, Refusal.userGone {
                throw LatchError(.temporarilyUnavailable, "the login raced a change of its principal; try again")
            }
            logger.debug("issuer login", metadata: ["user": "\(user.id)", "sid": "\(session.id)", "pairs": "\(pairs.count)"])
            return try await minter.response(
                user: user, session: session, refreshToken: refreshTokens.token(sessionID: session.id, generation: session.generation), now: now,
                consumers: pairs.sorted(), idTokenAlgorithm: client.idTokenAlgorithm)
        }
        throw LatchError(.temporarilyUnavailable, "the login raced a change of its principal; try again")
    }

    func add(_ pairs: [ConsumerPair], spending spends: [SingleUse], to caller: SignedInCaller, client: Client, now: Int64) async throws
        -> TokenResponse
    {
        guard caller.session.amr.contains(Self.method) else {
            throw LatchError.invalidGrant("issuer tokens can be added only to an issuer-login session")
        }
        guard caller.session.clientID == client.id else { throw LatchError.invalidGrant("the session belongs to another client") }
        let held = try await store.sessionConsumers(sessionID: caller.session.id)
        let added = pairs.filter { !held.contains($0) }
        guard held.count + added.count <= settings.maximumPairs else {
            throw LatchError.invalidGrant("a login holds at most \(settings.maximumPairs) (issuer, consumer) pairs")
        }
        let lifetime = sessionLifetime
        // A new login: the validity and the sensitive-operation clock restart from now; the refresh family's end
        // never moves earlier.
        let expiresAt = max(caller.session.expiresAt, now.adding(seconds: lifetime))
        let sessionID = caller.session.id
        let signedIn = SecurityEvent.now(
            .signInSucceeded, actor: "user", userID: caller.user.id, sessionID: sessionID, clientID: client.id,
            detail: "amr=\(Self.method) added=\(added.count)", clock: clock, random: random)
        do {
            try await store.write { transaction in
                for (index, spend) in spends.enumerated() { transaction.consume(spend, ifUnavailable: Refusal.replayed(index)) }
                transaction.renewLogin(sessionID: sessionID, authTime: now, expiresAt: expiresAt, ifUnavailable: Refusal.sessionEnded)
                transaction.insertSessionConsumers(sessionID: sessionID, added, at: now)
                transaction.record(signedIn)
            }
        } catch Refusal.replayed(let index) {
            throw Self.replayed(index).afterVerifying(caller.user.id)
        } catch Refusal.sessionEnded {
            throw LatchError.invalidGrant("the session has ended")
        }
        guard let (session, user) = try await store.sessionWithUser(id: sessionID) else { throw LatchError.invalidGrant("the session has ended") }
        let consumers = try await store.sessionConsumers(sessionID: sessionID)
        logger.debug("issuer tokens added", metadata: ["sid": "\(sessionID)", "added": "\(added.count)"])
        return try await minter.response(
            user: user, session: session, refreshToken: refreshTokens.token(sessionID: session.id, generation: session.generation), now: now,
            consumers: consumers, idTokenAlgorithm: client.idTokenAlgorithm)
    }
}
