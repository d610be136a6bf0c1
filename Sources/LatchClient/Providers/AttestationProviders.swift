import Foundation
import LatchJOSE

/// Apple's App Attest service as the SDK uses it — the calls of `DCAppAttestService` — so an app passes
/// ``DeviceAppAttestProvider`` on Apple platforms and tests pass a simulation. Errors thrown as ``UserClientError``
/// reach the app as they are (``UserClientError/Code/deviceKeyLost`` for a key this device no longer has,
/// ``UserClientError/Code/unsupportedDevice``); any other error becomes ``UserClientError/Code/attestationFailed``.
public protocol AppAttestProvider: Sendable {
    /// Whether this device can attest keys (not the simulator, not every Mac).
    var isSupported: Bool { get }
    /// A new key in the Secure Enclave; its id (base64 SHA-256 of the public key).
    func generateKey() async throws -> String
    /// Apple's attestation object for `keyId` over `clientDataHash`.
    func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data
    /// An assertion (CBOR `{signature, authenticatorData}`) by `keyId` over `clientDataHash`.
    func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data
}

/// Android Keystore key attestation: a new key generated with `challenge` as its attestation challenge, and the
/// certificate chain (DER, leaf first) Keystore returns for it. The attested key becomes the device key, so the SDK
/// needs its private key: this flow runs with exportable keys (the SDK's Linux simulation); Android apps generate
/// non-exportable Keystore keys with their own code and send the same registration.
public protocol AndroidKeyAttestationProvider: Sendable {
    func generateAttestedKey(challenge: Data) async throws -> (chain: [Data], privateKey: PrivateKey)
}

extension AppAttestProvider {
    /// Simulations and older providers: supported.
    public var isSupported: Bool { true }
}

/// Apple's DeviceCheck as the SDK uses it: a token from `DCDevice.current` (``DeviceCheckDevice`` on Apple platforms).
public protocol DeviceCheckTokenProvider: Sendable {
    /// Whether this device can make DeviceCheck tokens.
    var isSupported: Bool { get }
    /// A new, short-lived DeviceCheck token.
    func generateToken() async throws -> Data
}

/// Google Play Integrity: a token for `requestHash` from the Play Integrity API (standard or classic request).
public protocol PlayIntegrityProvider: Sendable {
    /// The app's package name (the token's `requestPackageName`).
    var packageName: String { get }
    func integrityToken(requestHash: String) async throws -> String
}

#if canImport(DeviceCheck) && !os(Linux)
import DeviceCheck

/// App Attest on an Apple device (iOS 14+, macOS 11+ with a Secure Enclave): `DCAppAttestService.shared`.
@available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
public struct DeviceAppAttestProvider: AppAttestProvider {
    /// The provider over `DCAppAttestService.shared`.
    public init() {}

    /// Whether this device supports App Attest (not the simulator, not every Mac).
    public var isSupported: Bool { DCAppAttestService.shared.isSupported }

    public func generateKey() async throws -> String {
        do {
            return try await DCAppAttestService.shared.generateKey()
        } catch {
            throw Self.mapped(error)
        }
    }

    public func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        do {
            return try await DCAppAttestService.shared.attestKey(keyId, clientDataHash: clientDataHash)
        } catch {
            throw Self.mapped(error)
        }
    }

    public func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        do {
            return try await DCAppAttestService.shared.generateAssertion(keyId, clientDataHash: clientDataHash)
        } catch {
            throw Self.mapped(error)
        }
    }

    /// DeviceCheck's errors as the SDK's: an unknown key id (the app was restored onto another device, or
    /// reinstalled) is ``UserClientError/Code/deviceKeyLost``.
    static func mapped(_ error: any Error) -> UserClientError {
        guard let error = error as? DCError else { return .platform(.attestationFailed, "App Attest failed: \(error)", underlying: error) }
        switch error.code {
        case .featureUnsupported: return .platform(.unsupportedDevice, "this device does not support App Attest", underlying: error)
        case .invalidKey: return .platform(.deviceKeyLost, "App Attest does not know this key on this device", underlying: error)
        case .serverUnavailable: return .platform(.serviceUnavailable, "Apple's App Attest service is unavailable; retry", underlying: error)
        case .invalidInput: return .platform(.invalidInput, "App Attest refused its input", underlying: error)
        default: return .platform(.attestationFailed, "App Attest failed (DCError \(error.code.rawValue))", underlying: error)
        }
    }
}

/// DeviceCheck on an Apple device (iOS 11+): `DCDevice.current`.
@available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, *)
public struct DeviceCheckDevice: DeviceCheckTokenProvider {
    /// The provider over `DCDevice.current`.
    public init() {}

    public var isSupported: Bool { DCDevice.current.isSupported }

    public func generateToken() async throws -> Data {
        guard DCDevice.current.isSupported else { throw UserClientError.platform(.unsupportedDevice, "this device does not support DeviceCheck") }
        do {
            return try await DCDevice.current.generateToken()
        } catch {
            throw UserClientError.platform(.attestationFailed, "DeviceCheck could not make a token: \(error)", underlying: error)
        }
    }
}
#endif
