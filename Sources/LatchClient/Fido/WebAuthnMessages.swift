import Crypto
import Foundation
import LatchCBOR
import LatchJOSE
import LatchModel

/// The WebAuthn Level 3 messages a device's authenticator sends: client data, authenticator data, a `packed` self
/// attestation (the credential key signs its own registration) and an assertion, as RegistrationResponseJSON and
/// AuthenticationResponseJSON. Building one is two steps — the bytes to sign, then the JSON with the signature —
/// so any key (software, Secure Enclave, one derived from a PIN) can sign in between.
public enum WebAuthnMessages {
    /// A message waiting for its signature.
    public struct Unsigned: Sendable {
        public var clientDataJSON: [UInt8]
        public var authenticatorData: [UInt8]
        /// What the credential key signs: authenticatorData ‖ SHA-256(clientDataJSON).
        public var signedBytes: [UInt8] { authenticatorData + Array(SHA256.hash(data: clientDataJSON)) }
    }

    /// `clientDataJSON` (§5.8.1): type, challenge (base64url, as the server sent it), origin.
    static func clientData(_ type: String, challenge: String, origin: String) -> [UInt8] {
        let fields: JSONValue = .object(["type": .string(type), "challenge": .string(challenge), "origin": .string(origin), "crossOrigin": .bool(false)])
        return fields.serialized()
    }

    /// Authenticator data (§6.1): rpIdHash, flags UP|UV (+AT with attested credential data), a zero counter (these
    /// authenticators keep none).
    static func authenticatorData(rpID: String, attested: (aaguid: [UInt8], credentialID: [UInt8], publicKey: PublicKey)?) -> [UInt8] {
        var data = Array(SHA256.hash(data: Array(rpID.utf8)))
        data.append(attested == nil ? 0x05 : 0x45)
        data += [0, 0, 0, 0]
        if let attested {
            data += attested.aaguid + [UInt8(attested.credentialID.count >> 8), UInt8(attested.credentialID.count & 0xFF)] + attested.credentialID
            data += attested.publicKey.coseKey.encoded
        }
        return data
    }

    /// A registration's bytes to sign (`webauthn.create`).
    public static func registration(
        credentialID: [UInt8], aaguid: [UInt8], publicKey: PublicKey, rpID: String, origin: String, challenge: String
    ) -> Unsigned {
        Unsigned(
            clientDataJSON: clientData("webauthn.create", challenge: challenge, origin: origin),
            authenticatorData: authenticatorData(rpID: rpID, attested: (aaguid, credentialID, publicKey)))
    }

    /// The RegistrationResponseJSON: `packed` self attestation with `signature` (DER ECDSA by the credential key).
    public static func registrationJSON(_ unsigned: Unsigned, credentialID: [UInt8], signature: Data) -> JSONValue {
        let object = CBORValue.map([
            .init(.text("fmt"), .text("packed")),
            .init(.text("attStmt"), .map([.init(.text("alg"), .int(-7)), .init(.text("sig"), .bytes(Array(signature)))])),
            .init(.text("authData"), .bytes(unsigned.authenticatorData)),
        ])
        let id = Base64URL.encode(Data(credentialID))
        return .object([
            "id": .string(id), "rawId": .string(id), "type": "public-key", "clientExtensionResults": .object([:]),
            "authenticatorAttachment": "platform",
            "response": .object([
                "clientDataJSON": .string(Base64URL.encode(Data(unsigned.clientDataJSON))),
                "attestationObject": .string(Base64URL.encode(Data(object.encoded))), "transports": ["internal"],
            ]),
        ])
    }

    /// An assertion's bytes to sign (`webauthn.get`).
    public static func assertion(rpID: String, origin: String, challenge: String) -> Unsigned {
        Unsigned(clientDataJSON: clientData("webauthn.get", challenge: challenge, origin: origin), authenticatorData: authenticatorData(rpID: rpID, attested: nil))
    }

    /// The AuthenticationResponseJSON with `signature`.
    public static func assertionJSON(_ unsigned: Unsigned, credentialID: [UInt8], userHandle: String?, signature: Data) -> JSONValue {
        var response: [String: JSONValue] = [
            "clientDataJSON": .string(Base64URL.encode(Data(unsigned.clientDataJSON))),
            "authenticatorData": .string(Base64URL.encode(Data(unsigned.authenticatorData))), "signature": .string(Base64URL.encode(signature)),
        ]
        if let userHandle { response["userHandle"] = .string(userHandle) }
        let id = Base64URL.encode(Data(credentialID))
        return .object([
            "id": .string(id), "rawId": .string(id), "type": "public-key", "clientExtensionResults": .object([:]),
            "authenticatorAttachment": "platform", "response": .object(response),
        ])
    }

    // MARK: PIN binding

    /// A PIN authenticator's message with the device binding (docs/fido.md, "PIN binding"): a RegistrationResponseJSON
    /// gets `pinBinding {publicKey, signature}` — the binding key and its proof of possession — and an
    /// AuthenticationResponseJSON gets `pinBinding {signature}` over the ceremony `challenge`, the credential id and
    /// the assertion, so the server counts a failed PIN only when this device's binding key vouches for it.
    public static func withPinBinding(_ message: JSONValue, key: any JWSSigningKey, challenge: [UInt8], credentialID: [UInt8])
        throws(UserClientError) -> JSONValue
    {
        guard case .object(var fields) = message, case .object(let response)? = fields["response"] else {
            throw .invalidInput("not a WebAuthn response")
        }
        if response["attestationObject"] != nil {
            guard key.algorithm == .ES256, let point = PinBinding.publicKeyBytes(of: key.publicKey) else {
                throw .invalidInput("a PIN binding key must be a P-256 key")
            }
            let signature = try sign(PinBinding.registrationMessage(challenge: challenge, credentialID: credentialID, publicKey: Array(point)), key)
            fields["pinBinding"] = .object(["publicKey": .string(Base64URL.encode(point)), "signature": .string(Base64URL.encode(signature))])
        } else {
            guard let clientData = response["clientDataJSON"]?.stringValue.flatMap({ Base64URL.decode($0) }),
                let authenticatorData = response["authenticatorData"]?.stringValue.flatMap({ Base64URL.decode($0) })
            else { throw .invalidInput("not an AuthenticationResponseJSON") }
            let signature = try sign(
                PinBinding.assertionMessage(
                    challenge: challenge, credentialID: credentialID, authenticatorData: Array(authenticatorData), clientDataJSON: Array(clientData)),
                key)
            fields["pinBinding"] = .object(["signature": .string(Base64URL.encode(signature))])
        }
        return .object(fields)
    }

    static func sign(_ message: [UInt8], _ key: any JWSSigningKey) throws(UserClientError) -> Data {
        do {
            return try key.signature(for: message)
        } catch let error as UserClientError {
            throw error
        } catch {
            throw .platform(.secureEnclaveUnavailable, "the PIN binding key could not sign: \(error)", underlying: error)
        }
    }

    // MARK: With an authenticator's (asynchronous) signer

    static func registration(
        credentialID: [UInt8], aaguid: [UInt8], publicKey: PublicKey, rpID: String, origin: String, challenge: String,
        sign: ([UInt8]) async throws(UserClientError) -> Data
    ) async throws(UserClientError) -> JSONValue {
        let unsigned = registration(credentialID: credentialID, aaguid: aaguid, publicKey: publicKey, rpID: rpID, origin: origin, challenge: challenge)
        return registrationJSON(unsigned, credentialID: credentialID, signature: try await sign(unsigned.signedBytes))
    }

    static func assertion(
        credentialID: [UInt8], userHandle: String?, rpID: String, origin: String, challenge: String,
        sign: ([UInt8]) async throws(UserClientError) -> Data
    ) async throws(UserClientError) -> JSONValue {
        let unsigned = assertion(rpID: rpID, origin: origin, challenge: challenge)
        return assertionJSON(unsigned, credentialID: credentialID, userHandle: userHandle, signature: try await sign(unsigned.signedBytes))
    }
}
