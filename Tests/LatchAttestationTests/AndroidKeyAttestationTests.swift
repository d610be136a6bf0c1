import Crypto
import Foundation
@testable import LatchAttestation
import LatchJOSE
import LatchModel
import SwiftASN1
import Testing
import X509

@Suite struct AndroidKeyAttestationTests {
    static let google = CertificateChainValidator(
        anchors: try! TrustAnchors(pem: KnownRoots.googleHardwareAttestation), rules: AndroidKeyAttestation.chainRules)
    static let collector = "com.google.wireless.android.security.attestationverifier.collector"
    static let googleDigest = Hex.decode("103938ee4537e59e8ee792f654504fb8346fc6b346d0bbc4415fc339fcfc8ec1")!

    static func der(_ pem: String) -> [[UInt8]] {
        try! PEMDocument.parseMultiple(pemString: pem).map(\.derBytes)
    }

    static func date(_ iso: String) -> Date { try! Date(iso, strategy: .iso8601) }

    func verify(
        _ chain: [[UInt8]], challenge: String, apps: [String: Set<[UInt8]>]?, policy: AndroidKeyAttestation.Policy = .init(requireVerifiedBoot: false),
        at date: Date, validator: CertificateChainValidator = google
    ) throws(AttestationFailure) -> AndroidKeyAttestation.VerifiedKey {
        var trace = AttestationTrace()
        return try AndroidKeyAttestation.verify(
            chain: chain, challenge: Array(challenge.utf8), apps: apps, policy: policy, chains: validator, at: date, trace: &trace)
    }

    func code(_ body: () throws -> Any) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error as? AttestationFailure)?.code.rawValue ?? "\(error)"
        }
    }

    @Test("Real Pixel chains verify to Google's roots at their documented times (TEE P-256, StrongBox RSA, the 2026 EC root)")
    func realChains() throws {
        let apps = [Self.collector: Set([Self.googleDigest])]
        let tee = try verify(Self.der(AndroidChains.akitaTEE), challenge: "challenge", apps: apps, at: Self.date("2024-10-01T00:00:00Z"))
        #expect(tee.securityLevel == .trustedEnvironment && tee.publicKey.algorithm == .ES256 && tee.packageName == Self.collector)
        let strongBox = try verify(
            Self.der(AndroidChains.akitaStrongBox), challenge: "challenge", apps: apps,
            policy: .init(minimumSecurityLevel: .strongBox, requireVerifiedBoot: false), at: Self.date("2024-10-01T00:00:00Z"))
        #expect(strongBox.securityLevel == .strongBox && strongBox.publicKey.algorithm == .RS256)
        let tegu = try verify(
            Self.der(AndroidChains.teguTEE), challenge: "6417f92c-daef-4cc1-8828-5bb39338ffd5",
            apps: ["com.google.android.attestation": [Self.googleDigest]], policy: .init(requireVerifiedBoot: true), at: Self.date("2026-03-01T00:00:00Z"))
        #expect(tegu.description.hardwareEnforced.rootOfTrust?.verifiedBootState == .verified)
    }

    @Test("Each policy and binding check refuses with its own code")
    func refusals() throws {
        let chain = Self.der(AndroidChains.akitaTEE)
        let apps = [Self.collector: Set([Self.googleDigest])]
        let at = Self.date("2024-10-01T00:00:00Z")
        #expect(code { try verify(chain, challenge: "other", apps: apps, at: at) } == "attestation_challenge_mismatch")
        #expect(code { try verify(chain, challenge: "challenge", apps: apps, policy: .init(), at: at) } == "attestation_policy_failed")
        #expect(code {
            try verify(chain, challenge: "challenge", apps: apps, policy: .init(minimumSecurityLevel: .strongBox, requireVerifiedBoot: false), at: at)
        } == "attestation_policy_failed")
        #expect(code { try verify(chain, challenge: "challenge", apps: ["com.example.other": [Self.googleDigest]], at: at) } == "attestation_app_mismatch")
        #expect(code { try verify(chain, challenge: "challenge", apps: [Self.collector: [Array(repeating: 1, count: 32)]], at: at) } == "attestation_app_mismatch")
        // The RKP intermediates live for weeks: today the chain has expired.
        #expect(code { try verify(chain, challenge: "challenge", apps: apps, at: Self.date("2026-11-23T00:00:00Z")) } == "attestation_untrusted")
        // Revoked: Droid CA3's serial on the status list.
        let status = Array(#"{"entries": {"bfc61f12db0cce5bc16832d05e052e488cb284": {"status": "REVOKED", "reason": "KEY_COMPROMISE"}}}"#.utf8)
        let revoked = try AndroidKeyAttestation.revokedSerials(statusJSON: status)
        #expect(code {
            try verify(chain, challenge: "challenge", apps: apps, policy: .init(requireVerifiedBoot: false, revokedSerials: revoked), at: at)
        } == "attestation_revoked")
        // A chain to another root; a chain with its intermediate left out.
        let test = try TestAttestationAuthority.create(now: at)
        #expect(code {
            try verify(chain, challenge: "challenge", apps: apps, at: at, validator: CertificateChainValidator(anchors: test.anchors, rules: AndroidKeyAttestation.chainRules))
        } == "attestation_untrusted")
        #expect(code { try verify([chain[0]] + chain[2...], challenge: "challenge", apps: apps, at: at) } == "attestation_untrusted")
    }

    @Test("The test authority's chains verify under its root and carry the requested challenge, app and boot state")
    func testAuthority() throws {
        let now = Self.date("2026-11-23T00:00:00Z")
        let authority = try TestAttestationAuthority.create(now: now)
        let validator = CertificateChainValidator(anchors: authority.anchors, rules: AndroidKeyAttestation.chainRules)
        let key = P256.Signing.PrivateKey()
        let digest = Array(SHA256.hash(data: [1, 2, 3]))
        let chain = try authority.androidKeyChain(
            deviceKey: .init(key.publicKey), challenge: Array("lrc_x".utf8), packageName: "com.example.app", signatureDigest: digest, now: now)
        let verified = try verify(chain, challenge: "lrc_x", apps: ["com.example.app": [digest]], policy: .init(), at: now, validator: validator)
        #expect(verified.publicKey.derRepresentation == PublicKey(p256: key.publicKey).derRepresentation)
        let unverifiedBoot = try authority.androidKeyChain(
            deviceKey: .init(key.publicKey), challenge: Array("lrc_x".utf8), packageName: "com.example.app", signatureDigest: digest,
            verifiedBoot: false, now: now)
        #expect(code { try verify(unverifiedBoot, challenge: "lrc_x", apps: ["com.example.app": [digest]], policy: .init(), at: now, validator: validator) }
            == "attestation_policy_failed")
    }

    /// Every single-byte change of a real chain is refused (never a crash); a bounded, seeded loop.
    @Test("Mutated real chains are refused, never crash (500 seeded mutations)")
    func mutations() throws {
        let chain = Self.der(AndroidChains.akitaTEE)
        let apps = [Self.collector: Set([Self.googleDigest])]
        let at = Self.date("2024-10-01T00:00:00Z")
        var generator = SplitMix64(seed: 0x4C41_5443)
        var accepted: [Int: Int] = [:]
        for _ in 0..<500 {
            var mutated = chain
            let certificate = Int.random(in: 0..<mutated.count, using: &generator)
            let index = Int.random(in: 0..<mutated[certificate].count, using: &generator)
            mutated[certificate][index] ^= UInt8.random(in: 1...255, using: &generator)
            // A fresh validator: nothing cached from the unmutated chain.
            let validator = CertificateChainValidator(anchors: try TrustAnchors(pem: KnownRoots.googleHardwareAttestation), rules: AndroidKeyAttestation.chainRules)
            if (try? verify(mutated, challenge: "challenge", apps: apps, at: at, validator: validator)) != nil { accepted[certificate, default: 0] += 1 }
        }
        // Every byte of the leaf and the intermediates is under a signature: no change of them verifies. The root is
        // trusted by its key (Google re-issues it with the same key), so changes elsewhere in it do not matter.
        #expect(accepted.keys.allSatisfy { $0 == chain.count - 1 }, "\(accepted)")
    }
}

@Suite struct RootReissueTests {
    /// Google re-issues its RSA root with the same key: a chain ending at an expired issue is trusted by the key,
    /// when an issue valid at the verification time is a trust anchor.
    @Test("A chain ending at an expired re-issue of a trusted root (same key) is trusted by the key")
    func expiredReissue() throws {
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        let authority = try TestAttestationAuthority.create(now: now)
        let key = P256.Signing.PrivateKey()
        var chain = try authority.androidKeyChain(
            deviceKey: .init(key.publicKey), challenge: [1], packageName: "com.example.app", signatureDigest: Array(repeating: 2, count: 32), now: now)
        let expiredIssue = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(7), publicKey: authority.root.publicKey,
            notValidBefore: Date(timeIntervalSince1970: 1_000_000_000), notValidAfter: Date(timeIntervalSince1970: 1_100_000_000),
            issuer: authority.root.subject, subject: authority.root.subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions { Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil)) },
            issuerPrivateKey: .init(authority.rootKey))
        var serializer = DER.Serializer()
        try serializer.serialize(expiredIssue)
        chain[chain.count - 1] = serializer.serializedBytes
        var trace = AttestationTrace()
        let validator = CertificateChainValidator(anchors: authority.anchors, rules: AndroidKeyAttestation.chainRules)
        _ = try AndroidKeyAttestation.verify(
            chain: chain, challenge: [1], apps: nil, policy: .init(), chains: validator, at: now, trace: &trace)
        // With only the expired issue as anchor, nothing is trusted.
        var refused = AttestationTrace()
        #expect(throws: AttestationFailure.self) {
            try AndroidKeyAttestation.verify(
                chain: chain, challenge: [1], apps: nil, policy: .init(),
                chains: CertificateChainValidator(anchors: TrustAnchors([expiredIssue]), rules: AndroidKeyAttestation.chainRules), at: now, trace: &refused)
        }
    }
}

/// StrongBox leaves whose `ecdsa-with-SHA256` AlgorithmIdentifier carries an explicit NULL (swift-certificates
/// rejects it; RFC 5758 §3.2 says to omit the parameters).
@Suite struct NullSignatureParameterTests {
    /// A DER TLV (the encoder the parser's NULL-stripping uses).
    static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] { NullSignatureParameters.encoded(tag, content) }

    static let ecdsaSHA256: [UInt8] = [0x30, 0x0A, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02]
    static let ecdsaSHA256Null: [UInt8] = [0x30, 0x0C, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03, 0x02, 0x05, 0x00]

    /// SYNTHETIC: `certificate` re-assembled with the NULL in its outer signature AlgorithmIdentifier and in its TBS
    /// signature field (`tbsNull`), and signed by `key` over the TBS as assembled (or, `signStripped`, over the TBS without the
    /// NULL). Throwaway keys generated by the test; no real certificate is re-encoded.
    static func withNull(
        _ certificate: Certificate, signedBy key: P256.Signing.PrivateKey, tbsNull: Bool = true, signStripped: Bool = false
    ) throws -> [UInt8] {
        let node = try DER.parse(try Self.encode(certificate))
        guard case .constructed(let top) = node.content, case .constructed(let fields) = Array(top)[0].content else { throw Refused() }
        var plain: [UInt8] = []
        var null: [UInt8] = []
        for (index, field) in Array(fields).enumerated() {
            plain += index == 2 ? ecdsaSHA256 : Array(field.encodedBytes)
            null += index == 2 ? ecdsaSHA256Null : Array(field.encodedBytes)
        }
        let tbs = tlv(0x30, tbsNull ? null : plain)
        let signed = signStripped ? tlv(0x30, plain) : tbs
        let signature = try key.signature(for: signed).derRepresentation
        return tlv(0x30, tbs + ecdsaSHA256Null + tlv(0x03, [0] + Array(signature)))
    }

    struct Refused: Error {}

    static func encode(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    @Test("A real StrongBox leaf with ecdsa-with-SHA256 + NULL: refused by the strict parse, read leniently — its P-256 key and StrongBox KeyDescription")
    func realLeaf() throws {
        let der = AndroidKeyAttestationTests.der(AndroidChains.strongBoxNullLeaf)
        #expect(der.count == 1)
        do {
            _ = try CertificateChainValidator.Chain(der: der, step: "certificates")
            Issue.record("the strict parse accepted the NULL")
        } catch {
            #expect(error.code == .attestationMalformed && error.detail == "certificate 0 is not a DER X.509 certificate")
        }
        let chain = try CertificateChainValidator.Chain(der: der, step: "certificates", nullLeafSignatureParameters: true)
        #expect(chain.leaf.signatureAlgorithm == .ecdsaWithSHA256)
        #expect(P256.Signing.PublicKey(chain.leaf.publicKey) != nil)
        let ext = try #require(chain.leaf.extensions[oid: AndroidKeyDescription.extensionObjectIdentifier])
        let description = try AndroidKeyDescription(extensionValue: Array(ext.value))
        #expect(description.attestationSecurityLevel == .strongBox)
        #expect(description.attestationChallenge == Array("45cfbada-a952-4ea5-93bc-f2ed365e8db8".utf8))
    }

    @Test("SYNTHETIC chain: a leaf with the NULL validates over its TBS as signed; signed without the NULL, a NULL in the outer field only, or a NULL in the issuer is refused")
    func syntheticChain() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let rootKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("Synthetic StrongBox test root") }
        let root = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(7), publicKey: .init(rootKey.publicKey),
            notValidBefore: now - 3600, notValidAfter: now + 3600, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true))
            }, issuerPrivateKey: .init(rootKey))
        let leaf = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(1), publicKey: .init(P256.Signing.PrivateKey().publicKey),
            notValidBefore: now - 60, notValidAfter: now + 60, issuer: rootName, subject: try DistinguishedName { CommonName("Android Keystore Key") },
            signatureAlgorithm: .ecdsaWithSHA256, extensions: Certificate.Extensions(), issuerPrivateKey: .init(rootKey))
        let validator = CertificateChainValidator(anchors: TrustAnchors([root]), rules: AndroidKeyAttestation.chainRules)
        let rootDER = try Self.encode(root)

        func validate(_ der: [[UInt8]]) throws(AttestationFailure) {
            var trace = AttestationTrace()
            try validator.validate(
                try CertificateChainValidator.Chain(der: der, step: "certificates", nullLeafSignatureParameters: true), at: now, step: "chain",
                trace: &trace)
        }
        // The leaf with the NULL in both fields, signed over those bytes: accepted (only leniently).
        let good = try Self.withNull(leaf, signedBy: rootKey)
        try validate([good, rootDER])
        #expect(throws: AttestationFailure.self) { try CertificateChainValidator.Chain(der: [good, rootDER], step: "certificates") }
        // Signed over the TBS without the NULL: the signature does not verify.
        #expect(throws: AttestationFailure.self) { try validate([try Self.withNull(leaf, signedBy: rootKey, signStripped: true), rootDER]) }
        // The NULL in the outer field only: the fields differ, refused. (A NULL in the TBS field only is swift-certificates'
        // own business: it parses such a certificate strictly, as before this leniency.)
        #expect(throws: AttestationFailure.self) { try validate([try Self.withNull(leaf, signedBy: rootKey, tbsNull: false), rootDER]) }
        // The NULL in the issuer (not the leaf): refused.
        let nullRoot = try Self.withNull(root, signedBy: rootKey)
        do {
            try validate([try Self.encode(leaf), nullRoot])
            Issue.record("a NULL in the issuer was accepted")
        } catch let error as AttestationFailure {
            #expect(error.detail == "certificate 1 is not a DER X.509 certificate")
        }
    }
}
