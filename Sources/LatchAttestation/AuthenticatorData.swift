import LatchCBOR
import LatchModel

/// Authenticator data (WebAuthn Level 3 §6.1), the byte string App Attest and every WebAuthn attestation and
/// assertion sign: `rpIdHash(32) ‖ flags(1) ‖ signCount(4, big-endian) ‖ [attested credential data] ‖ [extensions]`.
public struct AuthenticatorData: Sendable, Hashable {
    /// The flag bits (§6.1, "flags").
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        /// User present.
        public static let userPresent = Flags(rawValue: 0x01)
        /// User verified.
        public static let userVerified = Flags(rawValue: 0x04)
        /// Backup eligible.
        public static let backupEligible = Flags(rawValue: 0x08)
        /// Backed up.
        public static let backedUp = Flags(rawValue: 0x10)
        /// Attested credential data included.
        public static let attestedCredentialData = Flags(rawValue: 0x40)
        /// Extension data included.
        public static let extensionData = Flags(rawValue: 0x80)
    }

    /// Attested credential data (§6.5.2): `aaguid(16) ‖ credentialIdLength(2) ‖ credentialId ‖ credentialPublicKey`.
    public struct AttestedCredential: Sendable, Hashable {
        public var aaguid: [UInt8]
        public var credentialID: [UInt8]
        /// The credential public key, a COSE_Key map.
        public var publicKey: CBORValue
    }

    /// Longest credential id (WebAuthn §5.1: at most 1023 bytes).
    public static let maximumCredentialIDLength = 1023
    /// Longest authenticator data Latch reads.
    public static let maximumLength = 16 * 1024

    /// The bytes as received (they are what the signatures cover).
    public let bytes: [UInt8]
    public let rpIDHash: [UInt8]
    public let flags: Flags
    public let signCount: UInt32
    public let attestedCredential: AttestedCredential?
    /// The extensions map, when the ED flag is set.
    public let extensions: CBORValue?

    /// Parses authenticator data; the attested credential data and extensions must be present exactly when their
    /// flags say so, and nothing may follow them — except, with `unflaggedExtensions`, one CBOR map after the
    /// credential key without the ED flag: App Attest writes that (Apple's own 2026 example does), and Latch reads it
    /// as extensions there and nowhere else.
    public init(_ bytes: [UInt8], unflaggedExtensions: Bool = false) throws(AttestationFailure) {
        func malformed(_ detail: String) -> AttestationFailure {
            AttestationFailure(.attestationMalformed, step: "authenticator data", detail)
        }
        guard bytes.count <= Self.maximumLength else { throw malformed("longer than \(Self.maximumLength) bytes") }
        guard bytes.count >= 37 else { throw malformed("shorter than 37 bytes") }
        self.bytes = bytes
        rpIDHash = Array(bytes[0..<32])
        flags = Flags(rawValue: bytes[32])
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var offset = 37
        if flags.contains(.attestedCredentialData) {
            guard bytes.count - offset >= 18 else { throw malformed("attested credential data is truncated") }
            let aaguid = Array(bytes[offset..<offset + 16])
            let length = Int(bytes[offset + 16]) << 8 | Int(bytes[offset + 17])
            offset += 18
            guard length <= Self.maximumCredentialIDLength else { throw malformed("the credential id is longer than 1023 bytes") }
            guard bytes.count - offset >= length else { throw malformed("the credential id is truncated") }
            let credentialID = Array(bytes[offset..<offset + length])
            offset += length
            let key: CBORValue
            let end: Int
            do {
                (key, end) = try CBORDecoder.decodePrefix(bytes[offset...])
            } catch {
                throw malformed("the credential public key is not CBOR: \(error)")
            }
            guard key.mapValue != nil else { throw malformed("the credential public key is not a CBOR map") }
            offset += end
            attestedCredential = AttestedCredential(aaguid: aaguid, credentialID: credentialID, publicKey: key)
        } else {
            attestedCredential = nil
        }
        if flags.contains(.extensionData) || (unflaggedExtensions && attestedCredential != nil && offset < bytes.count) {
            let value: CBORValue
            do {
                value = try CBORDecoder.decode(bytes[offset...])
            } catch {
                throw malformed("the extensions are not one CBOR item: \(error)")
            }
            guard value.mapValue != nil else { throw malformed("the extensions are not a CBOR map") }
            extensions = value
            offset = bytes.count
        } else {
            extensions = nil
        }
        guard offset == bytes.count else { throw malformed("\(bytes.count - offset) bytes follow the authenticator data") }
    }
}
