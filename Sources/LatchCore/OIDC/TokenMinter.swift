import LatchJOSE
import LatchModel

/// Builds and signs the ID and access tokens of a token response.
public struct TokenMinter: Sendable {
    let keys: SigningKeyRing
    let settings: TokenSettings
    let random: RandomSource

    public init(keys: SigningKeyRing, settings: TokenSettings, random: RandomSource) {
        self.keys = keys
        self.settings = settings
        self.random = random
    }

    /// Claim names Latch sets itself; a custom claim may never take one of them.
    public static let reservedClaims: Set<String> = [
        "iss", "sub", "aud", "exp", "iat", "nbf", "jti", "auth_time", "amr", "acr", "azp", "sid", "nonce",
        "at_hash", "c_hash", "username", "client_id", "scope", "typ", "cnf", "cty", "events",
    ]

    /// The token response for a session at `now`, carrying `refreshToken`.
    public func response(user: User, session: Session, refreshToken: String, now: Int64) throws -> TokenResponse {
        let signer = keys.signer
        let idToken = try signer.sign(claimsJSON: idTokenClaims(user: user, session: session, now: now), type: "JWT")
        let accessToken = try signer.sign(
            claimsJSON: accessTokenClaims(user: user, session: session, now: now), type: "at+jwt")
        return TokenResponse(
            accessToken: accessToken, expiresIn: Int(settings.accessTokenLifetime), refreshToken: refreshToken,
            refreshExpiresIn: Int(max(0, session.expiresAt - now)), idToken: idToken, scope: session.scope)
    }

    /// OIDC Core §2 ID token claims, plus `sid`, `username` and the user's kept custom claims.
    func idTokenClaims(user: User, session: Session, now: Int64) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 384)
        writer.beginObject()
        writer.member("iss", settings.issuer)
        writer.member("sub", user.id)
        writer.member("aud", session.clientID)
        writer.member("iat", now)
        writer.member("exp", now + settings.idTokenLifetime)
        writer.member("auth_time", session.authTime)
        writer.member("amr", session.amr)
        writer.member("sid", session.id)
        writer.member("username", user.username)
        for name in user.claims.keys.sorted() where !Self.reservedClaims.contains(name) {
            writer.key(name)
            writer.write(user.claims[name]!)
        }
        writer.endObject()
        return writer.bytes
    }

    /// RFC 9068 §2.2 access token claims.
    func accessTokenClaims(user: User, session: Session, now: Int64) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 320)
        writer.beginObject()
        writer.member("iss", settings.issuer)
        writer.member("sub", user.id)
        writer.member("aud", settings.accessTokenAudience)
        writer.member("client_id", session.clientID)
        writer.member("iat", now)
        writer.member("exp", now + settings.accessTokenLifetime)
        writer.member("jti", random.token(byteCount: 16))
        writer.member("scope", session.scope)
        writer.member("sid", session.id)
        writer.member("auth_time", session.authTime)
        writer.endObject()
        return writer.bytes
    }
}
