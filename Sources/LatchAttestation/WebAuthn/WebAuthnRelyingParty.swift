import Crypto
import CryptoExtras
import Foundation
import LatchCBOR
import LatchJOSE
import LatchModel
import SwiftASN1
import X509

/// A WebAuthn relying party's verification of registration and authentication ceremonies (W3C Web Authentication
/// Level 3, §7.1 and §7.2), in the specification's order, one error code per kind of failed check. Stores and
/// options (`begin…`) live with the callers: this checks bytes against what the ceremony expected.
public struct WebAuthnRelyingParty: Sendable {
    /// The relying party id (a registrable domain, e.g. `latch.example`).
    public var rpID: String
    /// Accepted origins: web origins (`https://latch.example`) and native app origins
    /// (`android:apk-key-hash:<base64url SHA-256 of the signing certificate>`).
    public var origins: Set<String>
    /// Algorithms offered in `pubKeyCredParams`.
    public var algorithms: Set<WebAuthnPublicKey.Algorithm> = Set(WebAuthnPublicKey.Algorithm.allCases)
    /// Whether the UV flag is required (user verification `required`).
    public var requireUserVerification = false
    /// Roots attestation certificates of models without their own roots in `metadata` chain to; empty: none.
    public var attestationAnchors: TrustAnchors = TrustAnchors([])
    /// Roots and statuses per authenticator model (a folder of PEM files or an MDS3 BLOB): a model with roots
    /// listed must chain to them; a model whose status says it is compromised is refused.
    public var metadata = FidoMetadata()
    /// The roots of the platform formats, trusted for them besides `attestationAnchors`: `apple` → Apple WebAuthn
    /// Root CA, `android-key` → Google's hardware attestation roots.
    public var formatAnchors: [String: TrustAnchors] = WebAuthnRelyingParty.knownFormatAnchors
    /// Whether an attestation that does not chain to `attestationAnchors` is refused (else it is accepted as
    /// untrusted, like `none`).
    public var requireTrustedAttestation = false

    public init(rpID: String, origins: Set<String>) {
        self.rpID = rpID
        self.origins = origins
    }

    /// How a credential's attestation came out.
    public enum AttestationTrust: String, Sendable {
        /// `none`, or `packed` self attestation: nothing beyond the key itself.
        case none, selfAttested = "self"
        /// An attestation certificate that chains to a trust anchor.
        case trusted
        /// An attestation certificate that verifies but chains to no trust anchor.
        case untrusted
    }

    /// A registered credential, as the relying party stores it.
    public struct VerifiedCredential: Sendable {
        public var credentialID: [UInt8]
        public var publicKey: WebAuthnPublicKey
        /// The COSE_Key bytes as the authenticator sent them (to store).
        public var publicKeyCOSE: [UInt8]
        public var signCount: UInt32
        public var aaguid: [UInt8]
        public var format: String
        public var trust: AttestationTrust
        public var userVerified: Bool
        public var backupEligible: Bool
        public var backedUp: Bool
    }

    /// What a verified assertion establishes.
    public struct VerifiedAssertion: Sendable {
        public var signCount: UInt32
        public var userVerified: Bool
        public var backedUp: Bool
        public var userHandle: [UInt8]?
    }

    static let maximumClientData = 8 * 1024
    static let maximumAttestationObject = 64 * 1024

    // MARK: Registration (§7.1)

    /// Verifies a registration response for `challenge` at `date` (the time attestation certificates are checked at).
    public func verifyRegistration(
        clientDataJSON: [UInt8], attestationObject: [UInt8], challenge: [UInt8], at date: Date, trace: inout AttestationTrace
    ) throws(AttestationFailure) -> VerifiedCredential {
        // Steps 5–11. The client data.
        let clientDataHash = try checkClientData(clientDataJSON, type: "webauthn.create", challenge: challenge, trace: &trace)
        // Step 12. The attestation object.
        guard attestationObject.count <= Self.maximumAttestationObject else {
            throw trace.failed("12 attestation object", .attestationMalformed, "longer than \(Self.maximumAttestationObject) bytes")
        }
        let object: CBORValue
        do {
            object = try CBORDecoder.decode(attestationObject)
        } catch {
            throw trace.failed("12 attestation object", .attestationMalformed, "not one CBOR item: \(error)")
        }
        guard object.mapValue != nil, let format = object["fmt"]?.textValue, let statement = object["attStmt"], statement.mapValue != nil,
            let authDataBytes = object["authData"]?.bytesValue
        else { throw trace.failed("12 attestation object", .attestationMalformed, "not a map of fmt, attStmt and authData") }
        let authData: AuthenticatorData
        do {
            authData = try AuthenticatorData(authDataBytes)
        } catch {
            throw trace.failed("12 attestation object", error.code, error.detail)
        }
        guard let credential = authData.attestedCredential else {
            throw trace.failed("12 attestation object", .attestationMalformed, "the authenticator data has no attested credential data")
        }
        trace.passed("12 attestation object", "fmt \(format)")
        // Steps 13–17. rpIdHash and flags.
        try checkAuthenticatorData(authData, trace: &trace)
        // Step 19. The credential's algorithm is one offered.
        let publicKey: WebAuthnPublicKey
        do {
            publicKey = try WebAuthnPublicKey(cose: credential.publicKey)
        } catch {
            throw trace.failed("19 algorithm", error.code, error.detail)
        }
        try trace.require(
            "19 algorithm", algorithms.contains(publicKey.algorithm), else: .webauthnUnsupportedAlgorithm,
            "the credential's algorithm \(publicKey.algorithm.rawValue) was not offered", passed: "\(publicKey.algorithm)")
        // Steps 21–24. The attestation statement, by format, and its trust.
        let trust = try verifyStatement(
            format: format, statement: statement, authData: authData, credential: credential, publicKey: publicKey,
            clientDataHash: clientDataHash, at: date, trace: &trace)
        if let status = metadata.refusal(for: credential.aaguid) {
            throw trace.failed("24 trust", .attestationRevoked, "the authenticator model \(Hex.encode(credential.aaguid)) has FIDO status \(status)")
        }
        if requireTrustedAttestation, trust != .trusted {
            throw trace.failed("24 trust", .webauthnAttestationInvalid, "the policy requires an attestation chaining to a trust anchor (\(trust.rawValue))")
        }
        trace.passed("24 trust", trust.rawValue)
        // Step 25. The credential id length.
        try trace.require(
            "25 credential id", (16...AuthenticatorData.maximumCredentialIDLength).contains(credential.credentialID.count), else: .attestationMalformed,
            "the credential id is \(credential.credentialID.count) bytes (16–1023)", passed: "\(credential.credentialID.count) bytes")
        return VerifiedCredential(
            credentialID: credential.credentialID, publicKey: publicKey, publicKeyCOSE: credential.publicKey.encoded, signCount: authData.signCount,
            aaguid: credential.aaguid, format: format, trust: trust, userVerified: authData.flags.contains(.userVerified),
            backupEligible: authData.flags.contains(.backupEligible), backedUp: authData.flags.contains(.backedUp))
    }

    // MARK: Authentication (§7.2)

    /// Verifies an assertion by the credential `publicKey` whose stored counter is `storedSignCount`.
    public func verifyAuthentication(
        clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8], challenge: [UInt8], publicKey: WebAuthnPublicKey,
        storedSignCount: UInt32, userHandle: [UInt8]? = nil, trace: inout AttestationTrace
    ) throws(AttestationFailure) -> VerifiedAssertion {
        let (clientDataHash, authData) = try assertionSteps10To20(
            clientDataJSON: clientDataJSON, authenticatorData: authenticatorData, challenge: challenge, trace: &trace)
        // Step 21. The signature over authenticatorData ‖ SHA-256(clientDataJSON).
        try trace.require(
            "21 signature", publicKey.isValidSignature(signature, for: authenticatorData + clientDataHash), else: .webauthnSignatureInvalid,
            "the signature does not verify with the credential's public key", passed: "\(publicKey.algorithm)")
        // Step 22. The counter: when either is non-zero, the new one must be greater.
        if authData.signCount != 0 || storedSignCount != 0 {
            try trace.require(
                "22 sign count", authData.signCount > storedSignCount, else: .webauthnCounterRegressed,
                "the counter \(authData.signCount) is not greater than the stored \(storedSignCount): the authenticator may be cloned",
                passed: "\(storedSignCount) → \(authData.signCount)")
        } else {
            trace.passed("22 sign count", "the authenticator keeps no counter")
        }
        return VerifiedAssertion(
            signCount: authData.signCount, userVerified: authData.flags.contains(.userVerified), backedUp: authData.flags.contains(.backedUp),
            userHandle: userHandle)
    }

    /// Steps 10–20 of an assertion — the client data, rpIdHash and flags, everything but the signature and the counter —
    /// so that a caller can refuse a malformed or foreign assertion before it reserves a counted attempt
    /// (``verifyAuthentication(clientDataJSON:authenticatorData:signature:challenge:publicKey:storedSignCount:userHandle:trace:)``
    /// repeats them). `requireUserVerified` also demands the UV flag (step 17).
    public func checkAssertionBeforeSignature(
        clientDataJSON: [UInt8], authenticatorData: [UInt8], challenge: [UInt8], requireUserVerified: Bool, trace: inout AttestationTrace
    ) throws(AttestationFailure) {
        let (_, authData) = try assertionSteps10To20(
            clientDataJSON: clientDataJSON, authenticatorData: authenticatorData, challenge: challenge, trace: &trace)
        if requireUserVerified {
            try trace.require(
                "17 user verified", authData.flags.contains(.userVerified), else: .webauthnUserNotVerified, "the UV flag is not set", passed: "UV")
        }
    }

    /// Steps 10–20 of an assertion: the client data (10–15, its hash returned), then the authenticator data's
    /// rpIdHash and flags (16–20).
    private func assertionSteps10To20(
        clientDataJSON: [UInt8], authenticatorData: [UInt8], challenge: [UInt8], trace: inout AttestationTrace
    ) throws(AttestationFailure) -> ([UInt8], AuthenticatorData) {
        let clientDataHash = try checkClientData(clientDataJSON, type: "webauthn.get", challenge: challenge, trace: &trace)
        let authData: AuthenticatorData
        do {
            authData = try AuthenticatorData(authenticatorData)
        } catch {
            throw trace.failed("16 authenticator data", error.code, error.detail)
        }
        try checkAuthenticatorData(authData, trace: &trace)
        return (clientDataHash, authData)
    }

    // MARK: Shared steps

    /// The client data's type, challenge and origin; returns its SHA-256.
    func checkClientData(_ bytes: [UInt8], type: String, challenge: [UInt8], trace: inout AttestationTrace) throws(AttestationFailure) -> [UInt8] {
        let step = "client data"
        guard bytes.count <= Self.maximumClientData, case .object(let fields)? = try? JSONValue.parse(Data(bytes)) else {
            throw trace.failed(step, .webauthnClientDataInvalid, "clientDataJSON is not a JSON object of at most \(Self.maximumClientData) bytes")
        }
        guard fields["type"]?.stringValue == type else {
            throw trace.failed(step, .webauthnClientDataInvalid, "type is not \(type)")
        }
        guard let presented = fields["challenge"]?.stringValue, presented == Base64URL.encode(Data(challenge)) else {
            throw trace.failed(step, .webauthnClientDataInvalid, "the challenge is not this ceremony's")
        }
        guard let origin = fields["origin"]?.stringValue, origins.contains(origin) else {
            throw trace.failed(step, .webauthnClientDataInvalid, "the origin \(fields["origin"]?.stringValue?.prefix(100) ?? "(none)") is not accepted")
        }
        if case .bool(true)? = fields["crossOrigin"] {
            throw trace.failed(step, .webauthnClientDataInvalid, "cross-origin ceremonies are not accepted")
        }
        trace.passed(step, "\(type), challenge matches, origin \(origin)")
        return Array(SHA256.hash(data: bytes))
    }

    /// rpIdHash, user presence and verification, backup flags.
    func checkAuthenticatorData(_ authData: AuthenticatorData, trace: inout AttestationTrace) throws(AttestationFailure) {
        try trace.require(
            "rp id", authData.rpIDHash == Array(SHA256.hash(data: Array(rpID.utf8))), else: .webauthnRelyingPartyMismatch,
            "rpIdHash is not SHA-256 of \(rpID)", passed: rpID)
        try trace.require("user present", authData.flags.contains(.userPresent), else: .webauthnUserNotVerified, "the UP flag is not set", passed: "UP")
        if requireUserVerification {
            try trace.require(
                "user verified", authData.flags.contains(.userVerified), else: .webauthnUserNotVerified, "the policy requires UV; the flag is not set",
                passed: "UV")
        }
        try trace.require(
            "backup flags", authData.flags.contains(.backupEligible) || !authData.flags.contains(.backedUp), else: .attestationMalformed,
            "BS is set without BE", passed: "BE \(authData.flags.contains(.backupEligible)), BS \(authData.flags.contains(.backedUp))")
    }

    /// §8.7 `none`, §8.2 `packed` (self and x5c), §8.6 `fido-u2f`, §8.8 `apple`, §8.4 `android-key`, §8.3 `tpm`.
    func verifyStatement(
        format: String, statement: CBORValue, authData: AuthenticatorData, credential: AuthenticatorData.AttestedCredential,
        publicKey: WebAuthnPublicKey, clientDataHash: [UInt8], at date: Date, trace: inout AttestationTrace
    ) throws(AttestationFailure) -> AttestationTrust {
        let step = "22 attestation statement"
        switch format {
        case "none":
            guard statement.mapValue?.isEmpty == true else { throw trace.failed(step, .webauthnAttestationInvalid, "a none statement must be empty") }
            trace.passed(step, "none")
            return .none
        case "packed":
            guard let alg = statement["alg"]?.intValue, let signature = statement["sig"]?.bytesValue else {
                throw trace.failed(step, .webauthnAttestationInvalid, "packed needs alg and sig")
            }
            let signed = authData.bytes + clientDataHash
            guard let x5c = statement["x5c"] else {
                // Self attestation: the credential key signs, with its own algorithm.
                guard alg == publicKey.algorithm.rawValue else {
                    throw trace.failed(step, .webauthnAttestationInvalid, "self attestation's alg \(alg) is not the credential's")
                }
                try trace.require(
                    step, publicKey.isValidSignature(signature, for: signed), else: .webauthnAttestationInvalid,
                    "the self-attestation signature does not verify", passed: "packed self attestation")
                return .selfAttested
            }
            let chain = try certificates(x5c, step: step, trace: &trace)
            let leaf = chain.leaf
            guard let key = Self.signatureKey(leaf.publicKey, alg: alg), key.isValidSignature(signature, for: signed) else {
                throw trace.failed(step, .webauthnAttestationInvalid, "the attestation signature does not verify with the certificate's key (alg \(alg))")
            }
            try checkPackedCertificate(leaf, aaguid: credential.aaguid, step: step, trace: &trace)
            trace.passed(step, "packed with \(chain.certificates.count) certificate(s)")
            return trustOf(chain, format: format, aaguid: credential.aaguid, at: date, trace: &trace)
        case "fido-u2f":
            guard let signature = statement["sig"]?.bytesValue, let x5c = statement["x5c"], x5c.arrayValue?.count == 1 else {
                throw trace.failed(step, .webauthnAttestationInvalid, "fido-u2f needs sig and exactly one x5c certificate")
            }
            let chain = try certificates(x5c, step: step, trace: &trace)
            guard let key = P256.Signing.PublicKey(chain.leaf.publicKey), case .es256(let credentialKey) = publicKey else {
                throw trace.failed(step, .webauthnAttestationInvalid, "fido-u2f needs P-256 keys (certificate and credential)")
            }
            let data = [0x00] + authData.rpIDHash + clientDataHash + credential.credentialID + Array(credentialKey.x963Representation)
            guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature), key.isValidSignature(parsed, for: data) else {
                throw trace.failed(step, .webauthnAttestationInvalid, "the U2F signature does not verify")
            }
            trace.passed(step, "fido-u2f")
            return trustOf(chain, format: format, aaguid: credential.aaguid, at: date, trace: &trace)
        case "apple":
            let chain = try verifyApple(statement, authData: authData, publicKey: publicKey, clientDataHash: clientDataHash, step: step, trace: &trace)
            return trustOf(chain, format: format, aaguid: credential.aaguid, at: date, trace: &trace)
        case "tpm":
            let chain = try verifyTPM(
                statement, authData: authData, credential: credential, publicKey: publicKey, clientDataHash: clientDataHash, step: step, trace: &trace)
            // The AIK's critical subject alternative name was checked by verifyTPM (§8.3.1).
            return trustOf(
                chain, format: format, aaguid: credential.aaguid, at: date,
                rules: CertificateChainValidator.Rules(checkedCritical: [.X509ExtensionID.subjectAlternativeName]), trace: &trace)
        case "android-key":
            let chain = try verifyAndroidKey(
                statement, authData: authData, publicKey: publicKey, clientDataHash: clientDataHash, step: step, trace: &trace)
            return trustOf(chain, format: format, aaguid: credential.aaguid, at: date, rules: AndroidKeyAttestation.chainRules, trace: &trace)
        default:
            throw trace.failed(
                step, .webauthnAttestationInvalid, "attestation format \(format.prefix(32)) is not supported (none, packed, fido-u2f, apple, android-key, tpm)")
        }
    }

    func certificates(
        _ x5c: CBORValue, step: String, nullLeafSignatureParameters: Bool = false, trace: inout AttestationTrace
    ) throws(AttestationFailure) -> CertificateChainValidator.Chain {
        guard let items = x5c.arrayValue, !items.isEmpty, items.count <= 6 else {
            throw trace.failed(step, .webauthnAttestationInvalid, "x5c must hold 1–6 certificates")
        }
        var der: [[UInt8]] = []
        for item in items {
            guard let bytes = item.bytesValue else { throw trace.failed(step, .attestationMalformed, "x5c holds a non-byte-string item") }
            der.append(bytes)
        }
        do {
            return try CertificateChainValidator.Chain(der: der, step: step, nullLeafSignatureParameters: nullLeafSignatureParameters)
        } catch {
            throw trace.failed(step, error.code, error.detail)
        }
    }

    /// §8.2.1: version 3; subject with C, O, CN and OU "Authenticator Attestation"; not a CA; the AAGUID extension,
    /// when present, not critical and equal to the credential's.
    func checkPackedCertificate(_ certificate: Certificate, aaguid: [UInt8], step: String, trace: inout AttestationTrace) throws(AttestationFailure) {
        guard certificate.version == .v3 else { throw trace.failed(step, .webauthnAttestationInvalid, "the attestation certificate is not version 3") }
        let subject = certificate.subject.description
        guard subject.contains("OU=Authenticator Attestation"), subject.contains("C="), subject.contains("O="), subject.contains("CN=") else {
            throw trace.failed(step, .webauthnAttestationInvalid, "the attestation certificate's subject lacks C, O, CN or OU=Authenticator Attestation")
        }
        if case .isCertificateAuthority? = try? certificate.extensions.basicConstraints {
            throw trace.failed(step, .webauthnAttestationInvalid, "the attestation certificate is a CA")
        }
        if let ext = certificate.extensions[oid: [1, 3, 6, 1, 4, 1, 45724, 1, 1, 4]] {
            // An OCTET STRING holding the AAGUID.
            guard !ext.critical, let node = try? DER.parse(ext.value), node.identifier == .octetString, case .primitive(let value) = node.content,
                Array(value) == aaguid
            else { throw trace.failed(step, .webauthnAttestationInvalid, "the certificate's AAGUID extension does not match the credential's") }
        }
    }

    /// Whether `chain` reaches the roots for this model: its own roots when `metadata` lists some (only those), else
    /// the format's known roots and `attestationAnchors`.
    func trustOf(
        _ chain: CertificateChainValidator.Chain, format: String, aaguid: [UInt8], at date: Date,
        rules: CertificateChainValidator.Rules = CertificateChainValidator.Rules(), trace: inout AttestationTrace
    ) -> AttestationTrust {
        let anchors = metadata.anchors(for: aaguid) ?? (formatAnchors[format].map { $0.adding(attestationAnchors) } ?? attestationAnchors)
        guard !anchors.roots.isEmpty else {
            trace.passed("23 attestation chain", "no trust anchor configured for this model")
            return .untrusted
        }
        var inner = AttestationTrace()
        do {
            try CertificateChainValidator(anchors: anchors, rules: rules).validate(chain, at: date, step: "23 attestation chain", trace: &inner)
            trace.passed("23 attestation chain", "chains to a trust anchor")
            return .trusted
        } catch {
            trace.passed("23 attestation chain", "chains to no trust anchor: \(error.detail)")
            return .untrusted
        }
    }

    /// The attestation certificate's key, for the statement's `alg`.
    static func signatureKey(_ key: Certificate.PublicKey, alg: Int64) -> WebAuthnPublicKey? {
        switch alg {
        case -7: if let p256 = P256.Signing.PublicKey(key) { return .es256(p256) }
        case -257: if let rsa = _RSA.Signing.PublicKey(key) { return .rs256(rsa) }
        case -8: if let ed25519 = Curve25519.Signing.PublicKey(key) { return .eddsa(ed25519) }
        default: break
        }
        return nil
    }
}
