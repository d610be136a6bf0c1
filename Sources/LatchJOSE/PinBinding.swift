import Crypto
import Foundation
import LatchModel

/// The device binding of a PIN authenticator (docs/fido.md, "PIN binding"): besides the key derived from the PIN,
/// the device holds a P-256 *binding key* (a Secure Enclave key on iOS, a software key elsewhere) registered with
/// the authenticator; every PIN assertion carries the binding key's signature, so a wrong PIN — a PIN signature that
/// does not verify — can only come from the device. The server and the SDK build the signed messages here.
///
/// Wire form: the binding public key is the 65-byte uncompressed X9.63 point, a signature is ES256's 64-byte R ‖ S
/// (RFC 7518 §3.4), both base64url. Variable fields are length-prefixed (2 bytes, big-endian), so no two different
/// inputs give the same message.
public enum PinBinding {
    /// The binding public key's size: an uncompressed P-256 point.
    public static let publicKeyLength = 65
    /// A binding signature's size: R ‖ S.
    public static let signatureLength = 64
    /// The longest base64url text accepted for a key or a signature, checked before decoding.
    public static let maximumEncodedLength = 128

    /// What the binding key signs with every PIN assertion: `"latch pin binding v1\0"` ‖ len ‖ ceremony challenge ‖
    /// len ‖ credential id ‖ SHA-256(authenticatorData ‖ SHA-256(clientDataJSON)) — the ceremony, the credential and
    /// the very assertion whose PIN signature it vouches for.
    public static func assertionMessage(challenge: [UInt8], credentialID: [UInt8], authenticatorData: [UInt8], clientDataJSON: [UInt8]) -> [UInt8] {
        let assertion = Array(SHA256.hash(data: authenticatorData + Array(SHA256.hash(data: clientDataJSON))))
        return Array("latch pin binding v1".utf8) + [0] + prefixed(challenge) + prefixed(credentialID) + assertion
    }

    /// What the binding key signs when it is registered (proof of possession): `"latch pin binding key v1\0"` ‖ len ‖
    /// ceremony challenge ‖ len ‖ credential id ‖ the binding public key (65 bytes).
    public static func registrationMessage(challenge: [UInt8], credentialID: [UInt8], publicKey: [UInt8]) -> [UInt8] {
        Array("latch pin binding key v1".utf8) + [0] + prefixed(challenge) + prefixed(credentialID) + publicKey
    }

    static func prefixed(_ bytes: [UInt8]) -> [UInt8] {
        [UInt8(truncatingIfNeeded: bytes.count >> 8), UInt8(truncatingIfNeeded: bytes.count)] + bytes
    }

    /// The binding public key from its wire form (base64url of 65 bytes, a point on P-256); nil otherwise. The length
    /// is checked before anything is decoded.
    public static func publicKey(base64URL text: String) -> P256.Signing.PublicKey? {
        guard text.utf8.count <= maximumEncodedLength, let bytes = Base64URL.decode(text), bytes.count == publicKeyLength else { return nil }
        return try? P256.Signing.PublicKey(x963Representation: bytes)
    }

    /// A binding signature from its wire form (base64url of 64 bytes); nil otherwise.
    public static func signature(base64URL text: String) -> Data? {
        guard text.utf8.count <= maximumEncodedLength, let bytes = Base64URL.decode(text), bytes.count == signatureLength else { return nil }
        return bytes
    }

    /// The wire form of a binding public key: the 65-byte uncompressed point of a P-256 key; nil for other keys.
    public static func publicKeyBytes(of key: PublicKey) -> Data? {
        key.p256?.x963Representation
    }

    /// Whether `signature` (R ‖ S) by `publicKey` (65 stored bytes) verifies over `message`.
    public static func verifies(_ signature: Data, publicKey: Data, message: [UInt8]) -> Bool {
        guard publicKey.count == publicKeyLength, let key = try? P256.Signing.PublicKey(x963Representation: publicKey) else { return false }
        return PublicKey(p256: key).isValidSignature(signature, for: message)
    }
}
