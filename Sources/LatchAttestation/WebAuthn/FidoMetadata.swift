import Crypto
import CryptoExtras
import Foundation
import LatchJOSE
import LatchModel
import SwiftASN1
import X509

/// What a relying party knows about authenticator models (AAGUIDs): the roots their attestation certificates chain
/// to, and their latest FIDO status. Read offline from a folder of PEM files (`<aaguid>.pem`) or from a FIDO
/// Metadata Service BLOB file (MDS3: a JWS whose `x5c` chain must reach the configured metadata roots).
///
/// With an entry for a model, its attestation must chain to that entry's roots — a root vouches only for the models
/// it is listed for, never for another vendor's AAGUID. A model whose latest status says its keys are compromised or
/// its certification revoked is refused at registration.
public struct FidoMetadata: Sendable {
    /// One authenticator model.
    public struct Entry: Sendable {
        /// The roots this model's attestation certificates chain to (`attestationRootCertificates`).
        public var anchors: TrustAnchors?
        /// The latest status report's `status` (e.g. `FIDO_CERTIFIED_L1`, `REVOKED`).
        public var status: String?
        /// The model's name (`description`).
        public var name: String?

        public init(anchors: TrustAnchors? = nil, status: String? = nil, name: String? = nil) {
            self.anchors = anchors
            self.status = status
            self.name = name
        }
    }

    /// Entries by AAGUID, 32 lower-case hex digits.
    public var entries: [String: Entry]
    /// The BLOB's serial number (`no`) and `nextUpdate` (ISO 8601 date), when read from one.
    public var serial: Int64?
    public var nextUpdate: String?

    /// MDS statuses under which a model's attestation is not accepted (FIDO Metadata Service v3.0 §3.1.4).
    public static let refusedStatuses: Set<String> = [
        "USER_VERIFICATION_BYPASS", "ATTESTATION_KEY_COMPROMISE", "USER_KEY_REMOTE_COMPROMISE", "USER_KEY_PHYSICAL_COMPROMISE", "REVOKED",
    ]
    /// Longest BLOB file read (the public BLOB is a few MiB).
    public static let maximumBlobBytes = 32 * 1024 * 1024

    public init(entries: [String: Entry] = [:]) {
        self.entries = entries
    }

    /// The roots listed for `aaguid`, if any.
    public func anchors(for aaguid: [UInt8]) -> TrustAnchors? { entries[Hex.encode(aaguid)]?.anchors }

    /// The status that makes `aaguid` refused, if its latest one does.
    public func refusal(for aaguid: [UInt8]) -> String? {
        guard let status = entries[Hex.encode(aaguid)]?.status, Self.refusedStatuses.contains(status) else { return nil }
        return status
    }

    /// These entries, with `other`'s added (an AAGUID in both keeps both sets of roots and `other`'s status).
    public func merging(_ other: FidoMetadata) -> FidoMetadata {
        var merged = self
        for (aaguid, entry) in other.entries {
            var combined = merged.entries[aaguid] ?? Entry()
            if let anchors = entry.anchors { combined.anchors = combined.anchors.map { $0.adding(anchors) } ?? anchors }
            combined.status = entry.status ?? combined.status
            combined.name = entry.name ?? combined.name
            merged.entries[aaguid] = combined
        }
        merged.serial = other.serial ?? serial
        merged.nextUpdate = other.nextUpdate ?? nextUpdate
        return merged
    }

    /// A 16-byte AAGUID written as 32 hex digits, dashes allowed; nil otherwise.
    public static func aaguid(_ text: some StringProtocol) -> String? {
        let hex = text.lowercased().filter { $0 != "-" }
        guard hex.count == 32, hex.allSatisfy(\.isHexDigit) else { return nil }
        return hex
    }

    // MARK: A folder of PEM files

    /// Every `<aaguid>.pem` in `directory` (the AAGUID as 32 hex digits, dashes allowed) holds that model's roots;
    /// other files are ignored.
    public static func folder(_ directory: String) throws(AttestationFailure) -> FidoMetadata {
        let step = "trust anchors folder"
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw AttestationFailure(.attestationMalformed, step: step, "cannot list \(directory): \(error.localizedDescription)")
        }
        var metadata = FidoMetadata()
        for name in names.sorted() where name.hasSuffix(".pem") {
            guard let aaguid = aaguid(name.dropLast(4)) else { continue }
            let path = (directory as NSString).appendingPathComponent(name)
            guard let data = FileManager.default.contents(atPath: path), data.count <= 1024 * 1024 else {
                throw AttestationFailure(.attestationMalformed, step: step, "cannot read \(name) (at most 1 MiB)")
            }
            do {
                metadata.entries[aaguid] = Entry(anchors: try TrustAnchors(pem: String(decoding: data, as: UTF8.self)))
            } catch {
                throw AttestationFailure(.attestationMalformed, step: step, "\(name): \(error.detail)")
            }
        }
        return metadata
    }

    // MARK: An MDS3 BLOB

    /// Verifies an MDS3 BLOB offline and reads its entries (FIDO Metadata Service v3.0 §3.2):
    /// - Step 1. A compact JWS of at most 32 MiB, `alg` RS256 or ES256.
    /// - Step 2. Its `x5c` chain (leaf first) reaches `roots` at `date` (RFC 5280 path checks; revocation lists are
    ///   not fetched — the check is offline).
    /// - Step 3. The signature verifies with the leaf's key.
    /// - Step 4. The payload has `no`, `nextUpdate` and `entries`; each entry with an `aaguid` contributes its
    ///   `metadataStatement.attestationRootCertificates` (base64 DER) and its latest `statusReports` status (by
    ///   `effectiveDate`). Entries without an AAGUID (U2F key identifiers) are skipped.
    public static func blob(_ text: String, roots: TrustAnchors, at date: Date, trace: inout AttestationTrace) throws(AttestationFailure) -> FidoMetadata {
        // Step 1.
        let token: ParsedJWS
        do {
            token = try ParsedJWS(text.trimmingCharacters(in: .whitespacesAndNewlines), maximumLength: maximumBlobBytes)
        } catch {
            throw trace.failed("1 BLOB", .attestationMalformed, "not a compact JWS: \(error)")
        }
        trace.passed("1 BLOB", "alg \(token.algorithmName)")
        // Step 2.
        guard case .array(let x5c)? = token.header["x5c"], !x5c.isEmpty, x5c.count <= 6 else {
            throw trace.failed("2 BLOB certificates", .attestationMalformed, "the header has no x5c of 1–6 certificates")
        }
        var der: [[UInt8]] = []
        for item in x5c {
            guard let text = item.stringValue, let bytes = Data(base64Encoded: text) else {
                throw trace.failed("2 BLOB certificates", .attestationMalformed, "an x5c item is not base64 DER")
            }
            der.append(Array(bytes))
        }
        let chain: CertificateChainValidator.Chain
        do {
            chain = try CertificateChainValidator.Chain(der: der, step: "2 BLOB certificates")
        } catch {
            throw trace.failed("2 BLOB certificates", error.code, error.detail)
        }
        try CertificateChainValidator(anchors: roots).validate(chain, at: date, step: "2 BLOB certificates", trace: &trace)
        // Step 3.
        let key: PublicKey
        if let p256 = P256.Signing.PublicKey(chain.leaf.publicKey) {
            key = PublicKey(p256: p256)
        } else if let rsa = _RSA.Signing.PublicKey(chain.leaf.publicKey), rsa.keySizeInBits >= 2048 {
            key = PublicKey(rsa: rsa)
        } else {
            throw trace.failed("3 BLOB signature", .attestationMalformed, "the signing certificate's key is neither P-256 nor RSA of 2048 bits or more")
        }
        let verified: VerifiedJWS
        do {
            verified = try token.verify(withCertifiedKey: key)
        } catch {
            throw trace.failed("3 BLOB signature", .attestationMalformed, "\(error)")
        }
        trace.passed("3 BLOB signature", "\(verified.algorithm.rawValue) by \(chain.leaf.subject)")
        // Step 4.
        let payload = verified.claims
        guard case .int(let serial)? = payload["no"], let nextUpdate = payload["nextUpdate"]?.stringValue, case .array(let items)? = payload["entries"]
        else { throw trace.failed("4 BLOB entries", .attestationMalformed, "the payload lacks no, nextUpdate or entries") }
        var metadata = FidoMetadata()
        metadata.serial = serial
        metadata.nextUpdate = nextUpdate
        for item in items {
            guard let text = item["aaguid"]?.stringValue else { continue }
            guard let aaguid = aaguid(text) else {
                throw trace.failed("4 BLOB entries", .attestationMalformed, "an entry's aaguid \(text.prefix(40)) is not 16 bytes of hex")
            }
            var entry = Entry(name: item["metadataStatement"]?["description"]?.stringValue)
            if case .array(let certificates)? = item["metadataStatement"]?["attestationRootCertificates"], !certificates.isEmpty {
                var parsed: [Certificate] = []
                for certificate in certificates {
                    guard let text = certificate.stringValue, let bytes = Data(base64Encoded: text),
                        let root = try? Certificate(derEncoded: Array(bytes))
                    else { throw trace.failed("4 BLOB entries", .attestationMalformed, "\(aaguid): a root certificate is not base64 DER") }
                    parsed.append(root)
                }
                entry.anchors = TrustAnchors(parsed)
            }
            if case .array(let reports)? = item["statusReports"] {
                let latest = reports.max { ($0["effectiveDate"]?.stringValue ?? "") < ($1["effectiveDate"]?.stringValue ?? "") }
                entry.status = latest?["status"]?.stringValue
            }
            metadata.entries[aaguid] = entry
        }
        trace.passed("4 BLOB entries", "serial \(serial), next update \(nextUpdate), \(metadata.entries.count) models")
        return metadata
    }
}
