#if canImport(Security) && canImport(LocalAuthentication) && !os(Linux)
import Crypto
import Foundation
import LatchJOSE
import Security

/// Device sign-in and DPoP keys in the Secure Enclave: P-256 keys made inside the enclave, usable only on this device,
/// with no user presence per signature (so a DPoP proof per request works without a prompt). The key store keeps
/// only the enclave-sealed blob (`dataRepresentation`), prefixed `secure-enclave:`; the server sees an ordinary
/// ES256 key. Where the device has no Secure Enclave (the simulator) or the algorithm is not ES256, keys are made in
/// software instead (``SoftwareKeyProvider``), and software keys stored by earlier SDK versions keep working.
@available(iOS 14, macOS 11, *)
public struct SecureEnclaveKeyProvider: DeviceKeyProvider {
    static let prefix = "secure-enclave:"

    /// The provider (keys live in the Secure Enclave; the key store keeps their sealed blobs).
    public init() {}

    /// Whether keys are made in the Secure Enclave on this device.
    public var isAvailable: Bool { SecureEnclave.isAvailable }

    public func makeKey(_ algorithm: JWSAlgorithm) throws(UserClientError) -> any DeviceSigningKey {
        guard algorithm == .ES256, SecureEnclave.isAvailable else { return try SoftwareKeyProvider().makeKey(algorithm) }
        var error: Unmanaged<CFError>?
        guard let access = SecAccessControlCreateWithFlags(
                // Usable after the first unlock (background refreshes), never outside this device; no user presence.
                nil, kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly, [.privateKeyUsage], &error) else {
            throw .platform(.secureEnclaveUnavailable, "cannot create the Secure Enclave access control")
        }
        do {
            let key = try SecureEnclave.P256.Signing.PrivateKey(accessControl: access)
            return try SecureEnclaveSigningKey(blob: key.dataRepresentation)
        } catch let error as UserClientError {
            throw error
        } catch {
            throw .platform(.secureEnclaveUnavailable, "the Secure Enclave could not make a key: \(error)")
        }
    }

    public func restoreKey(_ stored: String) throws(UserClientError) -> any DeviceSigningKey {
        guard stored.hasPrefix(Self.prefix) else { return try SoftwareKeyProvider().restoreKey(stored) }
        guard let blob = Data(base64Encoded: String(stored.dropFirst(Self.prefix.count))) else {
            throw .invalidConfiguration("the stored device key is damaged")
        }
        return try SecureEnclaveSigningKey(blob: blob)
    }
}

/// A Secure Enclave P-256 key held as its sealed blob. CryptoKit's enclave key type is not `Sendable` in the iOS 16–18
/// SDKs, so this value keeps only `Sendable` parts (the blob and the public key) and unseals the key for each
/// signature — a `SecKey` lookup, cheap next to the enclave's signature.
@available(iOS 14, macOS 11, *)
struct SecureEnclaveSigningKey: DeviceSigningKey {
    let blob: Data
    let publicKey: PublicKey

    /// Unseals `blob` once to read its public key: a blob from another device's enclave fails here.
    init(blob: Data) throws(UserClientError) {
        let key: SecureEnclave.P256.Signing.PrivateKey
        do {
            key = try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: blob)
        } catch {
            throw .deviceKeyLost
        }
        self.blob = blob
        do {
            self.publicKey = PublicKey(p256: try P256.Signing.PublicKey(rawRepresentation: key.publicKey.rawRepresentation))
        } catch {
            throw .deviceKeyLost
        }
    }

    var algorithm: JWSAlgorithm { .ES256 }
    var isHardwareBacked: Bool { true }
    var storedRepresentation: String { SecureEnclaveKeyProvider.prefix + blob.base64EncodedString() }

    func signature(for signingInput: [UInt8]) throws -> Data {
        let key = try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: blob)
        let signature = try key.signature(for: SHA256.hash(data: signingInput))
        guard let jws = JWSAlgorithm.es256Signature(rawRepresentation: signature.rawRepresentation) else {
            throw UserClientError.platform(.secureEnclaveUnavailable, "the Secure Enclave returned a malformed signature")
        }
        return jws
    }
}
#endif
