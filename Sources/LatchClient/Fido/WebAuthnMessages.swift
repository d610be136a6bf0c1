import Crypto
import Foundation
import LatchCBOR
import LatchJOSE
import LatchModel

/// The WebAuthn Level 3 messages a device's authenticator sends: client data, authenticator data, a `packed` self
/// attestation (the credential key signs its own registration) and an assertion, as RegistrationResponseJSON and
/// AuthenticationResponseJSON.
enum WebAuthnMessages {
    /// `clientDataJSON` (§5.8.1): type, challenge (base64url, as the server sent it), origin.
    static func clientData(_ type: String, challenge: String, origin: String) -> [UInt8] {
        let fields: JSONValue = .object(["type": .string(type), "challenge": .string(challenge), "origin": .string(origin), "crossOrigin": .bool(false)])
        return fields.serialized()
    }

    /// Authenticator data (§6.1): rpIdHash, flags UP|UV (+AT with attested credential data), a zero counter (these
    /// authenticators keep none).
    static func authenticatorData(rpID: String, attested: (aaguid: [UInt8], credentialID: [UInt8], publicKey: P256.Signing.PublicKey)?) -> [UInt8] {
        var data = Array(SHA256.hash(data: Array(rpID.utf8)))
        data.append(attested == nil ? 0x05 : 0x45)
        data += [0, 0, 0, 0]
        if let attested {
            data += attested.aaguid + [UInt8(attested.credentialID.count >> 8), UInt8(attested.credentialID.count & 0xFF)] + attested.credentialID
            data += PublicKey(p256: attested.publicKey).coseKey.encoded
        }
        return data
    }

    /// A RegistrationResponseJSON with a `packed` self attestation signed through `sign`.
    static func registration(
        credentialID: [UInt8], aaguid: [UInt8], publicKey: P256.Signing.PublicKey, rpID: String, origin: String, challenge: String,
        sign: ([UInt8]) async throws(UserClientError) -> Data
    ) async throws(UserClientError) -> JSONValue {
        let clientData = clientData("webauthn.create", challenge: challenge, origin: origin)
        let authData = authenticatorData(rpID: rpID, attested: (aaguid, credentialID, publicKey))
        let signature = try await sign(authData + Array(SHA256.hash(data: clientData)))
        let object = CBORValue.map([
            .init(.text("fmt"), .text("packed")),
            .init(.text("attStmt"), .map([.init(.text("alg"), .int(-7)), .init(.text("sig"), .bytes(Array(signature)))])),
            .init(.text("authData"), .bytes(authData)),
        ])
        let id = Base64URL.encode(Data(credentialID))
        return .object([
            "id": .string(id), "rawId": .string(id), "type": "public-key", "clientExtensionResults": .object([:]),
            "authenticatorAttachment": "platform",
            "response": .object([
                "clientDataJSON": .string(Base64URL.encode(Data(clientData))),
                "attestationObject": .string(Base64URL.encode(Data(object.encoded))), "transports": ["internal"],
            ]),
        ])
    }

    /// An AuthenticationResponseJSON signed through `sign`.
    static func assertion(
        credentialID: [UInt8], userHandle: String?, rpID: String, origin: String, challenge: String,
        sign: ([UInt8]) async throws(UserClientError) -> Data
    ) async throws(UserClientError) -> JSONValue {
        let clientData = clientData("webauthn.get", challenge: challenge, origin: origin)
        let authData = authenticatorData(rpID: rpID, attested: nil)
        let signature = try await sign(authData + Array(SHA256.hash(data: clientData)))
        var response: [String: JSONValue] = [
            "clientDataJSON": .string(Base64URL.encode(Data(clientData))), "authenticatorData": .string(Base64URL.encode(Data(authData))),
            "signature": .string(Base64URL.encode(signature)),
        ]
        if let userHandle { response["userHandle"] = .string(userHandle) }
        let id = Base64URL.encode(Data(credentialID))
        return .object([
            "id": .string(id), "rawId": .string(id), "type": "public-key", "clientExtensionResults": .object([:]),
            "authenticatorAttachment": "platform", "response": .object(response),
        ])
    }
}
