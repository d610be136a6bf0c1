#if canImport(LocalAuthentication) && canImport(Security)
import Crypto
import Foundation
import LatchModel
import LocalAuthentication
import Security

/// A biometric authenticator on Apple platforms: a P-256 key made inside the Secure Enclave with an access control
/// that requires the current biometric set (Face ID or Touch ID) for every signature — a change of enrolled
/// fingers or faces makes the key unusable. The device keeps only the key's enclave-sealed blob
/// (`dataRepresentation`), which no other device can use. The model (its AAGUID) is `face` or `fingerprint` by the
/// device's biometry, so the server's `amr` says which.
///
/// Compiled only where LocalAuthentication exists; Linux builds use ``SoftwareAuthenticator`` behind a
/// ``SoftwareUserVerifier``.
@available(iOS 14, macOS 11, *)
public struct SecureEnclaveAuthenticator: FidoAuthenticator {
    public let model: LatchAuthenticatorModel
    /// The text the system shows with the biometric prompt.
    let reason: String

    public init(reason: String = "Sign in") {
        let context = LAContext()
        var error: NSError?
        _ = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
        model = context.biometryType == .touchID ? .fingerprint : .face
        self.reason = reason
    }

    public var isSupported: Bool {
        var error: NSError?
        return SecureEnclave.isAvailable && LAContext().canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
    }

    public func createKey(pin: String?) async throws(UserClientError) -> FidoKey {
        var error: Unmanaged<CFError>?
        guard let access = SecAccessControlCreateWithFlags(
            nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly, [.privateKeyUsage, .biometryCurrentSet], &error)
        else { throw .invalidConfiguration("cannot create the Secure Enclave access control") }
        do {
            let key = try SecureEnclave.P256.Signing.PrivateKey(accessControl: access)
            return FidoKey(publicKey: try P256.Signing.PublicKey(rawRepresentation: key.publicKey.rawRepresentation), material: key.dataRepresentation)
        } catch {
            throw .invalidConfiguration("the Secure Enclave could not make a key: \(error)")
        }
    }

    /// Shows the biometric prompt (through the key's access control) and signs; a declined or failed prompt is
    /// ``UserClientError/notAuthorized``.
    public func sign(_ message: [UInt8], material: Data, pin: String?) async throws(UserClientError) -> Data {
        let context = LAContext()
        context.localizedReason = reason
        let key: SecureEnclave.P256.Signing.PrivateKey
        do {
            key = try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: material, authenticationContext: context)
        } catch {
            throw .invalidInput("this device cannot restore the Secure Enclave key (another device, or biometrics changed)")
        }
        do {
            return try key.signature(for: Data(message)).derRepresentation
        } catch {
            throw .notAuthorized
        }
    }
}
#endif
