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

        /// Parses DER certificates, leaf first.
        public init(der: [[UInt8]], step: String) throws(AttestationFailure) {
            guard !der.isEmpty else { throw AttestationFailure(.attestationMalformed, step: step, "the certificate chain is empty") }
            var certificates: [Certificate] = []
            for (index, bytes) in der.enumerated() {
                guard bytes.count <= 16 * 1024 else {
                    throw AttestationFailure(.attestationMalformed, step: step, "certificate \(index) is longer than 16 KiB")
                }
                do {
                    certificates.append(try Certificate(derEncoded: bytes))
                } catch {
                    throw AttestationFailure(.attestationMalformed, step: step, "certificate \(index) is not a DER X.509 certificate")
                }
            }
            self.certificates = certificates
            self.der = der
        }

        public var leaf: Certificate { certificates[0] }
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
                anchors.roots.filter { $0.subject == top.issuer && $0.publicKey.isValidSignature(top.signature, for: top) })
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
            guard issuer.publicKey.isValidSignature(certificate.signature, for: certificate) else {
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
