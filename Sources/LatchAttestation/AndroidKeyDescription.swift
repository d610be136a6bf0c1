// Android Keystore key attestation: the KeyDescription certificate extension.
//
// The extension (OID 1.3.6.1.4.1.11129.2.1.17) sits in the leaf certificate of the chain that
// `KeyStore.getCertificateChain()` returns for an attested key. Its value is the DER encoding of
//
//   KeyDescription ::= SEQUENCE {
//       attestationVersion        INTEGER,   -- 1, 2, 3, 4, 100, 200, 300, 400, 500
//       attestationSecurityLevel  SecurityLevel,
//       keyMintVersion            INTEGER,   -- "keymasterVersion" before attestation version 100
//       keyMintSecurityLevel      SecurityLevel,
//       attestationChallenge      OCTET STRING,
//       uniqueId                  OCTET STRING,
//       softwareEnforced          AuthorizationList,
//       hardwareEnforced          AuthorizationList }   -- "teeEnforced" in older documents
//
//   SecurityLevel ::= ENUMERATED { Software (0), TrustedEnvironment (1), StrongBox (2) }
//
//   AuthorizationList ::= SEQUENCE {            -- every field [n] EXPLICIT ... OPTIONAL,
//       purpose                   [1]   SET OF INTEGER,          -- in ascending tag order
//       algorithm                 [2]   INTEGER,
//       keySize                   [3]   INTEGER,
//       digest                    [5]   SET OF INTEGER,
//       padding                   [6]   SET OF INTEGER,
//       ecCurve                   [10]  INTEGER,
//       noAuthRequired            [503] NULL,
//       creationDateTime          [701] INTEGER,                 -- milliseconds since the epoch
//       origin                    [702] INTEGER,
//       rootOfTrust               [704] RootOfTrust,
//       osVersion                 [705] INTEGER,                 -- e.g. 160000 for Android 16
//       osPatchLevel              [706] INTEGER,                 -- YYYYMM
//       attestationApplicationId  [709] OCTET STRING,            -- DER of AttestationApplicationId
//       vendorPatchLevel          [718] INTEGER,                 -- YYYYMMDD
//       bootPatchLevel            [719] INTEGER,                 -- YYYYMMDD
//       moduleHash                [724] OCTET STRING,            -- attestation version 400 and later
//       ... many more tags (see `AuthorizationList.otherElements`) }
//
//   RootOfTrust ::= SEQUENCE {
//       verifiedBootKey   OCTET STRING,
//       deviceLocked      BOOLEAN,
//       verifiedBootState VerifiedBootState,
//       verifiedBootHash  OCTET STRING }             -- attestation version 3 and later
//
//   VerifiedBootState ::= ENUMERATED { Verified (0), SelfSigned (1), Unverified (2), Failed (3) }
//
//   AttestationApplicationId ::= SEQUENCE {
//       packageInfos      SET OF AttestationPackageInfo,
//       signatureDigests  SET OF OCTET STRING }
//
//   AttestationPackageInfo ::= SEQUENCE { packageName OCTET STRING, version INTEGER }
//
// Schema: "Verify hardware-backed key pairs with key attestation" (developer.android.com) and
// source.android.com/docs/security/features/keystore/attestation. Tag numbers beyond 30 use the
// high-tag-number form, which swift-asn1 reads and writes through
// `ASN1Identifier(tagWithNumber:tagClass:)`.
//
// Parsing policy (the input is attacker-controlled):
//   - Strict DER everywhere (minimal lengths and integers, no indefinite lengths, no trailing
//     bytes), with one documented exception: `RootOfTrust.deviceLocked` accepts any non-zero
//     BOOLEAN content octet as true (BER), because real devices emit 0x01 there. Google's own
//     verifier test data (android/keyattestation, testdata/invalid/malformed_rot_device_locked.pem)
//     is such a device certificate and Google's verifier reads it as `true`.
//   - Unknown AuthorizationList tags are kept verbatim in `otherElements` (future versions add
//     fields); they must still be a well-formed EXPLICIT wrapper around exactly one DER element.
//   - A tag appearing twice in one AuthorizationList is refused (`duplicate_tag`): two different
//     values for, say, osPatchLevel would be ambiguous.
//   - Tags out of ascending order (a DER violation) are accepted and reported through
//     `AuthorizationList.tagsInAscendingOrder`, so a policy can refuse them. This matches Google's
//     verifier (android/keyattestation), which parses such records and enforces the order only
//     through an opt-in constraint (TagOrderConstraint.STRICT). The encoder always writes
//     ascending order.
//   - Known fields with the wrong ASN.1 type, unknown SecurityLevel / VerifiedBootState values,
//     INTEGERs that do not fit in `Int`, and extension values above 64 KiB are refused.
//   - The order of SET OF members is not checked (swift-asn1 does not check it either); the
//     encoder writes DER order. Repeated members of an INTEGER SET collapse into one.

import LatchModel
import SwiftASN1

// MARK: - Errors

/// Why an Android KeyDescription extension value was refused. `reason` is a stable,
/// machine-readable string (safe to log, to count in metrics and to return to a client);
/// `detail` is a human-readable diagnostic that may change between versions.
public struct AndroidKeyDescriptionError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// The extension value is larger than `AndroidKeyDescription.maximumEncodedSize`.
        case tooLarge = "too_large"
        /// Not DER, not the KeyDescription structure, or a known field has the wrong type or range.
        case malformed = "malformed"
        /// `attestationVersion` is not in `AndroidKeyDescription.supportedAttestationVersions`.
        case unsupportedVersion = "unsupported_version"
        /// A SecurityLevel ENUMERATED value outside {0, 1, 2}.
        case invalidSecurityLevel = "invalid_security_level"
        /// A VerifiedBootState ENUMERATED value outside {0, 1, 2, 3}.
        case invalidVerifiedBootState = "invalid_verified_boot_state"
        /// The same tag appears twice in one AuthorizationList.
        case duplicateTag = "duplicate_tag"
        /// The DER inside attestationApplicationId [709] is not an AttestationApplicationId.
        case malformedAttestationApplicationId = "malformed_attestation_application_id"
    }

    public let code: Code
    public let detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// Stable failure reason, e.g. `"malformed"`, `"unsupported_version"`.
    public var reason: String { self.code.rawValue }

    public var description: String { "AndroidKeyDescriptionError(\(self.reason)): \(self.detail)" }
}

// MARK: - Model

/// The parsed Android Keystore KeyDescription (attestation extension) of an attested key.
public struct AndroidKeyDescription: Hashable, Sendable {
    /// OID of the attestation extension, dotted form.
    public static let extensionOID = "1.3.6.1.4.1.11129.2.1.17"

    /// OID of the attestation extension (e.g. for swift-certificates' `Certificate.Extensions`).
    public static let extensionObjectIdentifier: ASN1ObjectIdentifier = [1, 3, 6, 1, 4, 1, 11129, 2, 1, 17]

    /// Extension values larger than this are refused without being parsed (64 KiB; real ones
    /// are a few hundred bytes).
    public static let maximumEncodedSize = 64 * 1024

    /// Attestation versions this parser accepts: Keymaster 2, 3, 4, 4.1 (1, 2, 3, 4) and
    /// KeyMint 1, 2, 3, 4 and the Android 17 generation (100, 200, 300, 400, 500). They share
    /// the top-level layout; newer versions only add AuthorizationList tags.
    public static let supportedAttestationVersions: Set<Int> = [1, 2, 3, 4, 100, 200, 300, 400, 500]

    public enum SecurityLevel: Int, Hashable, Sendable, CaseIterable {
        case software = 0
        case trustedEnvironment = 1
        case strongBox = 2
    }

    public var attestationVersion: Int
    public var attestationSecurityLevel: SecurityLevel
    /// KeyMint version (attestation version >= 100) or Keymaster version (older ones).
    public var keyMintVersion: Int
    public var keyMintSecurityLevel: SecurityLevel
    public var attestationChallenge: [UInt8]
    public var uniqueId: [UInt8]
    public var softwareEnforced: AuthorizationList
    /// Enforced by the TEE or StrongBox ("teeEnforced" in older schema versions).
    public var hardwareEnforced: AuthorizationList

    /// Alias of `keyMintVersion`, the field's name before attestation version 100.
    public var keymasterVersion: Int {
        get { self.keyMintVersion }
        set { self.keyMintVersion = newValue }
    }

    public init(
        attestationVersion: Int,
        attestationSecurityLevel: SecurityLevel,
        keyMintVersion: Int,
        keyMintSecurityLevel: SecurityLevel,
        attestationChallenge: [UInt8],
        uniqueId: [UInt8] = [],
        softwareEnforced: AuthorizationList = AuthorizationList(),
        hardwareEnforced: AuthorizationList = AuthorizationList()
    ) {
        self.attestationVersion = attestationVersion
        self.attestationSecurityLevel = attestationSecurityLevel
        self.keyMintVersion = keyMintVersion
        self.keyMintSecurityLevel = keyMintSecurityLevel
        self.attestationChallenge = attestationChallenge
        self.uniqueId = uniqueId
        self.softwareEnforced = softwareEnforced
        self.hardwareEnforced = hardwareEnforced
    }
}

extension AndroidKeyDescription {
    public enum VerifiedBootState: Int, Hashable, Sendable, CaseIterable {
        case verified = 0
        case selfSigned = 1
        case unverified = 2
        case failed = 3
    }

    /// Verified-boot state of the device when the key was attested.
    public struct RootOfTrust: Hashable, Sendable {
        /// Digest of the key that verified the boot image (all zeros or empty when unlocked).
        public var verifiedBootKey: [UInt8]
        public var deviceLocked: Bool
        public var verifiedBootState: VerifiedBootState
        /// Digest of the verified boot data; absent before attestation version 3.
        public var verifiedBootHash: [UInt8]?

        public init(
            verifiedBootKey: [UInt8],
            deviceLocked: Bool,
            verifiedBootState: VerifiedBootState,
            verifiedBootHash: [UInt8]? = nil
        ) {
            self.verifiedBootKey = verifiedBootKey
            self.deviceLocked = deviceLocked
            self.verifiedBootState = verifiedBootState
            self.verifiedBootHash = verifiedBootHash
        }
    }

    /// One package that shares the UID owning the attested key.
    public struct AttestationPackageInfo: Hashable, Sendable {
        /// Raw OCTET STRING content (UTF-8 in practice).
        public var packageName: [UInt8]
        public var version: Int

        public init(packageName: [UInt8], version: Int) {
            self.packageName = packageName
            self.version = version
        }

        public init(packageName: String, version: Int) {
            self.init(packageName: Array(packageName.utf8), version: version)
        }

        /// `packageName` decoded as UTF-8, or nil when it is not valid UTF-8.
        public var packageNameString: String? {
            String(validatingUTF8: self.packageName)
        }
    }

    /// The apps allowed to use the key: package names/versions and the SHA-256 digests of their
    /// signing certificates. Carried DER-encoded inside the attestationApplicationId OCTET STRING.
    public struct AttestationApplicationId: Hashable, Sendable {
        /// In encoded order. The encoder writes DER SET OF order (sorted by encoding), so a value
        /// built by hand with several entries may come back reordered.
        public var packageInfos: [AttestationPackageInfo]
        /// In encoded order (see `packageInfos`).
        public var signatureDigests: [[UInt8]]

        public init(packageInfos: [AttestationPackageInfo], signatureDigests: [[UInt8]]) {
            self.packageInfos = packageInfos
            self.signatureDigests = signatureDigests
        }
    }

    /// An AuthorizationList element this type does not model, kept verbatim.
    public struct UnknownAuthorization: Hashable, Sendable {
        /// Context-specific tag number (the KeyMint tag without its type bits).
        public var tag: UInt
        /// The complete DER encoding (identifier, length, content) of the single element inside
        /// the EXPLICIT tag. When built by hand it must be exactly one well-formed DER element.
        public var value: [UInt8]

        public init(tag: UInt, value: [UInt8]) {
            self.tag = tag
            self.value = value
        }
    }

    /// Key properties. Every field is optional; which list (software or hardware) carries a field
    /// says who enforces it.
    public struct AuthorizationList: Hashable, Sendable {
        /// KeyMint tag numbers of the modelled fields.
        public enum Tag {
            public static let purpose: UInt = 1
            public static let algorithm: UInt = 2
            public static let keySize: UInt = 3
            public static let digest: UInt = 5
            public static let padding: UInt = 6
            public static let ecCurve: UInt = 10
            public static let noAuthRequired: UInt = 503
            public static let creationDateTime: UInt = 701
            public static let origin: UInt = 702
            public static let rootOfTrust: UInt = 704
            public static let osVersion: UInt = 705
            public static let osPatchLevel: UInt = 706
            public static let attestationApplicationId: UInt = 709
            public static let vendorPatchLevel: UInt = 718
            public static let bootPatchLevel: UInt = 719
            public static let moduleHash: UInt = 724

            /// Every tag above; any other tag lands in `otherElements`.
            public static let modelled: Set<UInt> = [
                purpose, algorithm, keySize, digest, padding, ecCurve, noAuthRequired, creationDateTime,
                origin, rootOfTrust, osVersion, osPatchLevel, attestationApplicationId, vendorPatchLevel,
                bootPatchLevel, moduleHash,
            ]
        }

        /// KeyPurpose values: 0 encrypt, 1 decrypt, 2 sign, 3 verify, 5 wrap key, 6 agree key, 7 attest key.
        public var purpose: Set<Int>?
        /// Algorithm: 1 RSA, 3 EC, 32 AES, 33 3DES, 128 HMAC.
        public var algorithm: Int?
        public var keySize: Int?
        /// Digest: 0 none, 1 MD5, 2 SHA-1, 3 SHA-224, 4 SHA-256, 5 SHA-384, 6 SHA-512.
        public var digest: Set<Int>?
        public var padding: Set<Int>?
        /// EcCurve: 0 P-224, 1 P-256, 2 P-384, 3 P-521, 4 Curve25519.
        public var ecCurve: Int?
        /// True when the NULL-valued noAuthRequired [503] is present.
        public var noAuthRequired: Bool
        /// Milliseconds since 1970-01-01T00:00:00Z.
        public var creationDateTime: Int?
        /// KeyOrigin: 0 generated, 1 derived, 2 imported, 3 reserved, 4 securely imported.
        public var origin: Int?
        public var rootOfTrust: RootOfTrust?
        /// Android version as MMmmpp (e.g. 160000 for Android 16); 0 when unknown.
        public var osVersion: Int?
        /// YYYYMM.
        public var osPatchLevel: Int?
        public var attestationApplicationId: AttestationApplicationId?
        /// YYYYMMDD (some devices report YYYYMM).
        public var vendorPatchLevel: Int?
        /// YYYYMMDD (some devices report YYYYMM).
        public var bootPatchLevel: Int?
        /// SHA-256 of the APEX module information (attestation version 400 and later).
        public var moduleHash: [UInt8]?
        /// Elements with tags this type does not model, in encoded order. Their tags must not be
        /// in `Tag.modelled` (the parser never puts them there; the encoder would write a
        /// duplicate that the parser then refuses).
        public var otherElements: [UnknownAuthorization]
        /// False when the parsed list had its tags out of ascending order (a DER violation that
        /// the parser tolerates). Always true for hand-built values; the encoder always sorts.
        public var tagsInAscendingOrder: Bool

        public init(
            purpose: Set<Int>? = nil,
            algorithm: Int? = nil,
            keySize: Int? = nil,
            digest: Set<Int>? = nil,
            padding: Set<Int>? = nil,
            ecCurve: Int? = nil,
            noAuthRequired: Bool = false,
            creationDateTime: Int? = nil,
            origin: Int? = nil,
            rootOfTrust: RootOfTrust? = nil,
            osVersion: Int? = nil,
            osPatchLevel: Int? = nil,
            attestationApplicationId: AttestationApplicationId? = nil,
            vendorPatchLevel: Int? = nil,
            bootPatchLevel: Int? = nil,
            moduleHash: [UInt8]? = nil,
            otherElements: [UnknownAuthorization] = [],
            tagsInAscendingOrder: Bool = true
        ) {
            self.purpose = purpose
            self.algorithm = algorithm
            self.keySize = keySize
            self.digest = digest
            self.padding = padding
            self.ecCurve = ecCurve
            self.noAuthRequired = noAuthRequired
            self.creationDateTime = creationDateTime
            self.origin = origin
            self.rootOfTrust = rootOfTrust
            self.osVersion = osVersion
            self.osPatchLevel = osPatchLevel
            self.attestationApplicationId = attestationApplicationId
            self.vendorPatchLevel = vendorPatchLevel
            self.bootPatchLevel = bootPatchLevel
            self.moduleHash = moduleHash
            self.otherElements = otherElements
            self.tagsInAscendingOrder = tagsInAscendingOrder
        }
    }
}

// MARK: - Parsing

extension AndroidKeyDescription {
    /// Parses the extension's value (the content of the extnValue OCTET STRING, i.e. the DER of
    /// KeyDescription). Never traps; every failure is an `AndroidKeyDescriptionError`.
    public init(extensionValue bytes: [UInt8]) throws(AndroidKeyDescriptionError) {
        try self.init(extensionValue: bytes[...])
    }

    /// Parses the extension's value; see `init(extensionValue:)`.
    public init(extensionValue bytes: ArraySlice<UInt8>) throws(AndroidKeyDescriptionError) {
        guard bytes.count <= Self.maximumEncodedSize else {
            throw AndroidKeyDescriptionError(
                .tooLarge,
                "extension value is \(bytes.count) bytes; the limit is \(Self.maximumEncodedSize)"
            )
        }
        let root: ASN1Node
        do {
            root = try DER.parse(bytes)
        } catch {
            throw AndroidKeyDescriptionError(.malformed, "not DER: \(error)")
        }
        try self.init(derEncoded: root)
    }

    /// Parses an already DER-parsed KeyDescription node. No size limit applies here: the caller
    /// parsed the bytes.
    public init(derEncoded root: ASN1Node) throws(AndroidKeyDescriptionError) {
        do {
            self = try Self.decode(root)
        } catch let error as AndroidKeyDescriptionError {
            throw error
        } catch {
            throw AndroidKeyDescriptionError(.malformed, "\(error)")
        }
    }

    private static func decode(_ root: ASN1Node) throws -> AndroidKeyDescription {
        try DER.sequence(root, identifier: .sequence) { nodes in
            let version = try Int(derEncoded: &nodes)
            guard Self.supportedAttestationVersions.contains(version) else {
                throw AndroidKeyDescriptionError(.unsupportedVersion, "attestationVersion \(version)")
            }
            let attestationSecurityLevel = try SecurityLevel.decode(&nodes, field: "attestationSecurityLevel")
            let keyMintVersion = try Int(derEncoded: &nodes)
            let keyMintSecurityLevel = try SecurityLevel.decode(&nodes, field: "keyMintSecurityLevel")
            let challenge = try ASN1OctetString(derEncoded: &nodes)
            let uniqueId = try ASN1OctetString(derEncoded: &nodes)
            guard let softwareNode = nodes.next(), let hardwareNode = nodes.next() else {
                throw AndroidKeyDescriptionError(.malformed, "KeyDescription lacks its authorization lists")
            }
            let softwareEnforced = try AuthorizationList.decode(softwareNode)
            let hardwareEnforced = try AuthorizationList.decode(hardwareNode)
            return AndroidKeyDescription(
                attestationVersion: version,
                attestationSecurityLevel: attestationSecurityLevel,
                keyMintVersion: keyMintVersion,
                keyMintSecurityLevel: keyMintSecurityLevel,
                attestationChallenge: Array(challenge.bytes),
                uniqueId: Array(uniqueId.bytes),
                softwareEnforced: softwareEnforced,
                hardwareEnforced: hardwareEnforced
            )
        }
    }
}

extension AndroidKeyDescription.SecurityLevel {
    fileprivate static func decode(
        _ nodes: inout ASN1NodeCollection.Iterator,
        field: String
    ) throws -> Self {
        let raw = try Int(derEncoded: &nodes, withIdentifier: .enumerated)
        guard let level = Self(rawValue: raw) else {
            throw AndroidKeyDescriptionError(.invalidSecurityLevel, "\(field) = \(raw)")
        }
        return level
    }
}

extension AndroidKeyDescription.RootOfTrust {
    fileprivate static func decode(_ node: ASN1Node) throws -> Self {
        try DER.sequence(node, identifier: .sequence) { nodes in
            let key = try ASN1OctetString(derEncoded: &nodes)
            guard let lockedNode = nodes.next() else {
                throw AndroidKeyDescriptionError(.malformed, "RootOfTrust lacks deviceLocked")
            }
            // BER reading on purpose: real devices encode TRUE as 0x01 (see the file comment).
            // Identifier and length (exactly one content octet) are still checked.
            let locked = try Bool(berEncoded: lockedNode, withIdentifier: .boolean)
            let rawState = try Int(derEncoded: &nodes, withIdentifier: .enumerated)
            guard let state = AndroidKeyDescription.VerifiedBootState(rawValue: rawState) else {
                throw AndroidKeyDescriptionError(.invalidVerifiedBootState, "verifiedBootState = \(rawState)")
            }
            let hash = try nodes.next().map { try ASN1OctetString(derEncoded: $0) }
            return Self(
                verifiedBootKey: Array(key.bytes),
                deviceLocked: locked,
                verifiedBootState: state,
                verifiedBootHash: hash.map { Array($0.bytes) }
            )
        }
    }
}

extension AndroidKeyDescription.AttestationApplicationId {
    /// Decodes the DER carried inside the attestationApplicationId OCTET STRING.
    fileprivate static func decode(contentOf octets: ArraySlice<UInt8>) throws -> Self {
        do {
            let root = try DER.parse(octets)
            return try DER.sequence(root, identifier: .sequence) { nodes in
                guard let packagesNode = nodes.next(), let digestsNode = nodes.next() else {
                    throw ASN1Error.invalidASN1Object(reason: "AttestationApplicationId needs two SETs")
                }
                let packages = try DER.sequence(packagesNode, identifier: .set) { packageNodes in
                    var result: [AndroidKeyDescription.AttestationPackageInfo] = []
                    while let packageNode = packageNodes.next() {
                        result.append(try AndroidKeyDescription.AttestationPackageInfo.decode(packageNode))
                    }
                    return result
                }
                let digests = try DER.sequence(digestsNode, identifier: .set) { digestNodes in
                    var result: [[UInt8]] = []
                    while let digestNode = digestNodes.next() {
                        result.append(Array(try ASN1OctetString(derEncoded: digestNode).bytes))
                    }
                    return result
                }
                return Self(packageInfos: packages, signatureDigests: digests)
            }
        } catch {
            throw AndroidKeyDescriptionError(.malformedAttestationApplicationId, "\(error)")
        }
    }
}

extension AndroidKeyDescription.AttestationPackageInfo {
    fileprivate static func decode(_ node: ASN1Node) throws -> Self {
        try DER.sequence(node, identifier: .sequence) { nodes in
            let name = try ASN1OctetString(derEncoded: &nodes)
            let version = try Int(derEncoded: &nodes)
            return Self(packageName: Array(name.bytes), version: version)
        }
    }
}

extension AndroidKeyDescription.AuthorizationList {
    fileprivate static func decode(_ node: ASN1Node) throws -> Self {
        guard node.identifier == .sequence, case .constructed(let children) = node.content else {
            throw AndroidKeyDescriptionError(
                .malformed,
                "AuthorizationList is not a SEQUENCE (found \(node.identifier))"
            )
        }
        var list = Self()
        var seen = Set<UInt>()
        var previousTag: UInt?
        for child in children {
            guard child.identifier.tagClass == .contextSpecific, case .constructed(let wrapped) = child.content
            else {
                throw AndroidKeyDescriptionError(
                    .malformed,
                    "AuthorizationList element \(child.identifier) is not an EXPLICIT context-specific tag"
                )
            }
            var inner = wrapped.makeIterator()
            guard let value = inner.next(), inner.next() == nil else {
                throw AndroidKeyDescriptionError(
                    .malformed,
                    "AuthorizationList tag [\(child.identifier.tagNumber)] must wrap exactly one element"
                )
            }
            let tag = child.identifier.tagNumber
            guard seen.insert(tag).inserted else {
                throw AndroidKeyDescriptionError(.duplicateTag, "tag [\(tag)] appears more than once")
            }
            if let previousTag, tag < previousTag {
                list.tagsInAscendingOrder = false
            }
            previousTag = tag
            try list.decodeElement(tag: tag, value: value)
        }
        return list
    }

    private mutating func decodeElement(tag: UInt, value: ASN1Node) throws {
        typealias Tag = Self.Tag
        do {
            switch tag {
            case Tag.purpose: self.purpose = try Self.integerSet(value)
            case Tag.algorithm: self.algorithm = try Int(derEncoded: value)
            case Tag.keySize: self.keySize = try Int(derEncoded: value)
            case Tag.digest: self.digest = try Self.integerSet(value)
            case Tag.padding: self.padding = try Self.integerSet(value)
            case Tag.ecCurve: self.ecCurve = try Int(derEncoded: value)
            case Tag.noAuthRequired:
                _ = try ASN1Null(derEncoded: value)
                self.noAuthRequired = true
            case Tag.creationDateTime: self.creationDateTime = try Int(derEncoded: value)
            case Tag.origin: self.origin = try Int(derEncoded: value)
            case Tag.rootOfTrust: self.rootOfTrust = try AndroidKeyDescription.RootOfTrust.decode(value)
            case Tag.osVersion: self.osVersion = try Int(derEncoded: value)
            case Tag.osPatchLevel: self.osPatchLevel = try Int(derEncoded: value)
            case Tag.attestationApplicationId:
                let octets = try ASN1OctetString(derEncoded: value)
                self.attestationApplicationId = try AndroidKeyDescription.AttestationApplicationId.decode(
                    contentOf: octets.bytes
                )
            case Tag.vendorPatchLevel: self.vendorPatchLevel = try Int(derEncoded: value)
            case Tag.bootPatchLevel: self.bootPatchLevel = try Int(derEncoded: value)
            case Tag.moduleHash: self.moduleHash = Array(try ASN1OctetString(derEncoded: value).bytes)
            default:
                // Already validated as DER by DER.parse; kept verbatim for re-encoding.
                self.otherElements.append(
                    AndroidKeyDescription.UnknownAuthorization(tag: tag, value: Array(value.encodedBytes))
                )
            }
        } catch let error as AndroidKeyDescriptionError {
            throw error
        } catch {
            throw AndroidKeyDescriptionError(.malformed, "AuthorizationList tag [\(tag)]: \(error)")
        }
    }

    private static func integerSet(_ node: ASN1Node) throws -> Set<Int> {
        try DER.sequence(node, identifier: .set) { nodes in
            var result = Set<Int>()
            while let element = nodes.next() {
                result.insert(try Int(derEncoded: element))
            }
            return result
        }
    }
}

// MARK: - Encoding

extension AndroidKeyDescription: DERSerializable {
    /// The DER encoding of this KeyDescription: the value to put in an extension with OID
    /// `extensionOID` (for tests and simulated attestation evidence). AuthorizationList elements
    /// are written in ascending tag order and SET OF members in DER order, so parsing the result
    /// gives back an equal value (up to the ordering notes on `AttestationApplicationId` and
    /// `tagsInAscendingOrder`).
    public func derEncoded() -> [UInt8] {
        var serializer = DER.Serializer()
        self.write(into: &serializer)
        return serializer.serializedBytes
    }

    public func serialize(into coder: inout DER.Serializer) throws {
        self.write(into: &coder)
    }

    func write(into coder: inout DER.Serializer) {
        coder.appendConstructedNode(identifier: .sequence) { coder in
            coder.writeInteger(self.attestationVersion)
            coder.writeInteger(self.attestationSecurityLevel.rawValue, identifier: .enumerated)
            coder.writeInteger(self.keyMintVersion)
            coder.writeInteger(self.keyMintSecurityLevel.rawValue, identifier: .enumerated)
            coder.writeOctetString(self.attestationChallenge)
            coder.writeOctetString(self.uniqueId)
            self.softwareEnforced.write(into: &coder)
            self.hardwareEnforced.write(into: &coder)
        }
    }
}

extension AndroidKeyDescription.AuthorizationList {
    func write(into coder: inout DER.Serializer) {
        typealias Tag = Self.Tag
        var elements: [(tag: UInt, write: (inout DER.Serializer) -> Void)] = []
        func add(_ tag: UInt, _ write: @escaping (inout DER.Serializer) -> Void) {
            elements.append((tag, write))
        }
        if let purpose { add(Tag.purpose) { $0.writeIntegerSet(purpose) } }
        if let algorithm { add(Tag.algorithm) { $0.writeInteger(algorithm) } }
        if let keySize { add(Tag.keySize) { $0.writeInteger(keySize) } }
        if let digest { add(Tag.digest) { $0.writeIntegerSet(digest) } }
        if let padding { add(Tag.padding) { $0.writeIntegerSet(padding) } }
        if let ecCurve { add(Tag.ecCurve) { $0.writeInteger(ecCurve) } }
        if self.noAuthRequired { add(Tag.noAuthRequired) { $0.appendPrimitiveNode(identifier: .null) { _ in } } }
        if let creationDateTime { add(Tag.creationDateTime) { $0.writeInteger(creationDateTime) } }
        if let origin { add(Tag.origin) { $0.writeInteger(origin) } }
        if let rootOfTrust { add(Tag.rootOfTrust) { rootOfTrust.write(into: &$0) } }
        if let osVersion { add(Tag.osVersion) { $0.writeInteger(osVersion) } }
        if let osPatchLevel { add(Tag.osPatchLevel) { $0.writeInteger(osPatchLevel) } }
        if let attestationApplicationId {
            add(Tag.attestationApplicationId) { coder in
                var inner = DER.Serializer()
                attestationApplicationId.write(into: &inner)
                coder.writeOctetString(inner.serializedBytes)
            }
        }
        if let vendorPatchLevel { add(Tag.vendorPatchLevel) { $0.writeInteger(vendorPatchLevel) } }
        if let bootPatchLevel { add(Tag.bootPatchLevel) { $0.writeInteger(bootPatchLevel) } }
        if let moduleHash { add(Tag.moduleHash) { $0.writeOctetString(moduleHash) } }
        for other in self.otherElements {
            add(other.tag) { $0.serializeRawBytes(other.value) }
        }
        // Stable sort: ascending tag order, as DER requires for this SEQUENCE.
        let ordered = elements.enumerated().sorted { lhs, rhs in
            (lhs.element.tag, lhs.offset) < (rhs.element.tag, rhs.offset)
        }
        coder.appendConstructedNode(identifier: .sequence) { coder in
            for (_, element) in ordered {
                coder.appendConstructedNode(
                    identifier: ASN1Identifier(tagWithNumber: element.tag, tagClass: .contextSpecific)
                ) { coder in
                    element.write(&coder)
                }
            }
        }
    }
}

extension AndroidKeyDescription.RootOfTrust {
    func write(into coder: inout DER.Serializer) {
        coder.appendConstructedNode(identifier: .sequence) { coder in
            coder.writeOctetString(self.verifiedBootKey)
            coder.appendPrimitiveNode(identifier: .boolean) { $0.append(self.deviceLocked ? 0xFF : 0x00) }
            coder.writeInteger(self.verifiedBootState.rawValue, identifier: .enumerated)
            if let hash = self.verifiedBootHash {
                coder.writeOctetString(hash)
            }
        }
    }
}

extension AndroidKeyDescription.AttestationApplicationId {
    func write(into coder: inout DER.Serializer) {
        coder.appendConstructedNode(identifier: .sequence) { coder in
            coder.writeSetOf(self.packageInfos.map { info in
                var element = DER.Serializer()
                element.appendConstructedNode(identifier: .sequence) { coder in
                    coder.writeOctetString(info.packageName)
                    coder.writeInteger(info.version)
                }
                return element.serializedBytes
            })
            coder.writeSetOf(self.signatureDigests.map { digest in
                var element = DER.Serializer()
                element.writeOctetString(digest)
                return element.serializedBytes
            })
        }
    }
}

extension DER.Serializer {
    /// Minimal two's-complement INTEGER (or ENUMERATED) encoding; never throws.
    fileprivate mutating func writeInteger(_ value: Int, identifier: ASN1Identifier = .integer) {
        self.appendPrimitiveNode(identifier: identifier) { bytes in
            var bigEndian: [UInt8] = []
            var remaining = value
            for _ in 0..<Int.bitWidth / 8 {
                bigEndian.append(UInt8(truncatingIfNeeded: remaining))
                remaining >>= 8
            }
            bigEndian.reverse()
            // Drop leading bytes that only repeat the sign bit of the next one.
            var start = 0
            while start < bigEndian.count - 1 {
                let byte = bigEndian[start]
                let nextTopBit = bigEndian[start + 1] & 0x80
                if (byte == 0x00 && nextTopBit == 0) || (byte == 0xFF && nextTopBit != 0) {
                    start += 1
                } else {
                    break
                }
            }
            bytes.append(contentsOf: bigEndian[start...])
        }
    }

    fileprivate mutating func writeOctetString(_ content: [UInt8]) {
        self.appendPrimitiveNode(identifier: .octetString) { $0.append(contentsOf: content) }
    }

    fileprivate mutating func writeIntegerSet(_ values: Set<Int>) {
        self.writeSetOf(values.map { value in
            var element = DER.Serializer()
            element.writeInteger(value)
            return element.serializedBytes
        })
    }

    /// SET OF with members in DER order (X.690 11.6: ascending as octet strings).
    fileprivate mutating func writeSetOf(_ encodedMembers: [[UInt8]]) {
        let sorted = encodedMembers.sorted { $0.lexicographicallyPrecedes($1) }
        self.appendConstructedNode(identifier: .set) { coder in
            for member in sorted {
                coder.serializeRawBytes(member)
            }
        }
    }
}
