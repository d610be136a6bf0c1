import LatchJOSE
import LatchModel

/// `TEST`: the answer is a JWT signed by an admin-issued test registration key; the request's public key
/// becomes the user's device sign-in key. The username is the `sub` in ``Usernames/native(_:)`` form.
///
/// The token is what the Sudo SDKs' test provider signs: header `kid` = the test key's id; claims
/// `iss` = ``RegistrationSettings/testIssuer``, `aud` = ``RegistrationSettings/testAudience``, `sub` = the
/// username, `jti`, `iat`, `exp`.
public struct TestKeyProof: RegistrationProof {
    public var proofType: RegistrationMethod { .test }

    let store: any TestRegistrationKeyStore
    let verifier: AssertionVerifier
    let settings: RegistrationSettings
    let assertions: AssertionSettings

    public init(store: any TestRegistrationKeyStore, verifier: AssertionVerifier, settings: RegistrationSettings, assertions: AssertionSettings) {
        self.store = store
        self.verifier = verifier
        self.settings = settings
        self.assertions = assertions
    }

    public func checkShape(_ request: RegistrationRequest) throws(LatchError) {}

    public func verify(_ request: RegistrationRequest, now: Int64) async throws -> VerifiedRegistration {
        let deviceKey = try request.checkedDeviceKey(required: proofType)
        let verified = try await verifier.verify(
            request.answer, as: TestRegistrationToken(store: store, settings: settings, skew: assertions.clockSkew, now: now))
        let claims = verified.claims
        let username: String
        do {
            username = try Usernames.native(claims.subject)
        } catch {
            throw LatchError.invalidProof("sub is not an acceptable username: it \(error)")
        }
        return VerifiedRegistration(
            username: username, kind: .test, deviceKey: deviceKey,
            consumes: .jti(claims.jwtID, issuer: "test:\(verified.key.keyID)", until: claims.expiresAt.adding(seconds: assertions.clockSkew)))
    }
}

/// A test registration token, signed by the test registration key its `kid` names.
struct TestRegistrationToken: AssertionProfile {
    let store: any TestRegistrationKeyStore
    let settings: RegistrationSettings
    let skew: Int64
    let now: Int64

    var code: ErrorCode { .invalidProof }
    var noun: String { "answer" }

    func resolveKey(for token: ParsedJWS) async throws -> TestRegistrationKey {
        guard let keyID = token.keyID, let key = try await store.testRegistrationKey(id: keyID) else {
            throw LatchError.invalidProof("no test registration key matches the answer's kid")
        }
        return key
    }

    func publicKey(of key: TestRegistrationKey) -> PublicKey { key.key }

    func checkClaims(_ claims: [String: JSONValue], key: TestRegistrationKey) throws(LatchError) -> AssertionClaims {
        let checked = try AssertionClaims.check(
            claims, audience: settings.testAudience, now: now, skew: skew, maxLifetime: settings.testTokenMaxLifetime, code: .invalidProof)
        guard checked.issuer == settings.testIssuer else {
            throw LatchError.invalidProof("a test registration token's iss must be \(settings.testIssuer)")
        }
        guard checked.subject.utf8.count <= RegistrationService.maximumIdentifierLength else {
            throw LatchError.invalidProof("sub (the username) is longer than 128 bytes")
        }
        return checked
    }
}
