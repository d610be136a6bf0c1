import Crypto
import Foundation
import LatchCBOR
import LatchJOSE
import LatchModel
import SwiftASN1
import X509

/// A certificate authority for tests and CI that issues attestation evidence in the real formats — App Attest
/// attestation objects and assertions, Android key attestation chains — under a root the deployment trusts only
/// while test keys are on. Created by `latch admin attestation test-root create`; used by `latch device register
/// --attest` and the tests. Never a substitute for Apple's or Google's roots in production.
public struct TestAttestationAuthority: Sendable {
    public let rootKey: P256.Signing.PrivateKey
    public let root: Certificate
    /// The intermediate that issues leaves, derived from the root key so every process using the same root issues
    /// under the same intermediate key.
    let intermediateKey: P256.Signing.PrivateKey
    let intermediate: Certificate

    /// A new root valid for ten years from `now`.
    public static func create(now: Date, commonName: String = "Latch test attestation root") throws -> TestAttestationAuthority {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName(commonName); OrganizationName("Latch (testing only)") }
        let root = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86_400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(key))
        return try TestAttestationAuthority(rootKey: key, root: root)
    }

    /// Loads a root from its PEM certificate and PEM (PKCS#8 or SEC1) private key.
    public init(rootPEM: String, keyPEM: String) throws {
        try self.init(rootKey: P256.Signing.PrivateKey(pemRepresentation: keyPEM), root: Certificate(pemEncoded: rootPEM))
    }

    init(rootKey: P256.Signing.PrivateKey, root: Certificate) throws {
        guard Certificate.PublicKey(rootKey.publicKey) == root.publicKey else {
            throw AttestationFailure(.attestationMalformed, step: "test root", "the private key does not belong to the root certificate")
        }
        self.rootKey = rootKey
        self.root = root
        let derived = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: SymmetricKey(data: rootKey.rawRepresentation), info: Array("latch test attestation intermediate v1".utf8),
            outputByteCount: 32)
        intermediateKey = try derived.withUnsafeBytes { try P256.Signing.PrivateKey(rawRepresentation: $0) }
        let name = try DistinguishedName { CommonName("Latch test attestation intermediate"); OrganizationName("Latch (testing only)") }
        intermediate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(intermediateKey.publicKey),
            notValidBefore: root.notValidBefore, notValidAfter: root.notValidAfter, issuer: root.subject, subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true))
            },
            issuerPrivateKey: .init(rootKey))
    }

    public var rootPEM: String { get throws { try root.serializeAsPEM().pemString } }
    public var keyPEM: String { rootKey.pemRepresentation }
    public var anchors: TrustAnchors { TrustAnchors([root]) }

    /// A leaf for `publicKey` carrying `extensions`, valid from an hour before `now` for `lifetime` seconds.
    func leaf(
        for publicKey: Certificate.PublicKey, commonName: String, now: Date, lifetime: TimeInterval = 30 * 86_400,
        extensions: [Certificate.Extension]
    ) throws -> Certificate {
        try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(lifetime),
            issuer: intermediate.subject, subject: try DistinguishedName { CommonName(commonName) },
            signatureAlgorithm: .ecdsaWithSHA256, extensions: try Certificate.Extensions(extensions),
            issuerPrivateKey: .init(intermediateKey))
    }

    static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    // MARK: App Attest

    /// An App Attest attestation object for `deviceKey` (key id = SHA-256 of its X9.63 point) over
    /// `clientDataHash`, for `appID` in `environment`: the format Apple's servers issue, under this root.
    public func appAttestAttestation(
        deviceKey: P256.Signing.PublicKey, appID: String, environment: AppAttest.Environment, clientDataHash: [UInt8], now: Date
    ) throws -> [UInt8] {
        let keyID = Array(SHA256.hash(data: deviceKey.x963Representation))
        var authData = Array(SHA256.hash(data: Array(appID.utf8)))
        authData.append(AuthenticatorData.Flags([.userPresent, .attestedCredentialData]).rawValue)
        authData += [0, 0, 0, 0]
        authData += environment.aaguid
        authData += [UInt8(keyID.count >> 8), UInt8(keyID.count & 0xFF)] + keyID
        authData += CBORValue.map([
            .init(.unsigned(1), .unsigned(2)), .init(.unsigned(3), .int(-7)), .init(.int(-1), .unsigned(1)),
            .init(.int(-2), .bytes(Array(deviceKey.rawRepresentation.prefix(32)))),
            .init(.int(-3), .bytes(Array(deviceKey.rawRepresentation.suffix(32)))),
        ]).encoded
        let nonce = Array(SHA256.hash(data: authData + clientDataHash))
        // SEQUENCE { [1] EXPLICIT OCTET STRING nonce }
        let nonceExtension = Certificate.Extension(oid: AppAttest.nonceExtension, critical: false, value: [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + nonce[...])
        let credCert = try leaf(for: .init(deviceKey), commonName: hex(keyID), now: now, extensions: [nonceExtension])
        return CBORValue.map([
            .init(.text("fmt"), .text("apple-appattest")),
            .init(.text("attStmt"), .map([
                .init(.text("x5c"), .array([.bytes(try Self.der(credCert)), .bytes(try Self.der(intermediate))])),
                .init(.text("receipt"), .bytes(Array("latch test receipt".utf8))),
            ])),
            .init(.text("authData"), .bytes(authData)),
        ]).encoded
    }

    /// An App Attest assertion by `deviceKey` with `counter` over `clientData` for `appID`.
    public static func appAttestAssertion(deviceKey: P256.Signing.PrivateKey, appID: String, counter: UInt32, clientData: [UInt8]) throws -> [UInt8] {
        try appAttestAssertion(deviceKey: deviceKey, appID: appID, counter: counter, clientDataHash: Array(SHA256.hash(data: clientData)))
    }

    /// An App Attest assertion by `deviceKey` with `counter` over a client data hash (what `generateAssertion` takes).
    public static func appAttestAssertion(deviceKey: P256.Signing.PrivateKey, appID: String, counter: UInt32, clientDataHash: [UInt8]) throws -> [UInt8] {
        var authData = Array(SHA256.hash(data: Array(appID.utf8)))
        authData.append(AuthenticatorData.Flags.userPresent.rawValue)
        authData += [UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF)]
        let nonce = Array(SHA256.hash(data: authData + clientDataHash))
        let signature = try deviceKey.signature(for: nonce)
        return CBORValue.map([
            .init(.text("signature"), .bytes(Array(signature.derRepresentation))), .init(.text("authenticatorData"), .bytes(authData)),
        ]).encoded
    }

    // MARK: Android key attestation

    /// An Android key attestation chain (DER, leaf first: leaf, intermediate, root) for `deviceKey`, as Android
    /// Keystore returns it for a key generated with `challenge` by app `packageName` signed with a certificate of
    /// SHA-256 `signatureDigest`.
    public func androidKeyChain(
        deviceKey: Certificate.PublicKey, challenge: [UInt8], packageName: String, signatureDigest: [UInt8],
        securityLevel: AndroidKeyDescription.SecurityLevel = .trustedEnvironment, verifiedBoot: Bool = true, now: Date
    ) throws -> [[UInt8]] {
        let description = AndroidKeyDescription(
            attestationVersion: 300, attestationSecurityLevel: securityLevel, keyMintVersion: 300, keyMintSecurityLevel: securityLevel,
            attestationChallenge: challenge,
            softwareEnforced: AndroidKeyDescription.AuthorizationList(
                creationDateTime: Int(now.timeIntervalSince1970 * 1000),
                attestationApplicationId: .init(packageInfos: [.init(packageName: packageName, version: 1)], signatureDigests: [signatureDigest])),
            hardwareEnforced: AndroidKeyDescription.AuthorizationList(
                purpose: [2], algorithm: 3, keySize: 256, ecCurve: 1, noAuthRequired: true, origin: 0,
                rootOfTrust: .init(
                    verifiedBootKey: Array(repeating: 0x11, count: 32), deviceLocked: verifiedBoot,
                    verifiedBootState: verifiedBoot ? .verified : .unverified, verifiedBootHash: Array(repeating: 0x22, count: 32)),
                osVersion: 160000, osPatchLevel: 202611))
        let ext = Certificate.Extension(oid: AndroidKeyDescription.extensionObjectIdentifier, critical: false, value: description.derEncoded()[...])
        // Keystore leaves run from the epoch to 2048 (KeyMint's default validity).
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(1), publicKey: deviceKey,
            notValidBefore: Date(timeIntervalSince1970: 0), notValidAfter: Date(timeIntervalSince1970: 2_461_449_600),
            issuer: intermediate.subject, subject: try DistinguishedName { CommonName("Android Keystore Key") },
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { Critical(KeyUsage(digitalSignature: true)); ext }, issuerPrivateKey: .init(intermediateKey))
        return [try Self.der(leaf), try Self.der(intermediate), try Self.der(root)]
    }

    // MARK: Play Integrity

    /// A Play Integrity token in Google's format — a JWS (ES256, `signingKey`) inside a JWE (A256KW + A256GCM,
    /// `decryptionKey`) — with a verdict for `packageName`, `requestHash` and `timestamp`: recognised by Play,
    /// signed with `certificateDigest`, the device at `deviceVerdicts`, licensed.
    public static func playIntegrityToken(
        packageName: String, requestHash: String, certificateDigest: [UInt8], timestamp: Date, decryptionKey: SymmetricKey,
        signingKey: P256.Signing.PrivateKey, deviceVerdicts: [String] = ["MEETS_BASIC_INTEGRITY", "MEETS_DEVICE_INTEGRITY"],
        appRecognitionVerdict: String = "PLAY_RECOGNIZED"
    ) throws -> String {
        let payload: [String: JSONValue] = [
            "requestDetails": [
                "requestPackageName": .string(packageName), "requestHash": .string(requestHash),
                "timestampMillis": .string(String(Int64(timestamp.timeIntervalSince1970 * 1000))),
            ],
            "appIntegrity": [
                "appRecognitionVerdict": .string(appRecognitionVerdict), "packageName": .string(packageName),
                "certificateSha256Digest": [.string(Base64URL.encode(Data(certificateDigest)))], "versionCode": "42",
            ],
            "deviceIntegrity": ["deviceRecognitionVerdict": .array(deviceVerdicts.map(JSONValue.string))],
            "accountDetails": ["appLicensingVerdict": "LICENSED"],
        ]
        let jws = try JWSSigner(key: PrivateKey(p256: signingKey), keyID: "play-integrity").sign(claims: payload)
        return JWECompact.encrypt(Array(jws.utf8), keyEncryptionKey: decryptionKey, contentType: "JWT")
    }
}
