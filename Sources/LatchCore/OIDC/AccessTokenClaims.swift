import LatchModel

/// The claims of Latch's access tokens (RFC 9068 §2.2): written by ``TokenMinter``, read back by
/// ``AccessTokenGate/authenticate(accessToken:)`` — one type, so the two cannot drift apart.
public struct AccessTokenClaims: Sendable, Hashable {
    public var issuer: String
    public var subject: String
    public var audience: String
    public var clientID: String
    public var issuedAt: Int64
    public var expiresAt: Int64
    public var jwtID: String
    public var scope: String
    public var sessionID: String
    public var authTime: Int64
    /// For an issuer login: the (issuer, consumer) pairs the session held when the token was issued.
    public var consumers: [ConsumerPair]?
    /// RFC 9449 §6.1 `cnf.jkt`: the thumbprint of the DPoP key the token is bound to.
    public var confirmationKey: String?

    public init(
        issuer: String, subject: String, audience: String, clientID: String, issuedAt: Int64, expiresAt: Int64,
        jwtID: String, scope: String, sessionID: String, authTime: Int64, consumers: [ConsumerPair]? = nil
    ) {
        self.consumers = consumers
        self.issuer = issuer
        self.subject = subject
        self.audience = audience
        self.clientID = clientID
        self.issuedAt = issuedAt
        self.expiresAt = expiresAt
        self.jwtID = jwtID
        self.scope = scope
        self.sessionID = sessionID
        self.authTime = authTime
    }

    /// The claims set as compact JSON, members in a fixed order.
    public var json: [UInt8] {
        var writer = JSONWriter(reservingCapacity: 320)
        writer.beginObject()
        writer.member("iss", issuer)
        writer.member("sub", subject)
        writer.member("aud", audience)
        writer.member("client_id", clientID)
        writer.member("iat", issuedAt)
        writer.member("exp", expiresAt)
        writer.member("jti", jwtID)
        writer.member("scope", scope)
        writer.member("sid", sessionID)
        writer.member("auth_time", authTime)
        if let consumers {
            writer.key(ConsumerPair.claimName)
            writer.write(ConsumerPair.claim(consumers))
        }
        if let confirmationKey {
            writer.key("cnf")
            writer.beginObject()
            writer.member("jkt", confirmationKey)
            writer.endObject()
        }
        writer.endObject()
        return writer.bytes
    }

    /// Reads the claims of a verified token; nil when one is missing or of the wrong type (not one of ours).
    public init?(_ claims: [String: JSONValue]) {
        guard case .string(let issuer)? = claims["iss"], case .string(let subject)? = claims["sub"],
            case .string(let audience)? = claims["aud"], case .string(let clientID)? = claims["client_id"],
            case .int(let issuedAt)? = claims["iat"], case .int(let expiresAt)? = claims["exp"],
            case .string(let jwtID)? = claims["jti"], case .string(let scope)? = claims["scope"],
            case .string(let sessionID)? = claims["sid"], case .int(let authTime)? = claims["auth_time"]
        else { return nil }
        var consumers: [ConsumerPair]?
        if let claim = claims[ConsumerPair.claimName] {
            guard let pairs = ConsumerPair.pairs(claim) else { return nil }
            consumers = pairs
        }
        self.init(
            issuer: issuer, subject: subject, audience: audience, clientID: clientID, issuedAt: issuedAt,
            expiresAt: expiresAt, jwtID: jwtID, scope: scope, sessionID: sessionID, authTime: authTime, consumers: consumers)
        if let cnf = claims["cnf"] {
            guard case .string(let jkt)? = cnf["jkt"] else { return nil }
            confirmationKey = jkt
        }
    }
}
