import Foundation

/// Where the client stands, as observed through `UserClient.signInStatusUpdates()`.
public enum SignInStatus: Sendable, Hashable {
    /// A sign-in is under way.
    case signingIn
    /// Tokens are held and the session is believed live.
    case signedIn
    /// No usable session, and why.
    case notSignedIn(NotSignedInCause)
}

/// Why the client is not signed in.
public enum NotSignedInCause: Sendable, Hashable {
    /// Nothing happened yet on this device.
    case neverSignedIn
    /// `signOut()` or `globalSignOut()` on this device.
    case signedOut
    /// The server ended the session: revoked (sign-out elsewhere, global sign-out, admin), reuse detected, or expired.
    case sessionEnded
    /// The last sign-in attempt failed.
    case signInFailed
    /// `clearAuthTokens()`.
    case tokensCleared
    /// `deregister()`.
    case deregistered
    /// `reset()`.
    case reset
    /// The device sign-in key registered here cannot be used on this device (a backup restored onto another device):
    /// the local registration was removed; register again.
    case deviceKeyLost
}

/// The tokens of a signed-in session, with their expiry as the server stated it.
public struct AuthenticationTokens: Sendable, Hashable, Codable {
    public var idToken: String
    public var accessToken: String
    public var refreshToken: String
    /// When the ID and access tokens expire.
    public var tokenExpiry: Date
    /// When the refresh family ends (the server's `refresh_expires_in`, not a guess).
    public var refreshTokenExpiry: Date
    /// The server's `token_type`: `DPoP` for tokens bound to a key of this device (RFC 9449), `Bearer` otherwise
    /// (nil: stored by an SDK version before DPoP, a bearer token).
    public var tokenType: String? = nil
    /// For `DPoP` tokens: the RFC 7638 thumbprint of the key they are bound to (the access token's `cnf.jkt`), which
    /// every refresh and every call with the access token proves.
    public var dpopKeyThumbprint: String? = nil

    /// Whether the tokens are DPoP-bound: the access token goes as `Authorization: DPoP` with a proof.
    public var isDPoPBound: Bool { dpopKeyThumbprint != nil }
}
