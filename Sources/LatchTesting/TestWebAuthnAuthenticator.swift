import Crypto
import Foundation
import LatchAttestation
import LatchCBOR
import LatchJOSE
import LatchModel
import X509

/// A software FIDO authenticator for tests: a P-256 credential, `none` attestation, a counter, any AAGUID (the PIN
/// model's, say). ``signWith`` swaps the signing key — a wrong PIN, as the server sees it.
public final class TestWebAuthnAuthenticator: @unchecked Sendable {
    public let key = P256.Signing.PrivateKey()
    public let credentialID = Array(SHA256.hash(data: Array(UUID().uuidString.utf8)))
    public let rpID: String
    public let origin: String
    public let aaguid: [UInt8]
    public var counter: UInt32 = 0
    /// The key assertions are signed with (the credential's key unless swapped).
    public var signWith: P256.Signing.PrivateKey?
    /// A PIN authenticator's device binding key (docs/fido.md, "PIN binding"): when set, registrations carry
    /// `pinBinding {publicKey, signature}` and assertions `pinBinding {signature}`.
    public var bindingKey: P256.Signing.PrivateKey?
    /// The key assertions' binding signatures are made with (the binding key unless swapped: a forgery).
    public var bindWith: P256.Signing.PrivateKey?
    /// Whether assertions leave out `pinBinding` even with a binding key.
    public var omitBinding = false

    public init(rpID: String, origin: String, aaguid: [UInt8] = [UInt8](repeating: 0xAA, count: 16)) {
        self.rpID = rpID
        self.origin = origin
        self.aaguid = aaguid
    }

    public var credentialIDString: String { Base64URL.encode(Data(credentialID)) }

    func clientData(_ type: String, challenge: String) -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }

    /// A RegistrationResponseJSON for `challenge` (base64url), with `key` (default: the credential's) and `none`
    /// attestation.
    public func register(challenge: String, key: P256.Signing.PrivateKey? = nil) -> JSONValue {
        register(challenge: challenge, key: key, format: "none") { _, _ in .map([]) }
    }

    /// A RegistrationResponseJSON in attestation `format`, whose statement `statement` makes from the authenticator
    /// data and the client data hash.
    public func register(
        challenge: String, key: P256.Signing.PrivateKey? = nil, format: String, statement: (_ authData: [UInt8], _ clientDataHash: [UInt8]) -> CBORValue
    ) -> JSONValue {
        var authData = Array(SHA256.hash(data: Array(rpID.utf8)))
        authData.append(0x45)  // UP | UV | AT
        authData += [0, 0, 0, 0] + aaguid + [0, UInt8(credentialID.count)] + credentialID
        authData += PublicKey(p256: (key ?? self.key).publicKey).coseKey.encoded
        let clientData = clientData("webauthn.create", challenge: challenge)
        let object = CBORValue.map([
            .init(.text("fmt"), .text(format)), .init(.text("attStmt"), statement(authData, Array(SHA256.hash(data: clientData)))),
            .init(.text("authData"), .bytes(authData)),
        ])
        var fields: [String: JSONValue] = [
            "id": .string(credentialIDString), "rawId": .string(credentialIDString), "type": "public-key", "clientExtensionResults": .object([:]),
            "response": .object([
                "clientDataJSON": .string(Base64URL.encode(Data(clientData))),
                "attestationObject": .string(Base64URL.encode(Data(object.encoded))),
            ]),
        ]
        if let bindingKey {
            let point = bindingKey.publicKey.x963Representation
            let message = PinBinding.registrationMessage(
                challenge: Array(Base64URL.decode(challenge) ?? Data()), credentialID: credentialID, publicKey: Array(point))
            let signature = (try? bindingKey.signature(for: message).rawRepresentation) ?? Data()
            fields["pinBinding"] = .object(["publicKey": .string(Base64URL.encode(point)), "signature": .string(Base64URL.encode(signature))])
        }
        return .object(fields)
    }

    /// An AuthenticationResponseJSON for `challenge`, with the counter moved to `counter` (default: one more).
    public func assertion(challenge: String, userHandle: String?, counter next: UInt32? = nil) throws -> JSONValue {
        counter = next ?? counter + 1
        var authData = Array(SHA256.hash(data: Array(rpID.utf8)))
        authData.append(0x05)  // UP | UV
        authData += [UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF)]
        let data = clientData("webauthn.get", challenge: challenge)
        let signature = try (signWith ?? key).signature(for: authData + Array(SHA256.hash(data: data)))
        var response: [String: JSONValue] = [
            "clientDataJSON": .string(Base64URL.encode(Data(data))), "authenticatorData": .string(Base64URL.encode(Data(authData))),
            "signature": .string(Base64URL.encode(signature.derRepresentation)),
        ]
        if let userHandle { response["userHandle"] = .string(userHandle) }
        var fields: [String: JSONValue] = [
            "id": .string(credentialIDString), "rawId": .string(credentialIDString), "type": "public-key", "response": .object(response),
        ]
        if let binder = bindWith ?? bindingKey, !omitBinding {
            let message = PinBinding.assertionMessage(
                challenge: Array(Base64URL.decode(challenge) ?? Data()), credentialID: credentialID, authenticatorData: authData, clientDataJSON: data)
            fields["pinBinding"] = .object(["signature": .string(Base64URL.encode(try binder.signature(for: message).rawRepresentation))])
        }
        return .object(fields)
    }

    /// The assertion as the token endpoint's `credential` parameter (a JSON string).
    public func assert(challenge: String, userHandle: String?, counter next: UInt32? = nil) throws -> String {
        String(decoding: try assertion(challenge: challenge, userHandle: userHandle, counter: next).serialized(), as: UTF8.self)
    }
}

extension TestWebAuthnAuthenticator {
    /// A RegistrationResponseJSON with `android-key` attestation (WebAuthn §8.4): `authority` issues a Keystore chain
    /// for `certified` (default: the credential's key), which signs the statement, binding `attestationChallenge`
    /// (default: the client data hash, as the format requires).
    public func registerAndroidKey(
        challenge: String, authority: TestAttestationAuthority, now: Date, certified: P256.Signing.PrivateKey? = nil,
        attestationChallenge: [UInt8]? = nil
    ) -> JSONValue {
        let signer = certified ?? key
        return register(challenge: challenge, format: "android-key") { authData, clientDataHash in
            let chain = (try? authority.androidKeyChain(
                deviceKey: Certificate.PublicKey(signer.publicKey), challenge: attestationChallenge ?? clientDataHash, packageName: "com.example.app",
                signatureDigest: Array(repeating: 7, count: 32), now: now)) ?? []
            let signature = (try? signer.signature(for: authData + clientDataHash).derRepresentation) ?? Data()
            return .map([
                .init(.text("alg"), .int(-7)), .init(.text("sig"), .bytes(Array(signature))), .init(.text("x5c"), .array(chain.map { .bytes($0) })),
            ])
        }
    }
}
