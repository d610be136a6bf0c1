import Foundation
import LatchModel

/// A Latch access token (RFC 9068) whose signature, issuer, audience, lifetime, binding and (when configured) live
/// status were checked by ``AccessTokenVerifier``.
public struct VerifiedAccessToken: Sendable {
    /// One (login issuer, consumer) pair of an issuer login (the `consumers` claim).
    public struct Consumer: Sendable, Hashable, Codable {
        /// The login issuer's id in Latch.
        public var issuer: String
        /// The consumer's id at that issuer.
        public var consumer: String

        public init(issuer: String, consumer: String) {
            self.issuer = issuer
            self.consumer = consumer
        }
    }

    /// The user's id in Latch (`sub`).
    public let subject: String
    /// The app's OAuth client (`client_id`).
    public let clientId: String
    /// The granted scopes (`scope`, space-separated in the token).
    public let scopes: Set<String>
    /// Latch's sign-in session (`sid`): ending it (logout, revocation) ends the token's life at Latch.
    public let sessionId: String
    /// When the user last authenticated (`auth_time`): see ``requireRecentAuthentication(maxAge:)``.
    public let authTime: Date
    /// The (issuer, consumer) pairs of an issuer login's session; empty otherwise.
    public let consumers: [Consumer]
    /// The RFC 7638 thumbprint of the key the token is bound to (`cnf.jkt`, RFC 9449 §6.1); nil for a bearer token.
    /// When set, the request's DPoP proof was made with that key.
    public let jkt: String?
    /// When the token was issued (`iat`).
    public let issuedAt: Date
    /// When the token expires (`exp`).
    public let expiresAt: Date
    /// The token's id (`jti`).
    public let tokenId: String
    /// Every claim, as signed.
    public let claims: [String: JSONValue]
    /// The verifier's clock when the token was checked: the time ``requireRecentAuthentication(maxAge:)`` measures from.
    public let verifiedAt: Date

    let challenge: ChallengeStyle

    /// True when the token is DPoP-bound (``jkt`` is set).
    public var isDPoPBound: Bool { jkt != nil }

    /// True when the token grants `scope`.
    public func hasScope(_ scope: String) -> Bool { scopes.contains(scope) }

    /// Throws `insufficient_scope` (403) naming `required` unless the token grants every one of them.
    public func requireScopes(_ required: some Collection<String>) throws(ResourceServerError) {
        guard !required.allSatisfy(scopes.contains) else { return }
        throw ResourceServerError(
            .insufficientScope, "the access token lacks a scope this resource needs", scheme: scheme, challenge: challenge,
            requiredScopes: Array(required).sorted())
    }

    /// RFC 9470 step-up: throws `insufficient_user_authentication` (401) with the challenge
    /// `Bearer error="insufficient_user_authentication", …, max_age=N` (`DPoP …` for a bound token) when the user
    /// authenticated more than `maxAge` before the token was verified. The app signs the user in again (Latch's
    /// `max_age`) and retries with the new token.
    ///
    /// ```swift
    /// try token.requireRecentAuthentication(maxAge: .seconds(300))   // before changing the payout account
    /// ```
    public func requireRecentAuthentication(maxAge: Duration) throws(ResourceServerError) {
        let seconds = max(0, maxAge.wholeSeconds)
        guard verifiedAt.timeIntervalSince(authTime) > Double(seconds) else { return }
        throw ResourceServerError(
            .insufficientUserAuthentication, "a more recent sign-in is required for this operation", scheme: scheme, challenge: challenge,
            maxAge: seconds)
    }

    var scheme: ResourceServerError.Scheme { jkt == nil ? .bearer : .dpop }
}
