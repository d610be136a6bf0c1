import LatchJOSE
import LatchModel

/// What one kind of JWT that Latch receives needs checked, beyond what every JWT gets: where its key comes
/// from and what its claims must say. The steps themselves run in ``AssertionVerifier``.
public protocol AssertionProfile: Sendable {
    /// What the key lookup yields: the key and what the caller needs with it (an issuer's settings, a user).
    associatedtype Key: Sendable
    /// The checked claims, typed.
    associatedtype Claims: Sendable

    /// The code of every refusal: `invalid_grant` at the token endpoint (RFC 6749 §5.2), `invalid_proof` at
    /// registration, `invalid_token` for bearer tokens (RFC 6750 §3.1).
    var code: ErrorCode { get }
    /// The token's name in messages: "assertion", "answer", "access token".
    var noun: String { get }

    /// This kind's own header rules (e.g. RFC 9068's `typ`); runs after the rules every JWT gets.
    func checkHeader(_ token: ParsedJWS) throws(LatchError)
    /// The key that must have signed `token`. Throws a refusal when none matches: the token names a key by
    /// its untrusted `kid` (and `iss`), and nothing else is tried.
    func resolveKey(for token: ParsedJWS) async throws -> Key
    /// The public key to check the signature with.
    func publicKey(of key: Key) -> PublicKey
    /// Checks the claims of a token whose signature verified.
    func checkClaims(_ claims: [String: JSONValue], key: Key) throws(LatchError) -> Claims
    /// Whether Latch signed this kind itself: then only the one signature form Latch writes is accepted (low-S
    /// ECDSA), so a token has one spelling. Others' tokens are taken in any valid form.
    var signedByLatch: Bool { get }
}

extension AssertionProfile {
    public func checkHeader(_ token: ParsedJWS) throws(LatchError) {}
    public var signedByLatch: Bool { false }
}

/// A JWT that passed every step: the key it verified with and its typed claims.
public struct VerifiedAssertion<Key: Sendable, Claims: Sendable>: Sendable {
    public let key: Key
    public let claims: Claims
}

/// The one way Latch checks a JWT it receives — custom federated and device assertions, registration proofs,
/// its own access tokens: parse, resolve the key, verify, check the claims (RFC 8725 §3).
///
/// - Step 1. Shape: at most `maximumBytes`, three base64url parts, JSON header and payload; `alg` on the
///   allowlist; no header that brings its own key or extensions (`jwk`, `jku`, `x5u`, `x5c`, `crit`); a `kid`
///   of 1–255 bytes; then the profile's header rules.
/// - Step 2. The profile resolves the one key the token may be signed with.
/// - Step 3. `alg` is that key's algorithm and the signature verifies.
/// - Step 4. The profile checks the claims.
public struct AssertionVerifier: Sendable {
    /// Longest accepted token, bytes.
    public var maximumBytes: Int

    public init(maximumBytes: Int = ParsedJWS.defaultMaximumLength) {
        self.maximumBytes = maximumBytes
    }

    /// Step 1 alone: for callers that choose a profile by looking at the token.
    public func parse(_ token: String, code: ErrorCode, noun: String) throws(LatchError) -> ParsedJWS {
        let parsed: ParsedJWS
        do {
            parsed = try ParsedJWS(token, maximumLength: maximumBytes)
            _ = try parsed.algorithm()
            try parsed.checkHeaderPolicy()
        } catch {
            throw LatchError(code, "the \(noun) is not an acceptable JWT: \(error.detail)")
        }
        guard let kid = parsed.keyID, !kid.isEmpty, kid.utf8.count <= 255 else {
            throw LatchError(code, "the \(noun) header has no kid")
        }
        return parsed
    }

    /// Steps 2–4 for a token parsed by ``parse(_:code:noun:)``.
    public func verify<Profile: AssertionProfile>(_ token: ParsedJWS, as profile: Profile) async throws
        -> VerifiedAssertion<Profile.Key, Profile.Claims>
    {
        try profile.checkHeader(token)
        // Step 2.
        let key = try await profile.resolveKey(for: token)
        // Step 3.
        let verified: VerifiedJWS
        do {
            verified = try token.verify(with: profile.publicKey(of: key), canonical: profile.signedByLatch)
        } catch {
            throw LatchError(profile.code, "the \(profile.noun)'s signature does not verify", detail: error.description)
        }
        // Step 4.
        return VerifiedAssertion(key: key, claims: try profile.checkClaims(verified.claims, key: key))
    }

    /// Every step.
    public func verify<Profile: AssertionProfile>(_ token: String, as profile: Profile) async throws
        -> VerifiedAssertion<Profile.Key, Profile.Claims>
    {
        try await verify(try parse(token, code: profile.code, noun: profile.noun), as: profile)
    }
}

extension ParsedJWS {
    /// A string claim of 1–255 bytes, used to look a key up before the token is verified (it is untrusted).
    public func lookupClaim(_ name: String) -> String? {
        guard let value = claims[name]?.stringValue, !value.isEmpty, value.utf8.count <= 255 else { return nil }
        return value
    }
}
