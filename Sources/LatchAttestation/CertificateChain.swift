import Crypto
import Foundation
import LatchModel
import SwiftASN1
import X509

/// Root certificates a kind of evidence must chain to.
public struct TrustAnchors: Sendable {
    public let roots: [Certificate]

    public init(_ roots: [Certificate]) { self.roots = roots }

    /// Every `CERTIFICATE` block of `pem` (one file may hold several roots).
    public init(pem: String) throws(AttestationFailure) {
        var roots: [Certificate] = []
        do {
            for document in try PEMDocument.parseMultiple(pemString: pem) {
                roots.append(try Certificate(pemDocument: document))
            }
        } catch {
            throw AttestationFailure(.attestationMalformed, step: "trust anchors", "not PEM certificates: \(error)")
        }
        guard !roots.isEmpty else { throw AttestationFailure(.attestationMalformed, step: "trust anchors", "no certificate in the PEM text") }
        self.roots = roots
    }

    /// These roots and `other`'s.
    public func adding(_ other: TrustAnchors) -> TrustAnchors { TrustAnchors(roots + other.roots) }
}

/// Validates the certificate chains attestation formats carry (`x5c`, leaf first, each certificate issued by the
/// next) to a set of ``TrustAnchors`` at a given time.
///
/// The order of an attestation chain is fixed by its format, so no path building is needed: each link is checked
/// in place (RFC 5280 §6.1 as it applies to a fixed path — signature, issuer name, validity at the verification
/// time, CA constraints and path length of every issuer, no unknown critical extension). The top certificate must
/// be a trust anchor's key (a root re-issued with the same key stays trusted — Google re-issues its RSA
/// attestation root so) or be signed by one.
///
/// Verified issuers are cached (bounded) by their DER with the window in which the whole path above them is valid,
/// so a registration pays for its leaf's signature only.
public final class CertificateChainValidator: Sendable {
    /// What a chain may look like.
    public struct Rules: Sendable {
        /// Longest accepted chain.
        public var maximumLength = 6
        /// Whether issuers below the root must say they are CAs (basic constraints `cA`). Android key attestation
        /// chains from some devices carry batch certificates without it; such chains are accepted only when this is
        /// off, and only below a trusted root.
        public var requireCAIssuers = true

        /// Critical extensions the caller has checked itself (the TPM AIK certificate's subject alternative name), to
        /// accept besides the ones this validator understands.
        public var checkedCritical: Set<ASN1ObjectIdentifier> = []

        public init(maximumLength: Int = 6, requireCAIssuers: Bool = true, checkedCritical: Set<ASN1ObjectIdentifier> = []) {
            self.maximumLength = maximumLength
            self.requireCAIssuers = requireCAIssuers
            self.checkedCritical = checkedCritical
        }
    }

    /// A parsed chain with the DER of each certificate.
    public struct Chain: Sendable {
        public let certificates: [Certificate]
        let der: [[UInt8]]
        /// For a leaf accepted with a NULL in its ECDSA signature AlgorithmIdentifier: the TBS bytes as signed (with the
        /// NULL) and the signature value; `certificates[0]` is then a copy parsed without the NULL.
        let leafAsSigned: (tbs: [UInt8], signature: [UInt8])?

        /// Parses DER certificates, leaf first. `nullLeafSignatureParameters` accepts an explicit NULL as the
        /// parameters of the leaf's `ecdsa-with-SHA256/384/512` AlgorithmIdentifier (in both the certificate's and the
        /// TBS's signature field, which must be identical) — RFC 5758 §3.2 says to omit them, but StrongBox
        /// implementations of Android key attestation emit the NULL. The leaf's signature is then verified over the
        /// TBS bytes as signed; its key and extensions are read from a copy without the NULL. A NULL anywhere else,
        /// or in any other certificate, is still refused.
        public init(der: [[UInt8]], step: String, nullLeafSignatureParameters: Bool = false) throws(AttestationFailure) {
            guard !der.isEmpty else { throw AttestationFailure(.attestationMalformed, step: step, "the certificate chain is empty") }
            var certificates: [Certificate] = []
            var leafAsSigned: (tbs: [UInt8], signature: [UInt8])?
            for (index, bytes) in der.enumerated() {
                guard bytes.count <= 16 * 1024 else {
                    throw AttestationFailure(.attestationMalformed, step: step, "certificate \(index) is longer than 16 KiB")
                }
                do {
                    certificates.append(try Certificate(derEncoded: bytes))
                } catch {
                    guard index == 0, nullLeafSignatureParameters, let lenient = NullSignatureParameters.strip(bytes),
                        let copy = try? Certificate(derEncoded: lenient.der)
                    else {
                        throw AttestationFailure(.attestationMalformed, step: step, "certificate \(index) is not a DER X.509 certificate")
                    }
                    certificates.append(copy)
                    leafAsSigned = (lenient.tbs, lenient.signature)
                }
            }
            self.certificates = certificates
            self.der = der
            self.leafAsSigned = leafAsSigned
        }

        public var leaf: Certificate { certificates[0] }

        /// Whether certificate `index`'s signature verifies with `key` — over the TBS bytes as signed.
        func signatureVerifies(_ index: Int, with key: Certificate.PublicKey) -> Bool {
            let certificate = certificates[index]
            if index == 0, let asSigned = leafAsSigned {
                return key.isValidSignature(asSigned.signature, for: asSigned.tbs, signatureAlgorithm: certificate.signatureAlgorithm)
            }
            return key.isValidSignature(certificate.signature, for: certificate)
        }
    }

    private struct Window: Sendable {
        var notBefore: Date
        var notAfter: Date
        func contains(_ date: Date) -> Bool { notBefore <= date && date <= notAfter }
    }

    let anchors: TrustAnchors
    let rules: Rules
    private let cache = Locked<[Data: Window]>([:])
    static let cacheLimit = 1024

    /// The critical extensions this validator understands.
    static let understoodCritical: Set<ASN1ObjectIdentifier> = [
        .X509ExtensionID.basicConstraints, .X509ExtensionID.keyUsage, .X509ExtensionID.extendedKeyUsage,
    ]

    public init(anchors: TrustAnchors, rules: Rules = Rules()) {
        self.anchors = anchors
        self.rules = rules
    }

    /// Validates `chain` at `date`; records the step `step` in `trace`.
    public func validate(_ chain: Chain, at date: Date, step: String, trace: inout AttestationTrace) throws(AttestationFailure) {
        let certificates = chain.certificates
        guard certificates.count <= rules.maximumLength else {
            throw trace.failed(step, .attestationMalformed, "the chain has more than \(rules.maximumLength) certificates")
        }
        // Walk down from the top: the first certificate that is cached as trusted at `date` ends the walk upwards.
        var trustedFrom = certificates.count
        var window = Window(notBefore: .distantPast, notAfter: .distantFuture)
        for index in stride(from: certificates.count - 1, through: 1, by: -1) {
            let key = Data(SHA256.hash(data: chain.der[index]))
            if let cached = cache.withLock({ $0[key] }), cached.contains(date) {
                trustedFrom = index
                window = cached
            } else {
                break
            }
        }
        if trustedFrom == certificates.count {
            // Nothing cached: the top must be a trust anchor's key, or be signed by one.
            let top = certificates[certificates.count - 1]
            // Of several issues of one root (same key), the one valid at `date` decides.
            func preferValid(_ roots: [Certificate]) -> Certificate? {
                roots.first { $0.notValidBefore <= date && date <= $0.notValidAfter } ?? roots.first
            }
            if let root = preferValid(anchors.roots.filter { $0.publicKey == top.publicKey }) {
                // The chain carries a copy of a trust anchor (perhaps an older, expired issue of it): trust is in the
                // key, so the anchor's validity counts, not the copy's.
                window = try narrowed(window, by: root, at: date, step: step, trace: &trace, what: "the trust anchor")
            } else if let root = preferValid(
                anchors.roots.filter { $0.subject == top.issuer && chain.signatureVerifies(certificates.count - 1, with: $0.publicKey) })
            {
                window = try narrowed(window, by: root, at: date, step: step, trace: &trace, what: "the trust anchor")
                window = try narrowed(window, by: top, at: date, step: step, trace: &trace, what: "certificate \(certificates.count - 1)")
            } else {
                throw trace.failed(step, .attestationUntrusted, "the chain does not end at a trusted root (issuer \(top.issuer))")
            }
            if certificates.count > 1 { remember(chain.der[certificates.count - 1], window) }
            trustedFrom = certificates.count - 1
        }
        // Each certificate below is issued by the one above it.
        var index = trustedFrom - 1
        while index >= 0 {
            let certificate = certificates[index]
            let issuer = certificates[index + 1]
            guard certificate.issuer == issuer.subject else {
                throw trace.failed(step, .attestationUntrusted, "certificate \(index)'s issuer is not certificate \(index + 1)'s subject")
            }
            guard chain.signatureVerifies(index, with: issuer.publicKey) else {
                throw trace.failed(step, .attestationUntrusted, "certificate \(index)'s signature does not verify with certificate \(index + 1)'s key")
            }
            window = try narrowed(window, by: certificate, at: date, step: step, trace: &trace, what: "certificate \(index)")
            if index >= 1 { remember(chain.der[index], window) }
            index -= 1
        }
        // CA constraints depend on the position in this chain: checked every time (no cryptography).
        for index in stride(from: certificates.count - 1, through: 1, by: -1) {
            try checkIssuer(certificates[index], depth: index - 1, at: index, step: step, trace: &trace)
        }
        trace.passed(step, "\(certificates.count) certificate(s) chain to a trusted root, valid at \(Self.format(date))")
    }

    /// `window` narrowed to `certificate`'s validity, which must hold at `date`; its critical extensions must be
    /// understood.
    private func narrowed(
        _ window: Window, by certificate: Certificate, at date: Date, step: String, trace: inout AttestationTrace, what: String
    ) throws(AttestationFailure) -> Window {
        guard certificate.notValidBefore <= date else {
            throw trace.failed(step, .attestationUntrusted, "\(what) is not valid before \(Self.format(certificate.notValidBefore))")
        }
        guard date <= certificate.notValidAfter else {
            throw trace.failed(step, .attestationUntrusted, "\(what) expired at \(Self.format(certificate.notValidAfter))")
        }
        for ext in certificate.extensions where ext.critical && !Self.understoodCritical.contains(ext.oid) && !rules.checkedCritical.contains(ext.oid) {
            throw trace.failed(step, .attestationUntrusted, "\(what) has an unknown critical extension \(ext.oid)")
        }
        return Window(notBefore: max(window.notBefore, certificate.notValidBefore), notAfter: min(window.notAfter, certificate.notValidAfter))
    }

    /// An issuer that has `depth` CA certificates below it (not counting the leaf) must be a CA allowing that path
    /// length, and may sign certificates when it has a key usage.
    private func checkIssuer(_ certificate: Certificate, depth: Int, at index: Int, step: String, trace: inout AttestationTrace) throws(AttestationFailure) {
        let constraints: BasicConstraints?
        let usage: KeyUsage?
        do {
            constraints = try certificate.extensions.basicConstraints
            usage = try certificate.extensions.keyUsage
        } catch {
            throw trace.failed(step, .attestationMalformed, "certificate \(index) has malformed basic constraints or key usage")
        }
        switch constraints {
        case .isCertificateAuthority(let maximumPathLength):
            if let maximumPathLength, depth > maximumPathLength {
                throw trace.failed(step, .attestationUntrusted, "certificate \(index)'s path length constraint is exceeded")
            }
        case .notCertificateAuthority, nil:
            if rules.requireCAIssuers {
                throw trace.failed(step, .attestationUntrusted, "certificate \(index) issues a certificate but is not a CA")
            }
        }
        if let usage, !usage.keyCertSign, rules.requireCAIssuers {
            throw trace.failed(step, .attestationUntrusted, "certificate \(index)'s key usage does not allow signing certificates")
        }
    }

    private func remember(_ der: [UInt8], _ window: Window) {
        let key = Data(SHA256.hash(data: der))
        cache.withLock { cache in
            if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[key] = window
        }
    }

    static func format(_ date: Date) -> String { date.formatted(.iso8601) }
}

/// The one leniency of ``CertificateChainValidator/Chain``: an ECDSA signature AlgorithmIdentifier with explicit NULL
/// parameters (`30 0C 06 08 2A8648CE3D0403 0x 05 00`), which swift-certificates rejects (RFC 5758 §3.2: omitted).
enum NullSignatureParameters {
    /// The ECDSA AlgorithmIdentifiers (SHA-256, SHA-384, SHA-512) with a NULL, and without.
    static func withoutNull(_ algorithm: [UInt8]) -> [UInt8]? {
        let prefix: [UInt8] = [0x30, 0x0C, 0x06, 0x08, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x04, 0x03]
        guard algorithm.count == 14, Array(algorithm.prefix(11)) == prefix, (0x02...0x04).contains(algorithm[11]),
            algorithm[12] == 0x05, algorithm[13] == 0x00
        else { return nil }
        return [0x30, 0x0A] + algorithm[2..<12]
    }

    /// A certificate whose outer and TBS signature AlgorithmIdentifiers are the same ECDSA one with a NULL: a copy with
    /// both NULLs removed (lengths re-encoded), the TBS bytes as signed, and the signature value. Nil for anything else.
    static func strip(_ der: [UInt8]) -> (der: [UInt8], tbs: [UInt8], signature: [UInt8])? {
        guard let root = try? DER.parse(der), root.identifier == .sequence, case .constructed(let top) = root.content,
            root.encodedBytes.count == der.count
        else { return nil }
        let parts = Array(top)
        guard parts.count == 3, parts[0].identifier == .sequence, case .constructed(let tbsNodes) = parts[0].content,
            parts[2].identifier == .bitString, case .primitive(let bits) = parts[2].content, bits.first == 0
        else { return nil }
        let algorithm = Array(parts[1].encodedBytes)
        guard let stripped = withoutNull(algorithm) else { return nil }
        // The TBS's signature field follows the optional [0] version and the serial number.
        let fields = Array(tbsNodes)
        let at = fields.first?.identifier == ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific) ? 2 : 1
        guard fields.count > at, Array(fields[at].encodedBytes) == algorithm else { return nil }
        var tbsContent: [UInt8] = []
        for (index, field) in fields.enumerated() { tbsContent += index == at ? stripped : Array(field.encodedBytes) }
        let copy = encoded(0x30, encoded(0x30, tbsContent) + stripped + Array(parts[2].encodedBytes))
        return (copy, Array(parts[0].encodedBytes), Array(bits.dropFirst()))
    }

    /// A DER TLV with a definite length.
    static func encoded(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        guard content.count >= 128 else { return [tag, UInt8(content.count)] + content }
        var length: [UInt8] = []
        var remaining = content.count
        while remaining > 0 {
            length.insert(UInt8(remaining & 0xFF), at: 0)
            remaining >>= 8
        }
        return [tag, 0x80 | UInt8(length.count)] + length + content
    }
}
