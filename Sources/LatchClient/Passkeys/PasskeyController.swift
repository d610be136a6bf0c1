import Foundation
import LatchCBOR
import LatchJOSE
import LatchModel

/// The platform call behind the SDK's passkey sign-up, registration and sign-in: it shows the system's passkey sheet
/// and returns what the platform made or signed, as bytes.
///
/// The SDK reads the server's options into a ``PasskeyRegistrationRequest`` or ``PasskeyAssertionRequest`` and turns
/// the answer into the WebAuthn Level 3 JSON the server verifies (``PasskeyMessages``); a controller only talks to
/// the platform. ``SystemPasskeyController`` is the one for Apple platforms (iOS 16, macOS 13 and later); tests pass
/// their own.
///
/// Errors a controller throws (``SystemPasskeyController`` maps the system's errors to these):
/// - ``UserClientError/cancelled``: the user closed the sheet, or declined (also what iOS answers when this device
///   has no passkey for the relying party).
/// - ``UserClientError/Code/passkeyFailed``: the platform refused the request — typically the app's associated
///   domains do not list `webcredentials:<relying party id>`, or the domain's `apple-app-site-association` does not
///   name the app — or its answer was unusable.
public protocol PasskeyController: Sendable {
    /// Shows the OS sheet to create a passkey; returns what ASAuthorizationPlatformPublicKeyCredentialRegistration gives.
    func createPasskey(_ request: PasskeyRegistrationRequest) async throws(UserClientError) -> PasskeyRegistration
    /// Shows the OS sheet to sign in with a passkey (allowedCredentials empty = discoverable).
    func assertPasskey(_ request: PasskeyAssertionRequest) async throws(UserClientError) -> PasskeyAssertion
}

/// Whether the platform should verify the user (biometrics, device passcode) — WebAuthn's `userVerification`.
public enum PasskeyUserVerification: String, Sendable, Hashable, CaseIterable {
    /// The ceremony fails unless the user is verified.
    case required
    /// Verify the user when the device can (the WebAuthn default).
    case preferred
    /// Prefer not to verify the user.
    case discouraged
}

/// The attestation a relying party asks for at registration — WebAuthn's `attestation` conveyance preference.
public enum PasskeyAttestationPreference: String, Sendable, Hashable, CaseIterable {
    /// No attestation (what synced passkeys give anyway).
    case none
    /// An attestation the platform may anonymize.
    case indirect
    /// The authenticator's own attestation.
    case direct
    /// An attestation that may identify the device (managed devices only).
    case enterprise
}

/// What the platform needs to create a passkey: read from the server's creation options by
/// ``PasskeyMessages/registrationRequest(from:displayName:)``.
public struct PasskeyRegistrationRequest: Sendable, Hashable {
    /// The relying party id (a domain the app's associated domains name under `webcredentials`).
    public var relyingPartyID: String
    /// The server's challenge, as bytes.
    public var challenge: Data
    /// The WebAuthn user handle: the server's user id, as bytes (at most 64).
    public var userID: Data
    /// The account name the sheet shows and the passkey is saved under.
    public var userName: String
    /// A friendlier name for the account, when the server or the app gave one.
    public var displayName: String?
    /// Whether the platform should verify the user.
    public var userVerification: PasskeyUserVerification
    /// The attestation the server asks for.
    public var attestation: PasskeyAttestationPreference
    /// Credentials the user already has at this relying party (the server's `excludeCredentials`). The iOS 16
    /// system sheet cannot be told about them (Apple added that in iOS 17.4); the server refuses a duplicate anyway.
    public var excludedCredentialIDs: [Data]

    /// A request from its parts.
    public init(
        relyingPartyID: String, challenge: Data, userID: Data, userName: String, displayName: String? = nil,
        userVerification: PasskeyUserVerification = .preferred, attestation: PasskeyAttestationPreference = .none, excludedCredentialIDs: [Data] = []
    ) {
        self.relyingPartyID = relyingPartyID
        self.challenge = challenge
        self.userID = userID
        self.userName = userName
        self.displayName = displayName
        self.userVerification = userVerification
        self.attestation = attestation
        self.excludedCredentialIDs = excludedCredentialIDs
    }
}

/// What the platform needs to sign in with a passkey: read from the server's request options by
/// ``PasskeyMessages/assertionRequest(from:)``.
public struct PasskeyAssertionRequest: Sendable, Hashable {
    /// The relying party id.
    public var relyingPartyID: String
    /// The server's challenge, as bytes.
    public var challenge: Data
    /// Whether the platform should verify the user.
    public var userVerification: PasskeyUserVerification
    /// The credentials the server accepts (the user's, for a sign-in by username); empty: any passkey of this
    /// relying party the user picks (a discoverable sign-in).
    public var allowedCredentialIDs: [Data]

    /// A request from its parts.
    public init(relyingPartyID: String, challenge: Data, userVerification: PasskeyUserVerification = .preferred, allowedCredentialIDs: [Data] = []) {
        self.relyingPartyID = relyingPartyID
        self.challenge = challenge
        self.userVerification = userVerification
        self.allowedCredentialIDs = allowedCredentialIDs
    }
}

/// A new passkey, as the platform returns it (ASAuthorizationPlatformPublicKeyCredentialRegistration's fields).
public struct PasskeyRegistration: Sendable, Hashable {
    /// The credential id.
    public var credentialID: Data
    /// The client data the platform built and the authenticator signed over (`webauthn.create`).
    public var rawClientDataJSON: Data
    /// The CBOR attestation object (`fmt`, `attStmt`, `authData`); nil when the platform gave none, which the server
    /// cannot register.
    public var rawAttestationObject: Data?

    /// A registration from the platform's bytes.
    public init(credentialID: Data, rawClientDataJSON: Data, rawAttestationObject: Data?) {
        self.credentialID = credentialID
        self.rawClientDataJSON = rawClientDataJSON
        self.rawAttestationObject = rawAttestationObject
    }
}

/// A passkey's signature for a sign-in, as the platform returns it (ASAuthorizationPlatformPublicKeyCredentialAssertion's
/// fields).
public struct PasskeyAssertion: Sendable, Hashable {
    /// The credential id of the passkey used.
    public var credentialID: Data
    /// The client data the platform built (`webauthn.get`).
    public var rawClientDataJSON: Data
    /// The authenticator data the signature covers.
    public var rawAuthenticatorData: Data
    /// The signature over authenticatorData ‖ SHA-256(clientDataJSON) (DER ECDSA for a passkey).
    public var signature: Data
    /// The user handle stored with the passkey (the server's user id); a discoverable sign-in needs it. Nil or empty:
    /// none.
    public var userID: Data?

    /// An assertion from the platform's bytes.
    public init(credentialID: Data, rawClientDataJSON: Data, rawAuthenticatorData: Data, signature: Data, userID: Data?) {
        self.credentialID = credentialID
        self.rawClientDataJSON = rawClientDataJSON
        self.rawAuthenticatorData = rawAuthenticatorData
        self.signature = signature
        self.userID = userID
    }
}

/// The pure half of passkeys: the server's options (`{ceremonyId, publicKey}`, WebAuthn Level 3 JSON with base64url
/// bytes) into platform requests, and the platform's answers into the RegistrationResponseJSON and
/// AuthenticationResponseJSON the server's finish endpoints take. What the platform returns is bounded here, before
/// anything is sent.
public enum PasskeyMessages {
    /// The largest credential id (WebAuthn §5.1: 1023 bytes).
    public static let maximumCredentialIDLength = 1023
    /// The largest client data (what the server accepts).
    public static let maximumClientDataLength = 8 * 1024
    /// The largest attestation object (what the server accepts).
    public static let maximumAttestationObjectLength = 64 * 1024
    /// The largest authenticator data of an assertion.
    public static let maximumAuthenticatorDataLength = 8 * 1024
    /// The largest signature (an RSA-4096 signature is 512 bytes, a P-256 DER one at most 72).
    public static let maximumSignatureLength = 1024
    /// The largest user handle (WebAuthn §5.4.3: 64 bytes).
    public static let maximumUserHandleLength = 64
    /// The challenge lengths accepted from the server (WebAuthn §13.4.3 asks for at least 16 random bytes).
    public static let challengeLengths = 16...1024

    /// COSE ES256: the algorithm platform passkeys use, which the server must offer.
    static let es256: Int64 = -7

    // MARK: Platform answers → WebAuthn JSON

    /// The RegistrationResponseJSON of a new passkey, for `POST /v1/fido/registration` or a `WEBAUTHN` sign-up.
    /// Checks sizes and shape only — the server verifies the challenge, origin, relying party and attestation.
    /// - Throws: ``UserClientError/invalidInput(_:)`` when the platform's answer is oversized, has no attestation
    ///   object, or its attestation object is not one CBOR map naming this credential.
    public static func registrationJSON(_ registration: PasskeyRegistration) throws(UserClientError) -> JSONValue {
        try checkCredentialID(registration.credentialID)
        try checkClientData(registration.rawClientDataJSON)
        guard let attestationObject = registration.rawAttestationObject, !attestationObject.isEmpty else {
            throw .invalidInput("the platform returned no attestation object")
        }
        guard attestationObject.count <= maximumAttestationObjectLength else {
            throw .invalidInput("the platform's attestation object is \(attestationObject.count) bytes, more than \(maximumAttestationObjectLength)")
        }
        let authenticatorData = try attestedAuthenticatorData(attestationObject, credentialID: registration.credentialID)
        let id = Base64URL.encode(registration.credentialID)
        return .object([
            "id": .string(id), "rawId": .string(id), "type": "public-key", "clientExtensionResults": .object([:]),
            "authenticatorAttachment": "platform",
            "response": .object([
                "clientDataJSON": .string(Base64URL.encode(registration.rawClientDataJSON)),
                "attestationObject": .string(Base64URL.encode(attestationObject)),
                "authenticatorData": .string(Base64URL.encode(authenticatorData)),
                // A platform passkey: on this device, and over hybrid (caBLE) from the user's other devices.
                "transports": ["hybrid", "internal"],
            ]),
        ])
    }

    /// The AuthenticationResponseJSON of a passkey sign-in, for the token endpoint's WebAuthn grant. Checks sizes
    /// only — the server verifies the challenge, origin, relying party, signature and user handle.
    /// - Throws: ``UserClientError/invalidInput(_:)`` when a part is empty or oversized.
    public static func assertionJSON(_ assertion: PasskeyAssertion) throws(UserClientError) -> JSONValue {
        try checkCredentialID(assertion.credentialID)
        try checkClientData(assertion.rawClientDataJSON)
        // rpIdHash (32), flags (1), counter (4).
        guard (37...maximumAuthenticatorDataLength).contains(assertion.rawAuthenticatorData.count) else {
            throw .invalidInput("the platform's authenticator data is \(assertion.rawAuthenticatorData.count) bytes (37–\(maximumAuthenticatorDataLength))")
        }
        guard (1...maximumSignatureLength).contains(assertion.signature.count) else {
            throw .invalidInput("the platform's signature is \(assertion.signature.count) bytes (1–\(maximumSignatureLength))")
        }
        var response: [String: JSONValue] = [
            "clientDataJSON": .string(Base64URL.encode(assertion.rawClientDataJSON)),
            "authenticatorData": .string(Base64URL.encode(assertion.rawAuthenticatorData)),
            "signature": .string(Base64URL.encode(assertion.signature)),
        ]
        if let userID = assertion.userID, !userID.isEmpty {
            guard userID.count <= maximumUserHandleLength else {
                throw .invalidInput("the platform's user handle is \(userID.count) bytes, more than \(maximumUserHandleLength)")
            }
            response["userHandle"] = .string(Base64URL.encode(userID))
        }
        let id = Base64URL.encode(assertion.credentialID)
        return .object([
            "id": .string(id), "rawId": .string(id), "type": "public-key", "clientExtensionResults": .object([:]),
            "authenticatorAttachment": "platform", "response": .object(response),
        ])
    }

    // MARK: Parts

    static func checkCredentialID(_ id: Data) throws(UserClientError) {
        guard (1...maximumCredentialIDLength).contains(id.count) else {
            throw .invalidInput("the platform's credential id is \(id.count) bytes (1–\(maximumCredentialIDLength))")
        }
    }

    static func checkClientData(_ clientData: Data) throws(UserClientError) {
        guard (1...maximumClientDataLength).contains(clientData.count) else {
            throw .invalidInput("the platform's client data is \(clientData.count) bytes (1–\(maximumClientDataLength))")
        }
    }

    /// The authenticator data of an attestation object: one CBOR map with `fmt`, `attStmt` and `authData`, whose
    /// attested credential data names `credentialID`.
    static func attestedAuthenticatorData(_ attestationObject: Data, credentialID: Data) throws(UserClientError) -> Data {
        let object: CBORValue
        do {
            object = try CBORDecoder.decode(Array(attestationObject))
        } catch {
            throw .invalidInput("the platform's attestation object is not CBOR: \(error)")
        }
        guard object.mapValue != nil, object["fmt"]?.textValue != nil, object["attStmt"]?.mapValue != nil,
            let authData = object["authData"]?.bytesValue
        else { throw .invalidInput("the platform's attestation object is not a map of fmt, attStmt and authData") }
        // rpIdHash (32) | flags (1) | counter (4) | AAGUID (16) | credential id length (2) | credential id | key …
        let attested: UInt8 = 0x40
        guard authData.count >= 55, authData[32] & attested != 0 else {
            throw .invalidInput("the platform's authenticator data has no attested credential")
        }
        let length = Int(authData[53]) << 8 | Int(authData[54])
        guard authData.count >= 55 + length, Data(authData[55..<(55 + length)]) == credentialID else {
            throw .invalidInput("the platform's attestation names another credential than the one it returned")
        }
        return Data(authData)
    }
}
