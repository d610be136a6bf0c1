import Foundation
import LatchJOSE

/// Apple's App Attest service as the SDK uses it — the three calls of `DCAppAttestService` — so an app passes
/// ``DeviceAppAttestProvider`` on Apple platforms and tests pass a simulation.
public protocol AppAttestProvider: Sendable {
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
    public init() {}

    /// Whether this device supports App Attest (not the simulator, not every Mac).
    public var isSupported: Bool { DCAppAttestService.shared.isSupported }

    public func generateKey() async throws -> String { try await DCAppAttestService.shared.generateKey() }

    public func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try await DCAppAttestService.shared.attestKey(keyId, clientDataHash: clientDataHash)
    }

    public func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        try await DCAppAttestService.shared.generateAssertion(keyId, clientDataHash: clientDataHash)
    }
}
#endif
