import LatchJOSE
import LatchModel

/// Sign-in with a device key: the device signs the nonce Latch issued (``SignInNonces``) as its assertion's
/// `jti`, with `iss` = `sub` = its username and `kid` = the device key's id.
///
/// It is recognised by that `jti` alone: sign-in nonces carry the ``SignInNonces/prefix``. The nonce's MAC is
/// checked first (it must be Latch's, unexpired, and issued for the assertion's `iss`), then the user and key are
/// found in one lookup, and the nonce is consumed when the session opens.
public struct DeviceKeySignIn: AssertionSignIn {
    public var method: String { "device_key" }
    let store: any UserStore
    let verifier: AssertionVerifier
    let settings: AssertionSettings
    let nonces: SignInNonceCodec

    public init(store: any UserStore, verifier: AssertionVerifier, settings: AssertionSettings, nonces: SignInNonceCodec) {
        self.store = store
        self.verifier = verifier
        self.settings = settings
        self.nonces = nonces
    }

    public func recognizes(_ assertion: ParsedJWS) -> Bool {
        assertion.claims["jti"]?.stringValue?.hasPrefix(SignInNonces.prefix) == true
    }

    public func verify(_ assertion: ParsedJWS, now: Int64) async throws -> VerifiedSignIn {
        guard let nonce = assertion.claims["jti"]?.stringValue, let iss = assertion.lookupClaim("iss"),
            let username = try? Usernames.native(iss), let expiresAt = nonces.expiry(of: nonce, username: username, now: now)
        else { throw LatchError.invalidGrant("the nonce is not one Latch issued for this username, or it has expired") }
        let verified = try await verifier.verify(assertion, as: DeviceAssertion(store: store, settings: settings, username: username, now: now))
        var signIn = VerifiedSignIn(
            user: verified.key.0, amr: ["pop"], consumes: .jti(nonce, issuer: SignInNonces.consumedIssuer, until: expiresAt))
        signIn.deviceKey = verified.key.1
        return signIn
    }
}

/// A device sign-in assertion: signed by the key registered under its `kid` for the user its `iss` names.
struct DeviceAssertion: AssertionProfile {
    let store: any UserStore
    let settings: AssertionSettings
    /// The assertion's `iss` in normalised form (``Usernames/native(_:)``).
    let username: String
    let now: Int64

    var code: ErrorCode { .invalidGrant }
    var noun: String { "assertion" }

    func resolveKey(for token: ParsedJWS) async throws -> (User, DeviceKey) {
        guard let keyID = token.keyID,
            let found = try await store.deviceSignInKey(username: username, keyID: keyID)
        else { throw LatchError.invalidGrant("no device key matches the assertion's iss and kid") }
        return found
    }

    func publicKey(of key: (User, DeviceKey)) -> PublicKey { key.1.key }

    /// RFC 7523 §3 with the deployment's audience and the device lifetime cap; `sub` must equal `iss`.
    func checkClaims(_ claims: [String: JSONValue], key: (User, DeviceKey)) throws(LatchError) -> AssertionClaims {
        let checked = try AssertionClaims.check(
            claims, audience: settings.audience, now: now, skew: settings.clockSkew,
            maxLifetime: settings.deviceAssertionMaxLifetime, code: .invalidGrant)
        guard checked.subject == checked.issuer else { throw LatchError.invalidGrant("sub must equal iss (the username)") }
        return checked
    }
}
