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
