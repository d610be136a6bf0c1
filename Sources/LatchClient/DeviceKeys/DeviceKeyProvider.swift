import Foundation
import LatchJOSE

/// A key this device signs with — the device sign-in key or the DPoP key — and the text that brings it back after a
/// restart (kept in the ``KeyStore``).
public protocol DeviceSigningKey: JWSSigningKey {
    /// What the key store keeps for this key: a PKCS#8 PEM for a software key; for a Secure Enclave key its
    /// enclave-sealed blob, which only this device's Secure Enclave can use (never the private key itself).
    var storedRepresentation: String { get }
    /// Whether the private key lives in hardware (the Secure Enclave) and cannot be read out.
    var isHardwareBacked: Bool { get }
}

/// Makes and restores this device's signing keys: the platform call behind the SDK's device sign-in and DPoP keys.
///
/// ``SecureEnclaveKeyProvider`` on Apple devices with a Secure Enclave (the default there), ``SoftwareKeyProvider``
/// elsewhere (Linux, the simulator); tests pass their own to simulate a restore onto another device.
public protocol DeviceKeyProvider: Sendable {
    /// A new key for `algorithm` (a hardware key where the provider has one for it).
    func makeKey(_ algorithm: JWSAlgorithm) throws(UserClientError) -> any DeviceSigningKey
    /// The key `stored` (a ``DeviceSigningKey/storedRepresentation``) stands for.
    /// - Throws: ``UserClientError/deviceKeyLost`` when this device cannot use it (a Secure Enclave key of another
    ///   device, after a backup was restored onto this one); ``UserClientError/invalidConfiguration(_:)`` when the
    ///   text is damaged.
    func restoreKey(_ stored: String) throws(UserClientError) -> any DeviceSigningKey
}

extension PrivateKey: DeviceSigningKey {
    /// The PKCS#8 PEM.
    public var storedRepresentation: String { pemRepresentation }
    /// Never: a software key.
    public var isHardwareBacked: Bool { false }
}

/// Software keys (swift-crypto), stored as PKCS#8 PEM: Linux, command-line tools, the iOS simulator, and RSA keys.
public struct SoftwareKeyProvider: DeviceKeyProvider {
    /// The provider (it holds nothing: keys live in the key store).
    public init() {}

    public func makeKey(_ algorithm: JWSAlgorithm) throws(UserClientError) -> any DeviceSigningKey {
        do {
            return try PrivateKey.generate(algorithm)
        } catch {
            throw .invalidConfiguration("cannot make a \(algorithm.rawValue) device key: \(error)")
        }
    }

    public func restoreKey(_ stored: String) throws(UserClientError) -> any DeviceSigningKey {
        guard stored.hasPrefix("-----BEGIN") else {
            // A hardware key's blob: this provider (and so this device) cannot use it.
            throw .deviceKeyLost
        }
        do {
            return try PrivateKey(pem: stored)
        } catch {
            throw .invalidConfiguration("the stored device key is damaged")
        }
    }
}

extension DeviceKeyProvider where Self == SoftwareKeyProvider {
    /// Software keys in the key store.
    public static var software: SoftwareKeyProvider { SoftwareKeyProvider() }
}

/// The provider a ``UserClient`` uses when none is given.
public enum DeviceKeyProviders {
    /// ``SecureEnclaveKeyProvider`` on iOS, iPadOS and visionOS (software keys where the device has no Secure Enclave,
    /// such as the simulator); ``SoftwareKeyProvider`` elsewhere — Linux, and macOS, where command-line tools and
    /// unsigned test runners cannot use the Secure Enclave: a Mac app opts in with `keyProvider: SecureEnclaveKeyProvider()`.
    public static var platformDefault: any DeviceKeyProvider {
        #if (os(iOS) || os(visionOS)) && canImport(Security) && canImport(LocalAuthentication)
        if #available(iOS 14, *) { return SecureEnclaveKeyProvider() }
        #endif
        return SoftwareKeyProvider()
    }
}
