import Crypto
import Foundation
import LatchAttestation
import LatchJOSE
import LatchModel

/// Seals the short-lived values the browser carries between Latch and an upstream identity provider — the pending
/// authorization request in the upstream's `state`, the authorization code, the sign-out state — with AES-256-GCM
/// under a key derived from the deployment's key-encryption key (HKDF-SHA256, its own `info`), so every replica can
/// open what another sealed and nobody else can read or forge them. The purpose is authenticated data: a value sealed
/// as one kind cannot be opened as another.
public struct FederationSealer: Sendable {
    private let key: SymmetricKey

    public init(keyEncryptionKey: some ContiguousBytes) {
        key = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: keyEncryptionKey), info: Data("latch federation values v1".utf8), outputByteCount: 32)
    }

    /// What a sealed value is.
    public enum Purpose: String, Sendable {
        case upstreamState = "upstream-state"
        case authorizationCode = "authorization-code"
        case pendingRequest = "pending-request"
        case signOutState = "sign-out-state"
        /// An admin passkey enrollment link's ticket.
        case adminEnrollment = "admin-enrollment"
        /// A console session cookie.
        case consoleSession = "console-session"
    }

    /// HMAC-SHA256 of `text` under the federation key, base64url (CSRF tokens).
    public func mac(_ text: String) -> String {
        Base64URL.encode(Array(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)))
    }

    /// `value` as JSON, sealed, base64url.
    public func seal(_ value: some Encodable, as purpose: Purpose) throws -> String {
        let plaintext = try JSONEncoder().encode(value)
        guard let combined = try AES.GCM.seal(plaintext, using: key, authenticating: Data(purpose.rawValue.utf8)).combined else {
            throw LatchError(.serverError, "sealing failed")
        }
        return Base64URL.encode(combined)
    }

    /// The value sealed as `purpose`, or nil when `text` is not one (forged, truncated, another purpose or deployment).
    /// Texts longer than `maximumLength` are not even decoded.
    public func open<T: Decodable>(_ text: String, as purpose: Purpose, _ type: T.Type, maximumLength: Int = 4096) -> T? {
        guard text.utf8.count <= maximumLength, let combined = Base64URL.decode(text),
            let box = try? AES.GCM.SealedBox(combined: combined),
            let plaintext = try? AES.GCM.open(box, using: key, authenticating: Data(purpose.rawValue.utf8))
        else { return nil }
        return try? JSONDecoder().decode(T.self, from: plaintext)
    }
}

/// PKCE (RFC 7636) and the hashes of the values browsers carry.
public enum PKCE {
    /// `BASE64URL(SHA256(ASCII(verifier)))` (§4.2).
    public static func challenge(_ verifier: String) -> String { Base64URL.encode(Array(SHA256.hash(data: Data(verifier.utf8)))) }

    /// A verifier is 43–128 characters of `[A-Za-z0-9-._~]` (§4.1).
    public static func isVerifier(_ value: String) -> Bool {
        (43...128).contains(value.utf8.count) && value.utf8.allSatisfy { isUnreserved($0) }
    }

    /// An S256 challenge is 43 characters of base64url (a SHA-256 digest).
    public static func isChallenge(_ value: String) -> Bool {
        value.utf8.count == 43 && value.utf8.allSatisfy { isUnreserved($0) && $0 != UInt8(ascii: ".") && $0 != UInt8(ascii: "~") }
    }

    static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// SHA-256 of `value`, lowercase hex: how cookies' secrets are stored and compared.
    public static func hashHex(_ value: String) -> String { Hex.encode(Secrets.hash(value)) }
}
