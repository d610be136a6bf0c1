import LatchJOSE
import LatchModel

/// An issuer token: a short-lived JWT an app's backend (a login issuer) signs to say which of its consumers the user
/// is. `sub` holds one consumer id or several separated by single spaces.
///
/// Checked per RFC 7523 §3 and RFC 8725: the key is found by (`iss`, `kid`) among that issuer's keys only and must
/// be of the header's `alg`; `aud` is the issuer's audience; `iat`/`exp` within skew and at most the issuer's
/// `maxTokenLifetime` apart; `jti` present (consumed once per issuer by the login); `scope`, when present, only
/// values the issuer is allowed.
public struct IssuerTokenProfile: AssertionProfile {
    let registry: LoginIssuerRegistry
    let skew: Int64
    let now: Int64

    public var code: ErrorCode { .invalidGrant }
    public var noun: String { "issuer token" }

    /// Most consumer ids in one token, and their longest id, bytes.
    public static let maximumConsumersPerToken = 16
    public static let maximumConsumerLength = 128

    public init(registry: LoginIssuerRegistry, skew: Int64, now: Int64) {
        self.registry = registry
        self.skew = skew
        self.now = now
    }

    public func resolveKey(for token: ParsedJWS) async throws -> (ResolvedLoginIssuer, PublicKey) {
        guard let issuerID = token.lookupClaim("iss") else { throw LatchError.invalidGrant("the issuer token has no iss") }
        guard let issuer = try await registry.issuer(issuerID) else {
            throw LatchError.invalidGrant("the issuer token's iss is not a registered login issuer")
        }
        guard let kid = token.keyID, let key = await registry.key(kid, of: issuer) else {
            throw LatchError.invalidGrant("the issuer token's kid is not a key of its issuer")
        }
        return (issuer, key)
    }

    public func publicKey(of key: (ResolvedLoginIssuer, PublicKey)) -> PublicKey { key.1 }

    public func checkClaims(_ claims: [String: JSONValue], key: (ResolvedLoginIssuer, PublicKey)) throws(LatchError) -> IssuerTokenClaims {
        let issuer = key.0.issuer
        let checked = try AssertionClaims.check(
            claims, audience: issuer.audience, now: now, skew: skew, maxLifetime: issuer.maxTokenLifetime, code: .invalidGrant,
            maximumSubjectLength: Self.maximumConsumersPerToken * (Self.maximumConsumerLength + 1))
        guard checked.issuer == issuer.id else { throw LatchError.invalidGrant("the issuer token's iss does not match its key's issuer") }
        let consumers = try Self.consumers(checked.subject)
        var scopes: [String] = []
        if let scope = claims["scope"] {
            guard let text = scope.stringValue, text.utf8.count <= 1024 else { throw LatchError.invalidGrant("the scope claim is not a string") }
            scopes = text.split(separator: " ").map(String.init)
            if let refused = scopes.first(where: { !issuer.allowedScopes.contains($0) }) {
                throw LatchError.invalidGrant("the scope \(refused.prefix(64)) is not allowed for this issuer")
            }
        }
        return IssuerTokenClaims(
            issuer: issuer.id, consumers: consumers, jwtID: checked.jwtID, expiresAt: checked.expiresAt, scopes: scopes)
    }

    /// The consumer ids of a `sub`: 1–16 ids of 1–128 bytes, separated by single spaces, without control characters
    /// or repeats.
    static func consumers(_ subject: String) throws(LatchError) -> [String] {
        let ids = subject.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard ids.count <= maximumConsumersPerToken else {
            throw LatchError.invalidGrant("the sub claim names more than \(maximumConsumersPerToken) consumers")
        }
        var seen: Set<String> = []
        for id in ids {
            guard !id.isEmpty, id.utf8.count <= maximumConsumerLength else {
                throw LatchError.invalidGrant("a consumer id in sub is empty or longer than \(maximumConsumerLength) bytes (ids are separated by single spaces)")
            }
            guard !id.containsControlCharacters, !id.unicodeScalars.contains(where: { $0.properties.isWhitespace }) else {
                throw LatchError.invalidGrant("a consumer id in sub contains control or space characters")
            }
            guard seen.insert(id).inserted else { throw LatchError.invalidGrant("the sub claim names a consumer twice") }
        }
        return ids
    }
}

/// The checked claims of an issuer token.
public struct IssuerTokenClaims: Sendable {
    public var issuer: String
    public var consumers: [String]
    public var jwtID: String
    public var expiresAt: Int64
    public var scopes: [String]
}

extension ConsumerPair {
    /// The claim listing a session's pairs in its ID and access tokens and in introspection answers:
    /// `"consumers": [{"issuer": "<login issuer id>", "consumer": "<consumer id>"}, …]`.
    public static let claimName = "consumers"

    /// The claim's value for `pairs`.
    public static func claim(_ pairs: [ConsumerPair]) -> JSONValue {
        .array(pairs.map { .object(["issuer": .string($0.issuer), "consumer": .string($0.consumer)]) })
    }

    /// The pairs of a claim value; nil when it is not of that shape.
    public static func pairs(_ claim: JSONValue) -> [ConsumerPair]? {
        guard case .array(let members) = claim else { return nil }
        var pairs: [ConsumerPair] = []
        for member in members {
            guard case .object(let fields) = member, let issuer = fields["issuer"]?.stringValue, let consumer = fields["consumer"]?.stringValue
            else { return nil }
            pairs.append(ConsumerPair(issuer: issuer, consumer: consumer))
        }
        return pairs
    }

    /// The source of the principal user of this pair (see ``UserKind/issuerLogin``).
    public var userSource: String { "login:" + issuer }
}
