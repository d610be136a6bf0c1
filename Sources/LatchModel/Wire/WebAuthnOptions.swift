import Foundation

// The options of WebAuthn ceremonies in their JSON form (WebAuthn Level 3 §5.1.8/§5.1.9:
// PublicKeyCredentialCreationOptionsJSON and PublicKeyCredentialRequestOptionsJSON, built from §5.4 and §5.5): the
// server encodes them, the SDK decodes them. Bytes are unpadded base64url strings (``Base64URLBytes``); members the
// specification makes optional are optional here and left out when nil; members a newer server adds are ignored.

/// Bytes that travel as an unpadded base64url string (WebAuthn's `Base64URLString`). Decoding accepts only the
/// canonical encoding (``Base64URL/decode(_:)``).
public struct Base64URLBytes: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The bytes.
    public var data: Data

    public init(_ bytes: some Sequence<UInt8>) { data = Data(bytes) }

    /// The bytes of `text`; nil when it is not canonical unpadded base64url.
    public init?(base64URL text: String) {
        guard let data = Base64URL.decode(text) else { return nil }
        self.data = data
    }

    /// The bytes as unpadded base64url.
    public var base64URL: String { Base64URL.encode(data) }

    public var description: String { base64URL }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let data = Base64URL.decode(try container.decode(String.self)) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not canonical unpadded base64url")
        }
        self.data = data
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(base64URL)
    }
}

/// A WebAuthn enumeration, which travels as a string (WebAuthn §2.1.1: a value this version does not know is kept,
/// not refused — the specification grows them). Each type names the values WebAuthn Level 3 defines.
public protocol WebAuthnEnumeration: RawRepresentable<String>, Codable, Sendable, Hashable, ExpressibleByStringLiteral {
    init(rawValue: String)
}

extension WebAuthnEnumeration {
    public init(stringLiteral value: String) { self.init(rawValue: value) }
}

/// `PublicKeyCredentialType` (§5.8.2).
public struct PublicKeyCredentialType: WebAuthnEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let publicKey: Self = "public-key"
}

/// `AuthenticatorTransport` (§5.8.4).
public struct AuthenticatorTransport: WebAuthnEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let usb: Self = "usb"
    public static let nfc: Self = "nfc"
    public static let ble: Self = "ble"
    public static let smartCard: Self = "smart-card"
    public static let hybrid: Self = "hybrid"
    public static let `internal`: Self = "internal"
}

/// `UserVerificationRequirement` (§5.8.6); WebAuthn's default is `preferred`.
public struct UserVerificationRequirement: WebAuthnEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let required: Self = "required"
    public static let preferred: Self = "preferred"
    public static let discouraged: Self = "discouraged"
}

/// `ResidentKeyRequirement` (§5.4.6).
public struct ResidentKeyRequirement: WebAuthnEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let discouraged: Self = "discouraged"
    public static let preferred: Self = "preferred"
    public static let required: Self = "required"
}

/// `AuthenticatorAttachment` (§5.4.5).
public struct AuthenticatorAttachment: WebAuthnEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let platform: Self = "platform"
    public static let crossPlatform: Self = "cross-platform"
}

/// `AttestationConveyancePreference` (§5.4.7); WebAuthn's default is `none`.
public struct AttestationConveyancePreference: WebAuthnEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let none: Self = "none"
    public static let indirect: Self = "indirect"
    public static let direct: Self = "direct"
    public static let enterprise: Self = "enterprise"
}

/// `PublicKeyCredentialHint` (§5.8.7).
public struct PublicKeyCredentialHint: WebAuthnEnumeration {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let securityKey: Self = "security-key"
    public static let clientDevice: Self = "client-device"
    public static let hybrid: Self = "hybrid"
}

/// `PublicKeyCredentialRpEntity` (§5.4.2): the relying party.
public struct PublicKeyCredentialRpEntity: Codable, Sendable, Hashable {
    /// The relying party id, a domain; absent: the caller's origin's effective domain.
    public var id: String?
    public var name: String

    public init(id: String?, name: String) {
        self.id = id
        self.name = name
    }
}

/// `PublicKeyCredentialUserEntityJSON` (§5.4.3): the account a credential is made for.
public struct PublicKeyCredentialUserEntityJSON: Codable, Sendable, Hashable {
    /// The user handle (at most 64 bytes).
    public var id: Base64URLBytes
    public var name: String
    public var displayName: String

    public init(id: Base64URLBytes, name: String, displayName: String) {
        self.id = id
        self.name = name
        self.displayName = displayName
    }
}

/// `PublicKeyCredentialParameters` (§5.3): a credential type and a COSE algorithm the relying party accepts.
public struct PublicKeyCredentialParameters: Codable, Sendable, Hashable {
    public var type: PublicKeyCredentialType
    /// A `COSEAlgorithmIdentifier` (ES256 is -7).
    public var alg: Int64

    public init(type: PublicKeyCredentialType = .publicKey, alg: Int64) {
        self.type = type
        self.alg = alg
    }
}

/// `PublicKeyCredentialDescriptorJSON` (§5.8.3): a credential, to exclude or to allow.
public struct PublicKeyCredentialDescriptorJSON: Codable, Sendable, Hashable {
    public var type: PublicKeyCredentialType
    /// The credential id.
    public var id: Base64URLBytes
    public var transports: [AuthenticatorTransport]?

    public init(type: PublicKeyCredentialType = .publicKey, id: Base64URLBytes, transports: [AuthenticatorTransport]? = nil) {
        self.type = type
        self.id = id
        self.transports = transports
    }
}

/// `AuthenticatorSelectionCriteria` (§5.4.4).
public struct AuthenticatorSelectionCriteria: Codable, Sendable, Hashable {
    public var authenticatorAttachment: AuthenticatorAttachment?
    public var residentKey: ResidentKeyRequirement?
    /// Level 1's form of `residentKey`: true exactly when it is `required`.
    public var requireResidentKey: Bool?
    public var userVerification: UserVerificationRequirement?

    public init(
        authenticatorAttachment: AuthenticatorAttachment? = nil, residentKey: ResidentKeyRequirement? = nil, requireResidentKey: Bool? = nil,
        userVerification: UserVerificationRequirement? = nil
    ) {
        self.authenticatorAttachment = authenticatorAttachment
        self.residentKey = residentKey
        self.requireResidentKey = requireResidentKey
        self.userVerification = userVerification
    }
}

/// `PublicKeyCredentialCreationOptionsJSON` (§5.4, §5.1.8): what `navigator.credentials.create()` takes to register
/// a credential.
public struct PublicKeyCredentialCreationOptionsJSON: Codable, Sendable, Hashable {
    public var rp: PublicKeyCredentialRpEntity
    public var user: PublicKeyCredentialUserEntityJSON
    public var challenge: Base64URLBytes
    /// The credential types and algorithms accepted, most preferred first.
    public var pubKeyCredParams: [PublicKeyCredentialParameters]
    /// Milliseconds.
    public var timeout: UInt32?
    public var excludeCredentials: [PublicKeyCredentialDescriptorJSON]?
    public var authenticatorSelection: AuthenticatorSelectionCriteria?
    public var hints: [PublicKeyCredentialHint]?
    public var attestation: AttestationConveyancePreference?
    /// Attestation statement format identifiers, most preferred first.
    public var attestationFormats: [String]?
    /// `AuthenticationExtensionsClientInputsJSON`: extension identifiers and their inputs.
    public var extensions: [String: JSONValue]?

    public init(
        rp: PublicKeyCredentialRpEntity, user: PublicKeyCredentialUserEntityJSON, challenge: Base64URLBytes,
        pubKeyCredParams: [PublicKeyCredentialParameters], timeout: UInt32? = nil, excludeCredentials: [PublicKeyCredentialDescriptorJSON]? = nil,
        authenticatorSelection: AuthenticatorSelectionCriteria? = nil, hints: [PublicKeyCredentialHint]? = nil,
        attestation: AttestationConveyancePreference? = nil, attestationFormats: [String]? = nil, extensions: [String: JSONValue]? = nil
    ) {
        self.rp = rp
        self.user = user
        self.challenge = challenge
        self.pubKeyCredParams = pubKeyCredParams
        self.timeout = timeout
        self.excludeCredentials = excludeCredentials
        self.authenticatorSelection = authenticatorSelection
        self.hints = hints
        self.attestation = attestation
        self.attestationFormats = attestationFormats
        self.extensions = extensions
    }
}

/// `PublicKeyCredentialRequestOptionsJSON` (§5.5, §5.1.9): what `navigator.credentials.get()` takes to sign in.
public struct PublicKeyCredentialRequestOptionsJSON: Codable, Sendable, Hashable {
    public var challenge: Base64URLBytes
    /// Milliseconds.
    public var timeout: UInt32?
    /// The relying party id; absent: the caller's origin's effective domain.
    public var rpId: String?
    /// The credentials accepted; empty or absent: a discoverable credential the user picks.
    public var allowCredentials: [PublicKeyCredentialDescriptorJSON]?
    public var userVerification: UserVerificationRequirement?
    public var hints: [PublicKeyCredentialHint]?
    /// `AuthenticationExtensionsClientInputsJSON`: extension identifiers and their inputs.
    public var extensions: [String: JSONValue]?

    public init(
        challenge: Base64URLBytes, timeout: UInt32? = nil, rpId: String? = nil, allowCredentials: [PublicKeyCredentialDescriptorJSON]? = nil,
        userVerification: UserVerificationRequirement? = nil, hints: [PublicKeyCredentialHint]? = nil, extensions: [String: JSONValue]? = nil
    ) {
        self.challenge = challenge
        self.timeout = timeout
        self.rpId = rpId
        self.allowCredentials = allowCredentials
        self.userVerification = userVerification
        self.hints = hints
        self.extensions = extensions
    }
}
