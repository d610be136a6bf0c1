import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel

/// Sign-in with an App Attest assertion (`urn:latch:params:oauth:grant-type:app-attest`): the attested key signs
/// `client_data`, a JSON object whose `challenge` is a sign-in nonce Latch issued for the key's user.
///
/// Parameters: `key_id` (the base64 App Attest key id), `assertion` (base64url of the CBOR
/// `{signature, authenticatorData}` from `generateAssertion`), `client_data` (base64url of the JSON the app hashed
/// and passed as clientDataHash). Apple's assertion checks: the signature over SHA-256(authenticatorData ‖
/// SHA-256(client_data)) with the stored key, the App ID, and a counter greater than the stored one — moved
/// forward in the same unit of work that consumes the nonce and opens the session, so an assertion counts once on
/// any replica.
///
/// DPoP: an App Attest key can only sign assertions, so the app proves possession with a key of its own (a Secure
/// Enclave key) and names its RFC 7638 thumbprint as `dpop_jkt` in `client_data`: the assertion then vouches for that
/// key, the request's DPoP proof must be made with it, and an attested-DPoP client accepts it as attested (`hwk`).
public struct AppAttestGrant: TokenGrant {
    public var grantType: String { GrantType.appAttest }

    let store: any UserStore
    let apps: EvidenceApps
    let nonces: SignInNonceCodec
    let scopes: ScopePolicy
    let sessions: SessionOpener
    let clock: LatchClock

    public init(
        store: any UserStore, apps: EvidenceApps, nonces: SignInNonceCodec, scopes: ScopePolicy, sessions: SessionOpener, clock: LatchClock
    ) {
        self.store = store
        self.apps = apps
        self.nonces = nonces
        self.scopes = scopes
        self.sessions = sessions
        self.clock = clock
    }

    /// Longest `client_data` (decoded), bytes.
    static let maximumClientData = 4096

    public func exchange(_ request: TokenRequest) async throws -> TokenResponse {
        // Step 1. Parameters.
        let keyID = try request.required("key_id")
        let assertionText = try request.required("assertion")
        let clientDataText = try request.required("client_data")
        let scope = try scopes.grant(request.parameters["scope"])
        guard keyID.utf8.count <= 64, let keyBytes = Data(base64Encoded: keyID), keyBytes.count == 32 else {
            throw LatchError.invalidRequest("key_id must be the base64 App Attest key id (32 bytes)")
        }
        guard assertionText.utf8.count <= AppAttest.maximumLength * 2, let assertion = Base64URL.decode(assertionText) else {
            throw LatchError.invalidRequest("assertion must be base64url")
        }
        guard clientDataText.utf8.count <= Self.maximumClientData * 2, let clientData = Base64URL.decode(clientDataText),
            clientData.count <= Self.maximumClientData
        else { throw LatchError.invalidRequest("client_data must be base64url of at most \(Self.maximumClientData) bytes") }
        guard case .object(let members)? = try? JSONValue.parse(clientData), let nonce = members["challenge"]?.stringValue else {
            throw LatchError.invalidGrant("client_data must be a JSON object with a string challenge (the sign-in nonce)")
        }
        var vouched: String?
        switch members["dpop_jkt"] {
        case nil: break
        case .string(let thumbprint)? where thumbprint.utf8.count == 43 && Base64URL.decode(thumbprint)?.count == 32: vouched = thumbprint
        default: throw LatchError.invalidGrant("client_data's dpop_jkt must be an RFC 7638 SHA-256 thumbprint (43 base64url characters)")
        }
        // Step 2. The attested key and its user; the nonce was issued for that user.
        let now = clock.seconds()
        guard let (user, key) = try await store.attestedDeviceKey(keyID: keyID, type: RegistrationMethod.appAttest.rawValue),
            let attestation = key.attestation, let publicKey = key.key.p256
        else { throw LatchError.invalidGrant("no App Attest key is registered under this key_id") }
        guard let expiresAt = nonces.expiry(of: nonce, username: user.username, now: now) else {
            throw LatchError.invalidGrant("the challenge is not a sign-in nonce Latch issued for this key's user, or it has expired")
        }
        // Step 3. Apple's assertion checks.
        var trace = AttestationTrace()
        let verified: AppAttest.VerifiedAssertion
        do {
            verified = try AppAttest.verifyAssertion(
                Array(assertion), clientDataHash: Array(SHA256.hash(data: clientData)), publicKey: publicKey,
                apps: try await apps.snapshot().appAttest, previousCounter: attestation.signCount, trace: &trace)
        } catch let failure as AttestationFailure {
            throw LatchError.invalidGrant("\(failure.step): \(failure.detail)", detail: failure.code.rawValue)
        }
        // Step 4. One unit of work: nonce consumed, counter moved forward, session opened.
        var signIn = VerifiedSignIn(
            user: user, amr: ["hwk"], consumes: .jti(nonce, issuer: SignInNonces.consumedIssuer, until: expiresAt),
            advancesSignCount: (keyID, verified.counter))
        signIn.vouchedDPoPKey = vouched
        return try await sessions.open(signIn, client: request.client, scope: scope, now: now, dpop: request.dpop)
    }
}
