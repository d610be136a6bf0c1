import LatchJOSE
import LatchModel

/// A custom federated JWT: signed by a customer's backend with a key registered for its issuer. It registers a
/// user and, later, signs them in; `sub` is the username.
///
/// The key is found by (`iss`, `kid`) among that issuer's keys only, and the claims are checked per
/// RFC 7523 §3 with the issuer's audience and lifetime cap.
public struct FederatedAssertion: AssertionProfile {
    let store: any SignOnIssuerStore
    public let code: ErrorCode
    public let noun: String
    let skew: Int64
    let now: Int64
    /// Login issuers marked for custom federation: their keys are looked up when no custom federated issuer key
    /// matches (the issuer's own key collection only).
    let loginIssuers: LoginIssuerRegistry?

    public init(store: any SignOnIssuerStore, code: ErrorCode, noun: String, skew: Int64, now: Int64, loginIssuers: LoginIssuerRegistry? = nil) {
        self.loginIssuers = loginIssuers
        self.store = store
        self.code = code
        self.noun = noun
        self.skew = skew
        self.now = now
    }

    public func resolveKey(for token: ParsedJWS) async throws -> SignOnIssuerKey {
        guard let issuer = token.lookupClaim("iss"), let keyID = token.keyID else {
            throw LatchError(code, "no registered issuer key matches the \(noun)'s iss and kid")
        }
        if let key = try await store.issuerKey(issuer: issuer, keyID: keyID) { return key }
        if let loginIssuers, let login = try await loginIssuers.issuer(issuer), login.issuer.customFederation,
            let key = await loginIssuers.key(keyID, of: login)
        {
            return SignOnIssuerKey(
                issuer: issuer, keyID: keyID, key: key, audience: login.issuer.audience, allowedClaims: [],
                maxLifetime: login.issuer.maxTokenLifetime, createdAt: login.issuer.createdAt)
        }
        throw LatchError(code, "no registered issuer key matches the \(noun)'s iss and kid")
    }

    public func publicKey(of key: SignOnIssuerKey) -> PublicKey { key.key }

    public func checkClaims(_ claims: [String: JSONValue], key: SignOnIssuerKey) throws(LatchError) -> AssertionClaims {
        try AssertionClaims.check(claims, audience: key.audience, now: now, skew: skew, maxLifetime: key.maxLifetime, code: code)
    }

    /// The custom claims an issuer allows, from an assertion; registered claim names are never copied.
    public static func keptClaims(_ claims: [String: JSONValue], allowed: [String]) -> [String: JSONValue] {
        var kept: [String: JSONValue] = [:]
        for name in allowed where !TokenMinter.reservedClaims.contains(name) {
            if let value = claims[name] { kept[name] = value }
        }
        return kept
    }
}
