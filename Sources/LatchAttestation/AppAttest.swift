import Crypto
import Foundation
import LatchCBOR
import LatchModel
import SwiftASN1
import X509

/// Apple App Attest (Apple, "Validating apps that connect to your server"): the attestation of a new key and the
/// assertions it signs later.
public enum AppAttest {
    /// The App Attest environment an app is built for; it decides the AAGUID of its attestations.
    public enum Environment: String, Sendable, Hashable, CaseIterable {
        case development, production

        /// `appattestdevelop`, or `appattest` followed by seven zero bytes.
        public var aaguid: [UInt8] {
            switch self {
            case .development: Array("appattestdevelop".utf8)
            case .production: Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
            }
        }
    }

    /// A registered app: its App ID (`TEAMID.bundleId`) and environment.
    public struct App: Sendable, Hashable {
        public var appID: String
        public var environment: Environment
        public init(appID: String, environment: Environment) {
            self.appID = appID
            self.environment = environment
        }
    }

    /// The extension of the credential certificate holding the nonce.
    static let nonceExtension: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 8, 2]
    /// Longest attestation object or assertion Latch reads.
    public static let maximumLength = 32 * 1024

    /// What a verified attestation establishes.
    public struct VerifiedAttestation: Sendable {
        public var app: App
        /// SHA-256 of the key's X9.63 point: the key id the app uses.
        public var keyID: [UInt8]
        public var publicKey: P256.Signing.PublicKey
        /// Apple's receipt, kept for fraud-risk queries.
        public var receipt: [UInt8]
        public var counter: UInt32
    }

    /// Verifies an attestation object for `keyID` over `clientDataHash` (the bytes the app passed to
    /// `attestKey`; Latch's apps pass SHA-256 of the UTF-8 registration challenge), against the registered `apps`,
    /// with the chain valid at `date`. Steps 1–9 of Apple's list, in order.
    public static func verifyAttestation(
        _ attestationObject: [UInt8], keyID: [UInt8], clientDataHash: [UInt8], apps: [App], chains: CertificateChainValidator,
        at date: Date, trace: inout AttestationTrace
    ) throws(AttestationFailure) -> VerifiedAttestation {
        // The attestation object: {fmt: "apple-appattest", attStmt: {x5c, receipt}, authData}.
        let step0 = "attestation object"
        guard attestationObject.count <= maximumLength else {
            throw trace.failed(step0, .attestationMalformed, "longer than \(maximumLength) bytes")
        }
        let object: CBORValue
        do {
            object = try CBORDecoder.decode(attestationObject)
        } catch {
            throw trace.failed(step0, .attestationMalformed, "not one CBOR item: \(error)")
        }
        guard object.mapValue != nil, object["fmt"]?.textValue == "apple-appattest" else {
            throw trace.failed(step0, .attestationMalformed, "not a CBOR map with fmt \"apple-appattest\"")
        }
        guard let statement = object["attStmt"], statement.mapValue != nil, let x5c = statement["x5c"]?.arrayValue,
            let receipt = statement["receipt"]?.bytesValue, let authDataBytes = object["authData"]?.bytesValue
        else { throw trace.failed(step0, .attestationMalformed, "attStmt.x5c, attStmt.receipt or authData is missing or of the wrong type") }
        var der: [[UInt8]] = []
        for certificate in x5c {
            guard let bytes = certificate.bytesValue else { throw trace.failed(step0, .attestationMalformed, "x5c holds a non-byte-string item") }
            der.append(bytes)
        }
        guard der.count >= 2 else { throw trace.failed(step0, .attestationMalformed, "x5c must hold the credential certificate and an intermediate") }
        let chain: CertificateChainValidator.Chain
        let authData: AuthenticatorData
        do {
            chain = try CertificateChainValidator.Chain(der: der, step: step0)
            authData = try AuthenticatorData(authDataBytes, unflaggedExtensions: true)
        } catch {
            throw trace.failed(step0, error.code, error.detail)
        }
        guard let credential = authData.attestedCredential else {
            throw trace.failed(step0, .attestationMalformed, "authData carries no attested credential data")
        }
        trace.passed(step0, "fmt apple-appattest, \(der.count) certificates, \(receipt.count)-byte receipt")

        // Step 1. The chain leads to Apple's App Attest root.
        try chains.validate(chain, at: date, step: "1 certificate chain", trace: &trace)
        // Steps 2 and 3. nonce = SHA-256(authData ‖ clientDataHash).
        let nonce = Array(SHA256.hash(data: authDataBytes + clientDataHash))
        trace.passed("2 client data hash", "\(clientDataHash.count) bytes appended to authData")
        // Step 4. The credential certificate's extension holds the nonce.
        let certified = try certifiedNonce(chain.leaf, trace: &trace)
        try trace.require(
            "4 nonce", certified == nonce, else: .attestationChallengeMismatch,
            "the credential certificate's nonce is not SHA-256(authData ‖ clientDataHash): the attestation is for another challenge",
            passed: "SHA-256(authData ‖ clientDataHash) = \(hex(nonce))")
        // Step 5. keyId = SHA-256 of the credential certificate's key (X9.63 uncompressed point).
        guard let publicKey = P256.Signing.PublicKey(chain.leaf.publicKey) else {
            throw trace.failed("5 key id", .attestationMalformed, "the credential certificate's key is not P-256")
        }
        let computedKeyID = Array(SHA256.hash(data: publicKey.x963Representation))
        try trace.require(
            "5 key id", computedKeyID == keyID, else: .attestationKeyMismatch,
            "SHA-256 of the attested key is \(computedKeyID.base64), not the key id \(keyID.base64)", passed: computedKeyID.base64)
        // Step 6. rpIdHash = SHA-256 of a registered App ID.
        guard let app = apps.first(where: { Array(SHA256.hash(data: Array($0.appID.utf8))) == authData.rpIDHash }) else {
            throw trace.failed("6 app id", .attestationAppMismatch, "authData's rpIdHash is the hash of no registered App ID")
        }
        trace.passed("6 app id", app.appID)
        // Step 7. The counter is 0.
        try trace.require("7 counter", authData.signCount == 0, else: .attestationCounterInvalid, "the counter is \(authData.signCount), not 0", passed: "0")
        // Step 8. The AAGUID is the app's environment's.
        try trace.require(
            "8 environment", credential.aaguid == app.environment.aaguid, else: .attestationEnvironmentMismatch,
            "the AAGUID is not \(app.environment.rawValue)'s (the app is registered for \(app.environment.rawValue))",
            passed: app.environment.rawValue)
        // Step 9. The credential id is the key id.
        try trace.require(
            "9 credential id", credential.credentialID == keyID, else: .attestationKeyMismatch, "the credential id is not the key id",
            passed: "equals the key id")
        return VerifiedAttestation(app: app, keyID: keyID, publicKey: publicKey, receipt: receipt, counter: 0)
    }

    /// The nonce in the credential certificate's extension 1.2.840.113635.100.8.2: a DER SEQUENCE holding one
    /// OCTET STRING (Apple encodes it under an explicit `[1]` tag; both forms are read).
    static func certifiedNonce(_ certificate: Certificate, trace: inout AttestationTrace) throws(AttestationFailure) -> [UInt8] {
        let step = "3 nonce extension"
        guard let ext = certificate.extensions[oid: nonceExtension] else {
            throw trace.failed(step, .attestationMalformed, "the credential certificate has no extension 1.2.840.113635.100.8.2")
        }
        do {
            let root = try DER.parse(ext.value)
            guard root.identifier == .sequence, case .constructed(let children) = root.content else {
                throw trace.failed(step, .attestationMalformed, "the nonce extension is not a SEQUENCE")
            }
            var found: [UInt8]?
            for child in children {
                var node = child
                if node.identifier == ASN1Identifier(tagWithNumber: 1, tagClass: .contextSpecific), case .constructed(let inner) = node.content {
                    var iterator = inner.makeIterator()
                    guard let only = iterator.next(), iterator.next() == nil else { break }
                    node = only
                }
                guard found == nil, node.identifier == .octetString, case .primitive(let bytes) = node.content else {
                    found = nil
                    break
                }
                found = Array(bytes)
            }
            guard let found, found.count == 32 else {
                throw trace.failed(step, .attestationMalformed, "the nonce extension does not hold exactly one 32-byte OCTET STRING")
            }
            trace.passed(step, "32-byte nonce")
            return found
        } catch let failure as AttestationFailure {
            throw failure
        } catch {
            throw trace.failed(step, .attestationMalformed, "the nonce extension is not DER")
        }
    }

    /// What a verified assertion establishes.
    public struct VerifiedAssertion: Sendable {
        public var app: App
        public var counter: UInt32
    }

    /// Verifies an assertion `{signature, authenticatorData}` by the attested key `publicKey` over `clientData`
    /// (the bytes the app hashed): the signature over nonce = SHA-256(authenticatorData ‖ SHA-256(clientData)),
    /// the App ID, and a counter strictly greater than `previousCounter`.
    public static func verifyAssertion(
        _ assertion: [UInt8], clientDataHash: [UInt8], publicKey: P256.Signing.PublicKey, apps: [App], previousCounter: UInt32,
        trace: inout AttestationTrace
    ) throws(AttestationFailure) -> VerifiedAssertion {
        let step0 = "assertion"
        guard assertion.count <= maximumLength else { throw trace.failed(step0, .attestationMalformed, "longer than \(maximumLength) bytes") }
        let object: CBORValue
        do {
            object = try CBORDecoder.decode(assertion)
        } catch {
            throw trace.failed(step0, .attestationMalformed, "not one CBOR item: \(error)")
        }
        guard object.mapValue != nil, let signatureBytes = object["signature"]?.bytesValue,
            let authDataBytes = object["authenticatorData"]?.bytesValue
        else { throw trace.failed(step0, .attestationMalformed, "not a CBOR map with byte strings signature and authenticatorData") }
        // Apple's assertions set the AT flag without attested credential data: only the fixed 37-byte head is read
        // (the signature covers every byte).
        guard authDataBytes.count >= 37, authDataBytes.count <= AuthenticatorData.maximumLength else {
            throw trace.failed(step0, .attestationMalformed, "authenticatorData is not 37 to \(AuthenticatorData.maximumLength) bytes")
        }
        let rpIDHash = Array(authDataBytes[0..<32])
        let signCount = authDataBytes[33..<37].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        trace.passed(step0, "\(signatureBytes.count)-byte signature, \(authDataBytes.count)-byte authenticator data")
        // Steps 1–3. The signature is valid for nonce = SHA-256(authenticatorData ‖ clientDataHash).
        let nonce = Array(SHA256.hash(data: authDataBytes + clientDataHash))
        guard let signature = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes) else {
            throw trace.failed("3 signature", .attestationMalformed, "the signature is not a DER ECDSA signature")
        }
        try trace.require(
            "3 signature", publicKey.isValidSignature(signature, for: nonce), else: .attestationUntrusted,
            "the signature does not verify with the attested key", passed: "valid for the attested key")
        // Step 4. rpIdHash = SHA-256 of a registered App ID.
        guard let app = apps.first(where: { Array(SHA256.hash(data: Array($0.appID.utf8))) == rpIDHash }) else {
            throw trace.failed("4 app id", .attestationAppMismatch, "authenticatorData's rpIdHash is the hash of no registered App ID")
        }
        trace.passed("4 app id", app.appID)
        // Step 5. The counter only grows.
        try trace.require(
            "5 counter", signCount > previousCounter, else: .attestationCounterInvalid,
            "the counter \(signCount) is not greater than the stored \(previousCounter)", passed: "\(previousCounter) → \(signCount)")
        return VerifiedAssertion(app: app, counter: signCount)
    }
}

func hex(_ bytes: some Sequence<UInt8>) -> String { Hex.encode(bytes) }

extension Array where Element == UInt8 {
    var base64: String { Data(self).base64EncodedString() }
}
