import Foundation
import LatchModel

extension PasskeyMessages {
    // MARK: Options → platform requests

    /// Reads the server's creation options (`POST /v1/fido/sign-up/options` or `/v1/fido/registration/options`).
    /// `displayName`, when given, replaces the server's `user.displayName`.
    /// - Throws: ``UserClientError/invalidInput(_:)`` for malformed options (naming the member at fault);
    ///   ``UserClientError/invalidConfiguration(_:)`` when the server does not offer ES256, the only algorithm
    ///   platform passkeys have.
    public static func registrationRequest(from options: JSONValue, displayName: String? = nil) throws(UserClientError)
        -> (ceremonyID: String, request: PasskeyRegistrationRequest)
    {
        try registrationRequest(from: decode(FidoCreationOptions.self, options, "registration"), displayName: displayName)
    }

    /// Reads creation options already decoded (see the `JSONValue` form).
    public static func registrationRequest(from options: FidoCreationOptions, displayName: String? = nil) throws(UserClientError)
        -> (ceremonyID: String, request: PasskeyRegistrationRequest)
    {
        let ceremonyID = try ceremony(options.ceremonyId, "registration")
        let publicKey = options.publicKey
        let challenge = try challenge(publicKey.challenge, "registration")
        guard let rpID = publicKey.rp.id, isRelyingPartyID(rpID) else { throw .invalidInput("registration options have no valid rp.id") }
        let user = publicKey.user
        guard (1...maximumUserHandleLength).contains(user.id.data.count) else {
            throw .invalidInput("registration options need a user.id of 1–\(maximumUserHandleLength) bytes")
        }
        guard !user.name.isEmpty, user.name.utf8.count <= 1024 else { throw .invalidInput("registration options have no user.name") }
        guard publicKey.pubKeyCredParams.contains(where: { $0.type == .publicKey && $0.alg == es256 }) else {
            throw .invalidConfiguration("the server does not offer ES256 (COSE -7), the algorithm of platform passkeys")
        }
        let excluded = try credentialIDs(publicKey.excludeCredentials, "excludeCredentials")
        let request = PasskeyRegistrationRequest(
            relyingPartyID: rpID, challenge: challenge, userID: user.id.data, userName: user.name,
            displayName: displayName ?? (user.displayName.isEmpty ? nil : user.displayName),
            userVerification: userVerification(publicKey.authenticatorSelection?.userVerification),
            attestation: publicKey.attestation.flatMap { PasskeyAttestationPreference(rawValue: $0.rawValue) } ?? .none,
            excludedCredentialIDs: excluded)
        return (ceremonyID, request)
    }

    /// Reads the server's request options (`POST /v1/fido/authentication/options`): an empty `allowCredentials`
    /// makes a discoverable sign-in.
    /// - Throws: ``UserClientError/invalidInput(_:)`` for malformed options (naming the member at fault).
    public static func assertionRequest(from options: JSONValue) throws(UserClientError) -> (ceremonyID: String, request: PasskeyAssertionRequest) {
        try assertionRequest(from: decode(FidoRequestOptions.self, options, "authentication"))
    }

    /// Reads request options already decoded (see the `JSONValue` form).
    public static func assertionRequest(from options: FidoRequestOptions) throws(UserClientError) -> (ceremonyID: String, request: PasskeyAssertionRequest) {
        let ceremonyID = try ceremony(options.ceremonyId, "authentication")
        let publicKey = options.publicKey
        let challenge = try challenge(publicKey.challenge, "authentication")
        guard let rpID = publicKey.rpId, isRelyingPartyID(rpID) else { throw .invalidInput("authentication options have no valid rpId") }
        let allowed = try credentialIDs(publicKey.allowCredentials, "allowCredentials")
        let request = PasskeyAssertionRequest(
            relyingPartyID: rpID, challenge: challenge, userVerification: userVerification(publicKey.userVerification), allowedCredentialIDs: allowed)
        return (ceremonyID, request)
    }

    // MARK: Parts

    /// The server's options (`kind`: `registration`, `authentication`, …) decoded as `type`; what does not decode is
    /// refused with the member at fault named (`authentication options have no publicKey.challenge`). Members a
    /// newer server adds are ignored.
    static func decode<Options: Decodable>(_ type: Options.Type, _ options: JSONValue, _ kind: String) throws(UserClientError) -> Options {
        guard options.objectValue != nil else { throw .invalidInput("\(kind) options are not a JSON object") }
        do {
            return try options.decoded(as: type)
        } catch let error as DecodingError {
            throw .invalidInput("\(kind) options \(problem(error))")
        } catch {
            throw .invalidInput("\(kind) options are malformed: \(error)")
        }
    }

    /// What a decoding error says, with the member's path (`publicKey.excludeCredentials[0].id`).
    static func problem(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            var text = ""
            for key in keys {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += (text.isEmpty ? "" : ".") + key.stringValue
                }
            }
            return text.isEmpty ? "(the options)" : text
        }
        switch error {
        case .keyNotFound(let key, let context): return "have no \(path(context.codingPath + [key]))"
        case .valueNotFound(_, let context): return "have a null \(path(context.codingPath))"
        case .typeMismatch(let type, let context): return "have a \(path(context.codingPath)) that is not of type \(type)"
        case .dataCorrupted(let context): return "have a \(path(context.codingPath)) that is \(context.debugDescription)"
        @unknown default: return "are malformed"
        }
    }

    static func ceremony(_ id: String, _ kind: String) throws(UserClientError) -> String {
        guard !id.isEmpty, id.utf8.count <= 4096 else { throw .invalidInput("\(kind) options have no ceremonyId") }
        return id
    }

    static func challenge(_ value: Base64URLBytes, _ kind: String) throws(UserClientError) -> Data {
        guard challengeLengths.contains(value.data.count) else {
            throw .invalidInput("\(kind) options need a base64url challenge of \(challengeLengths.lowerBound)–\(challengeLengths.upperBound) bytes")
        }
        return value.data
    }

    /// A relying party id as a domain: non-empty, at most 253 bytes, no scheme, port, path or spaces.
    static func isRelyingPartyID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 253 && !id.utf8.contains { $0 <= 0x20 || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: ":") || $0 >= 0x7F }
    }

    /// WebAuthn's user verification requirement for the platform; absent or unknown: `preferred`, WebAuthn's default.
    static func userVerification(_ value: UserVerificationRequirement?) -> PasskeyUserVerification {
        value.flatMap { PasskeyUserVerification(rawValue: $0.rawValue) } ?? .preferred
    }

    /// The ids of a list of credential descriptors; other types than `public-key` are skipped.
    static func credentialIDs(_ list: [PublicKeyCredentialDescriptorJSON]?, _ member: String) throws(UserClientError) -> [Data] {
        guard let list else { return [] }
        guard list.count <= 256 else { throw .invalidInput("\(member) must be a list of at most 256 credentials") }
        var ids: [Data] = []
        for descriptor in list where descriptor.type == .publicKey {
            guard (1...maximumCredentialIDLength).contains(descriptor.id.data.count) else {
                throw .invalidInput("\(member) holds a credential id that is not 1–\(maximumCredentialIDLength) base64url bytes")
            }
            ids.append(descriptor.id.data)
        }
        return ids
    }
}
