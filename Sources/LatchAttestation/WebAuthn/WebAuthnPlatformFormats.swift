import Crypto
import CryptoExtras
import Foundation
import LatchCBOR
import LatchModel
import SwiftASN1
import X509

/// The platform attestation formats: Apple's anonymous attestation (§8.8) and Android Keystore key attestation
/// (§8.4), each verified in the specification's order and returning the certificate chain for the trust step.
extension WebAuthnRelyingParty {
    /// The roots the platform formats chain to, shipped with Latch.
    public static let knownFormatAnchors: [String: TrustAnchors] = {
        var anchors: [String: TrustAnchors] = [:]
        if let apple = try? TrustAnchors(pem: KnownRoots.appleWebAuthn) { anchors["apple"] = apple }
        if let google = try? TrustAnchors(pem: KnownRoots.googleHardwareAttestation) { anchors["android-key"] = google }
        return anchors
    }()

    /// §8.8 Apple Anonymous Attestation: `attStmt = {x5c}`.
    func verifyApple(
        _ statement: CBORValue, authData: AuthenticatorData, publicKey: WebAuthnPublicKey, clientDataHash: [UInt8], step: String,
        trace: inout AttestationTrace
    ) throws(AttestationFailure) -> CertificateChainValidator.Chain {
        // Step 1. The statement is CBOR holding x5c.
        guard let x5c = statement["x5c"] else { throw trace.failed(step, .webauthnAttestationInvalid, "apple needs x5c") }
        let chain = try certificates(x5c, step: step, trace: &trace)
        // Steps 2–3. nonce = SHA-256(authenticatorData ‖ clientDataHash).
        let nonce = Array(SHA256.hash(data: authData.bytes + clientDataHash))
        // Step 4. The credential certificate's extension 1.2.840.113635.100.8.2 holds the nonce.
        var inner = AttestationTrace()
        let certified: [UInt8]
        do {
            certified = try AppAttest.certifiedNonce(chain.leaf, trace: &inner)
        } catch {
            throw trace.failed(step, .webauthnAttestationInvalid, "apple: \(error.detail)")
        }
        guard certified == nonce else {
            throw trace.failed(step, .webauthnAttestationInvalid, "apple: the certificate's nonce is not SHA-256(authenticatorData ‖ clientDataHash)")
        }
        // Step 5. The credential public key is the certificate's subject public key.
        guard publicKey.isKey(of: chain.leaf) else {
            throw trace.failed(step, .webauthnAttestationInvalid, "apple: the credential public key is not the certificate's")
        }
        trace.passed(step, "apple: nonce and key match the credential certificate")
        return chain
    }

    /// §8.4 Android Key Attestation: `attStmt = {alg, sig, x5c}`.
    func verifyAndroidKey(
        _ statement: CBORValue, authData: AuthenticatorData, publicKey: WebAuthnPublicKey, clientDataHash: [UInt8], step: String,
        trace: inout AttestationTrace
    ) throws(AttestationFailure) -> CertificateChainValidator.Chain {
        // Step 1. The statement holds alg, sig and x5c.
        guard let alg = statement["alg"]?.intValue, let signature = statement["sig"]?.bytesValue, let x5c = statement["x5c"] else {
            throw trace.failed(step, .webauthnAttestationInvalid, "android-key needs alg, sig and x5c")
        }
        // StrongBox leaves may carry a NULL in their ECDSA signature AlgorithmIdentifier.
        let chain = try certificates(x5c, step: step, nullLeafSignatureParameters: true, trace: &trace)
        // Step 2. sig verifies over authenticatorData ‖ clientDataHash with the first certificate's key and alg.
        guard let key = Self.signatureKey(chain.leaf.publicKey, alg: alg), key.isValidSignature(signature, for: authData.bytes + clientDataHash)
        else { throw trace.failed(step, .webauthnAttestationInvalid, "android-key: the signature does not verify with the certificate's key (alg \(alg))") }
        // Step 3. The certificate's key is the credential public key.
        guard publicKey.isKey(of: chain.leaf) else {
            throw trace.failed(step, .webauthnAttestationInvalid, "android-key: the credential public key is not the certificate's")
        }
        // Step 4. The key description's attestationChallenge is clientDataHash.
        guard let ext = chain.leaf.extensions[oid: AndroidKeyDescription.extensionObjectIdentifier] else {
            throw trace.failed(step, .webauthnAttestationInvalid, "android-key: the certificate has no key description (1.3.6.1.4.1.11129.2.1.17)")
        }
        let description: AndroidKeyDescription
        do {
            description = try AndroidKeyDescription(extensionValue: Array(ext.value))
        } catch {
            throw trace.failed(step, .attestationMalformed, "android-key: \(error.description)")
        }
        guard description.attestationChallenge == clientDataHash else {
            throw trace.failed(step, .webauthnAttestationInvalid, "android-key: the attestation challenge is not clientDataHash")
        }
        // Step 5. No allApplications [600] in either list (the key must be scoped to this relying party); origin
        // KM_ORIGIN_GENERATED (0) and purpose KM_PURPOSE_SIGN (2), from the hardware-enforced list — or, for a key
        // attested in software, from the union of both lists.
        let lists = [description.softwareEnforced, description.hardwareEnforced]
        guard !lists.contains(where: { $0.otherElements.contains { $0.tag == 600 } }) else {
            throw trace.failed(step, .webauthnAttestationInvalid, "android-key: the key is usable by all applications (allApplications)")
        }
        let hardware = description.hardwareEnforced
        let software = description.softwareEnforced
        let inHardware = description.attestationSecurityLevel != .software
        let origin = inHardware ? hardware.origin : (hardware.origin ?? software.origin)
        let purposes = inHardware ? (hardware.purpose ?? []) : (hardware.purpose ?? []).union(software.purpose ?? [])
        guard origin == 0 else { throw trace.failed(step, .webauthnAttestationInvalid, "android-key: the key was not generated in the keystore (origin)") }
        guard purposes.contains(2) else { throw trace.failed(step, .webauthnAttestationInvalid, "android-key: the key's purposes do not include sign") }
        trace.passed(step, "android-key: signature, key, challenge and authorizations (\(inHardware ? "hardware" : "software"))")
        return chain
    }
}

extension WebAuthnPublicKey {
    /// Whether this is the subject public key of `certificate`.
    func isKey(of certificate: Certificate) -> Bool {
        switch self {
        case .es256(let key):
            guard let other = P256.Signing.PublicKey(certificate.publicKey) else { return false }
            return other.x963Representation == key.x963Representation
        case .eddsa(let key):
            guard let other = Curve25519.Signing.PublicKey(certificate.publicKey) else { return false }
            return other.rawRepresentation == key.rawRepresentation
        case .rs256(let key):
            guard let other = _RSA.Signing.PublicKey(certificate.publicKey) else { return false }
            return other.derRepresentation == key.derRepresentation
        }
    }
}
