import LatchAttestation
import Testing

@Suite("Android KeyDescription: refusals")
struct AndroidKeyDescriptionRefusalTests {
    typealias KD = AndroidKeyDescription
    typealias Code = AndroidKeyDescriptionError.Code

    static let valid = RealDeviceVectors.teguTEEv400

    /// `full` with one extra (or replacing) unknown element in hardwareEnforced: the way to put a
    /// wrongly typed value under a modelled tag.
    static func withHardwareElement(tag: UInt, value: [UInt8], clearing: (inout KD.AuthorizationList) -> Void = { _ in })
        -> [UInt8]
    {
        var kd = AndroidKeyDescriptionRoundTripTests.full
        clearing(&kd.hardwareEnforced)
        kd.hardwareEnforced.otherElements.append(.init(tag: tag, value: value))
        return kd.derEncoded()
    }

    @Test("reason strings are stable")
    func reasonStrings() {
        #expect(
            Code.allCases.map(\.rawValue) == [
                "too_large", "malformed", "unsupported_version", "invalid_security_level",
                "invalid_verified_boot_state", "duplicate_tag", "malformed_attestation_application_id",
            ]
        )
        let error = AndroidKeyDescriptionError(.duplicateTag, "x")
        #expect(error.reason == "duplicate_tag")
        #expect(error.description.contains("duplicate_tag"))
    }

    @Test("empty input")
    func empty() {
        #expect(refusal([])?.code == .malformed)
    }

    @Test("every strict prefix of a real vector is refused")
    func truncations() {
        for length in 0..<Self.valid.count {
            #expect(refusal(Array(Self.valid.prefix(length)))?.code == .malformed, "prefix \(length)")
        }
    }

    @Test("trailing bytes after the KeyDescription")
    func trailing() {
        #expect(refusal(Self.valid + [0x00])?.code == .malformed)
        #expect(refusal(Self.valid + Self.valid)?.code == .malformed)
    }

    @Test("size limit: over 64 KiB is too_large before any parsing")
    func sizeLimit() {
        #expect(refusal([UInt8](repeating: 0x30, count: KD.maximumEncodedSize + 1))?.code == .tooLarge)
        #expect(refusal([UInt8](repeating: 0x30, count: KD.maximumEncodedSize))?.code == .malformed)
        // A structurally valid KeyDescription just over the limit (a huge challenge) is refused too.
        var kd = AndroidKeyDescriptionRoundTripTests.full
        kd.attestationChallenge = [UInt8](repeating: 1, count: KD.maximumEncodedSize)
        #expect(refusal(kd.derEncoded())?.code == .tooLarge)
    }

    @Test("outer element is not a SEQUENCE")
    func wrongOuterTag() {
        var set = Self.valid
        set[0] = 0x31
        #expect(refusal(set)?.code == .malformed)
        #expect(refusal(hex("0400"))?.code == .malformed)
        #expect(refusal(hex("020101"))?.code == .malformed)
    }

    @Test("unsupported attestation versions", arguments: [0, 5, 99, 101, 450, 600, -1, Int.max])
    func unsupportedVersion(version: Int) {
        var kd = AndroidKeyDescriptionRoundTripTests.full
        kd.attestationVersion = version
        #expect(refusal(kd.derEncoded())?.code == .unsupportedVersion)
    }

    @Test("supported attestation versions", arguments: [1, 2, 3, 4, 100, 200, 300, 400, 500])
    func supportedVersion(version: Int) throws {
        var kd = AndroidKeyDescriptionRoundTripTests.full
        kd.attestationVersion = version
        #expect(try KD(extensionValue: kd.derEncoded()).attestationVersion == version)
    }

    @Test("security level outside the enumeration")
    func badSecurityLevel() {
        // tegu: 30 82 01 65 | 02 02 01 90 | 0a 01 [01] | 02 02 01 90 | 0a 01 [01]
        for offset in [10, 17] {
            #expect(Self.valid[offset] == 0x01)
            for value: UInt8 in [3, 0x7F] {
                var bytes = Self.valid
                bytes[offset] = value
                #expect(refusal(bytes)?.code == .invalidSecurityLevel)
            }
            var negative = Self.valid
            negative[offset] = 0xFF
            #expect(refusal(negative)?.code == .invalidSecurityLevel)
        }
        // SecurityLevel as INTEGER instead of ENUMERATED.
        var integer = Self.valid
        integer[8] = 0x02
        #expect(refusal(integer)?.code == .malformed)
    }

    @Test("verified boot state outside the enumeration")
    func badVerifiedBootState() throws {
        // tegu RootOfTrust: ... 01 01 ff | 0a 01 [00] | 04 20 ...
        let at = try #require(firstIndex(of: [0x01, 0x01, 0xFF, 0x0A, 0x01, 0x00], in: Self.valid)) + 5
        for value: UInt8 in [4, 0x7F] {
            var bytes = Self.valid
            bytes[at] = value
            #expect(refusal(bytes)?.code == .invalidVerifiedBootState)
        }
    }

    @Test("deviceLocked must be a one-octet BOOLEAN")
    func badDeviceLocked() throws {
        let at = try #require(firstIndex(of: [0x01, 0x01, 0xFF, 0x0A, 0x01, 0x00], in: Self.valid))
        var asInteger = Self.valid
        asInteger[at] = 0x02
        #expect(refusal(asInteger)?.code == .malformed)
        // BER non-zero octets read as true (documented leniency); 0x00 is false.
        for (octet, expected) in [(UInt8(0x00), false), (0x01, true), (0x80, true), (0xFF, true)] {
            var bytes = Self.valid
            bytes[at + 2] = octet
            let kd = try KD(extensionValue: bytes)
            #expect(kd.hardwareEnforced.rootOfTrust?.deviceLocked == expected)
        }
    }

    @Test("modelled tags with the wrong ASN.1 type")
    func wrongTypes() {
        let octet = hex("0401ff")
        let integer = hex("020101")
        let cases: [(tag: UInt, value: [UInt8], clear: (inout KD.AuthorizationList) -> Void)] = [
            (1, integer, { $0.purpose = nil }),  // purpose must be SET OF INTEGER
            (1, hex("3103040100"), { $0.purpose = nil }),  // SET OF OCTET STRING
            (1, hex("3003020102"), { $0.purpose = nil }),  // SEQUENCE instead of SET
            (2, octet, { $0.algorithm = nil }),
            (3, hex("0500"), { $0.keySize = nil }),
            (5, integer, { $0.digest = nil }),
            (10, hex("0101ff"), { $0.ecCurve = nil }),
            (503, integer, { $0.noAuthRequired = false }),  // must be NULL
            (701, octet, { $0.creationDateTime = nil }),
            (702, octet, { $0.origin = nil }),
            (704, integer, { $0.rootOfTrust = nil }),
            (704, hex("3003040100"), { $0.rootOfTrust = nil }),  // RootOfTrust too short
            (704, hex("300c 0400 0101ff 0a0100 0400 0400"), { $0.rootOfTrust = nil }),  // too long
            (705, octet, { $0.osVersion = nil }),
            (706, octet, { $0.osPatchLevel = nil }),
            (709, integer, { $0.attestationApplicationId = nil }),  // must be OCTET STRING
            (718, octet, { $0.vendorPatchLevel = nil }),
            (719, octet, { $0.bootPatchLevel = nil }),
            (724, integer, { $0.moduleHash = nil }),
        ]
        for item in cases {
            let encoded = Self.withHardwareElement(tag: item.tag, value: item.value, clearing: item.clear)
            #expect(refusal(encoded)?.code == .malformed, "tag [\(item.tag)] value \(item.value)")
        }
    }

    @Test("INTEGER that does not fit Int, and non-minimal INTEGER encodings")
    func integerRange() {
        let tooWide = hex("0209 01 0000000000000000")
        #expect(refusal(Self.withHardwareElement(tag: 3, value: tooWide, clearing: { $0.keySize = nil }))?.code == .malformed)
        let nonMinimal = hex("02020001")
        #expect(refusal(Self.withHardwareElement(tag: 3, value: nonMinimal, clearing: { $0.keySize = nil }))?.code == .malformed)
        let empty = hex("0200")
        #expect(refusal(Self.withHardwareElement(tag: 705, value: empty, clearing: { $0.osVersion = nil }))?.code == .malformed)
    }

    @Test("attestationApplicationId with bad inner DER")
    func badApplicationId() {
        let cases: [[UInt8]] = [
            hex("0400"),  // empty
            hex("0403 020101"),  // INTEGER, not SEQUENCE
            hex("0404 3002 3100"),  // only one SET
            hex("0406 3004 3100 3000"),  // second is a SEQUENCE
            hex("0408 3006 3100 3100 0500"),  // three elements
            hex("040b 3009 3105 3003 040100 3100"),  // package without version
            hex("040e 300b 3107 3005 0400 020101 3100 00"),  // trailing byte inside
            hex("0406 3004 3100 3102"),  // truncated
        ]
        for value in cases {
            let encoded = Self.withHardwareElement(tag: 709, value: value, clearing: { $0.attestationApplicationId = nil })
            #expect(refusal(encoded)?.code == .malformedAttestationApplicationId, "\(value)")
        }
        // Empty SETs are well-formed.
        let emptySets = Self.withHardwareElement(tag: 709, value: hex("0406 3004 3100 3100"), clearing: { $0.attestationApplicationId = nil })
        #expect(refusal(emptySets) == nil)
    }

    @Test("duplicate tag in one AuthorizationList")
    func duplicateTag() {
        #expect(refusal(Self.withHardwareElement(tag: 2, value: hex("020101")))?.code == .duplicateTag)
        #expect(refusal(Self.withHardwareElement(tag: 704, value: hex("3000")))?.code == .duplicateTag)
        var kd = AndroidKeyDescriptionRoundTripTests.full
        kd.softwareEnforced.otherElements = [.init(tag: 5000, value: hex("0500")), .init(tag: 5000, value: hex("0500"))]
        #expect(refusal(kd.derEncoded())?.code == .duplicateTag)
        // The same tag in the two different lists is fine.
        kd.softwareEnforced.otherElements = []
        kd.softwareEnforced.algorithm = 3
        #expect(refusal(kd.derEncoded()) == nil)
    }

    @Test("AuthorizationList elements that are not EXPLICIT context-specific tags")
    func badAuthorizationListElements() throws {
        // Build the list bytes by hand inside a minimal KeyDescription.
        func description(hardware: [UInt8]) -> [UInt8] {
            let body = hex("020101 0a0100 020102 0a0100 0400 0400 3000") + [0x30] + derLength(hardware.count) + hardware
            return [0x30] + derLength(body.count) + body
        }
        #expect(refusal(description(hardware: [])) == nil)
        #expect(refusal(description(hardware: hex("a203020103"))) == nil)
        #expect(refusal(description(hardware: hex("020103")))?.code == .malformed)  // universal INTEGER
        #expect(refusal(description(hardware: hex("8201 03")))?.code == .malformed)  // primitive [2] (IMPLICIT)
        #expect(refusal(description(hardware: hex("6203 020103")))?.code == .malformed)  // APPLICATION class
        #expect(refusal(description(hardware: hex("a200")))?.code == .malformed)  // empty EXPLICIT
        #expect(refusal(description(hardware: hex("a206 020103 020103")))?.code == .malformed)  // two inside
        // An unknown tag must still wrap one well-formed element.
        #expect(refusal(description(hardware: hex("bf8f4f03 020101"))) == nil)  // [1999] INTEGER: kept
        #expect(refusal(description(hardware: hex("bf8f4f00")))?.code == .malformed)
        #expect(refusal(description(hardware: hex("bf8f4f03 020501")))?.code == .malformed)  // inner length lies
        // Content rules of unknown elements are not interpreted (a non-minimal INTEGER here is kept).
        #expect(refusal(description(hardware: hex("bf8f4f04 02020001"))) == nil)
        // Tag number encoded in long form although < 31 is not DER.
        #expect(refusal(description(hardware: hex("bf0203 020103")))?.code == .malformed)
        // Huge tag number (overflowing UInt) is refused, not trapped on.
        #expect(refusal(description(hardware: hex("bfffffffffffffffffffff7f03 020101")))?.code == .malformed)
        // An AuthorizationList that is a SET, or primitive.
        let setList = hex("3014 020101 0a0100 020102 0a0100 0400 0400 3000 3100")
        #expect(refusal(setList)?.code == .malformed)
        let primitiveList = hex("3014 020101 0a0100 020102 0a0100 0400 0400 3000 0400")
        #expect(refusal(primitiveList)?.code == .malformed)
    }

    @Test("KeyDescription with missing or extra top-level fields")
    func topLevelArity() {
        let full = hex("3014 020101 0a0100 020102 0a0100 0400 0400 3000 3000")
        #expect(refusal(full) == nil)
        #expect(refusal(hex("3012 020101 0a0100 020102 0a0100 0400 0400 3000"))?.code == .malformed)
        #expect(refusal(hex("3016 020101 0a0100 020102 0a0100 0400 0400 3000 3000 0500"))?.code == .malformed)
        #expect(refusal(hex("3003 020101"))?.code == .malformed)
        #expect(refusal(hex("3000"))?.code == .malformed)
        // challenge as UTF8String instead of OCTET STRING.
        #expect(refusal(hex("3014 020101 0a0100 020102 0a0100 0c00 0400 3000 3000"))?.code == .malformed)
        // Constructed OCTET STRING (BER only).
        #expect(refusal(hex("3016 020101 0a0100 020102 0a0100 2402 0400 0400 3000 3000"))?.code == .malformed)
    }

    @Test("non-DER lengths and indefinite lengths")
    func nonDERLengths() {
        // Long-form length for a short value.
        #expect(refusal(hex("308114 020101 0a0100 020102 0a0100 0400 0400 3000 3000"))?.code == .malformed)
        // Indefinite length.
        #expect(refusal(hex("3080 020101 0a0100 020102 0a0100 0400 0400 3000 3000 0000"))?.code == .malformed)
        // Length claims more than there is.
        #expect(refusal(hex("3015 020101 0a0100 020102 0a0100 0400 0400 3000 3000"))?.code == .malformed)
    }

    @Test("deep nesting is refused without exhausting the stack")
    func deepNesting() {
        var nested: [UInt8] = hex("0500")
        for _ in 0..<2_000 {
            nested = [0x30] + derLength(nested.count) + nested
        }
        #expect(refusal(nested)?.code == .malformed)
        // The same inside an unknown AuthorizationList element.
        var inner: [UInt8] = hex("0500")
        for _ in 0..<60 {
            inner = [0x30] + derLength(inner.count) + inner
        }
        #expect(refusal(Self.withHardwareElement(tag: 5_000, value: inner))?.code == .malformed)
    }
}

/// DER definite length octets.
func derLength(_ length: Int) -> [UInt8] {
    if length < 0x80 { return [UInt8(length)] }
    var octets: [UInt8] = []
    var remaining = length
    while remaining > 0 {
        octets.insert(UInt8(remaining & 0xFF), at: 0)
        remaining >>= 8
    }
    return [0x80 | UInt8(octets.count)] + octets
}
