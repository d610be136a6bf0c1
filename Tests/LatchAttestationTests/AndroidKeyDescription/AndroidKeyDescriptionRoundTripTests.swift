import LatchAttestation
import SwiftASN1
import Testing

@Suite("Android KeyDescription: encoder round trips")
struct AndroidKeyDescriptionRoundTripTests {
    typealias KD = AndroidKeyDescription

    /// Every modelled field set, plus unknown tags on both sides of the modelled ones.
    static let full = KD(
        attestationVersion: 400,
        attestationSecurityLevel: .strongBox,
        keyMintVersion: 400,
        keyMintSecurityLevel: .strongBox,
        attestationChallenge: bytes("server-nonce-0123456789"),
        uniqueId: [0xAA, 0xBB],
        softwareEnforced: .init(
            creationDateTime: 1_760_000_000_000,
            attestationApplicationId: .init(
                packageInfos: [.init(packageName: "dev.latch.app", version: 42)],
                signatureDigests: [[UInt8](repeating: 0x5A, count: 32)]
            ),
            moduleHash: [UInt8](repeating: 0x11, count: 32),
            otherElements: [.init(tag: 9_999, value: [0x04, 0x01, 0x7F])]
        ),
        hardwareEnforced: .init(
            purpose: [2, 3, 7],
            algorithm: 3,
            keySize: 256,
            digest: [0, 4, 6],
            padding: [1],
            ecCurve: 1,
            noAuthRequired: true,
            origin: 0,
            rootOfTrust: .init(
                verifiedBootKey: [UInt8](repeating: 0xC3, count: 32),
                deviceLocked: true,
                verifiedBootState: .verified,
                verifiedBootHash: [UInt8](repeating: 0xD4, count: 32)
            ),
            osVersion: 160_000,
            osPatchLevel: 202_605,
            vendorPatchLevel: 20_260_505,
            bootPatchLevel: 20_260_505,
            otherElements: [
                .init(tag: 0, value: [0x05, 0x00]),
                .init(tag: 710, value: [0x04, 0x06] + bytes("google")),
                .init(tag: 100_000, value: [0x01, 0x01, 0xFF]),
            ]
        )
    )

    @Test("a fully populated description round-trips")
    func fullRoundTrip() throws {
        let encoded = Self.full.derEncoded()
        let parsed = try KD(extensionValue: encoded)
        #expect(parsed == Self.full)
        #expect(parsed.derEncoded() == encoded)
        // Unknown elements come back in tag order among the modelled ones.
        #expect(parsed.hardwareEnforced.otherElements.map(\.tag) == [0, 710, 100_000])
    }

    @Test("the encoding is DER that swift-asn1 reads back, with high-tag-number identifiers")
    func structure() throws {
        let encoded = Self.full.derEncoded()
        let root = try DER.parse(encoded)
        guard case .constructed(let top) = root.content else {
            Issue.record("KeyDescription is not constructed")
            return
        }
        let children = Array(top)
        #expect(children.count == 8)
        guard case .constructed(let hardware) = children[7].content else {
            Issue.record("hardwareEnforced is not constructed")
            return
        }
        let tags = hardware.map(\.identifier.tagNumber)
        #expect(tags == tags.sorted())
        #expect(hardware.allSatisfy { $0.identifier.tagClass == .contextSpecific })
        #expect(tags.contains(704))
        #expect(tags.contains(100_000))
        // [704] EXPLICIT: BF 85 40 (class context, constructed, high tag 704 = 5*128 + 64).
        #expect(firstIndex(of: [0xBF, 0x85, 0x40], in: encoded) != nil)
    }

    @Test("OID constants agree")
    func oid() {
        #expect(String(describing: KD.extensionObjectIdentifier) == KD.extensionOID)
    }

    @Test("minimal description: empty lists, no optional fields")
    func minimal() throws {
        let kd = KD(
            attestationVersion: 1,
            attestationSecurityLevel: .software,
            keyMintVersion: 2,
            keyMintSecurityLevel: .software,
            attestationChallenge: []
        )
        let encoded = kd.derEncoded()
        #expect(encoded == hex("3014 020101 0a0100 020102 0a0100 0400 0400 3000 3000"))
        #expect(try KD(extensionValue: encoded) == kd)
    }

    @Test("root of trust without verifiedBootHash (attestation versions 1 and 2)")
    func rootOfTrustWithoutHash() throws {
        var kd = Self.full
        kd.attestationVersion = 2
        kd.hardwareEnforced.rootOfTrust = .init(verifiedBootKey: [1, 2, 3], deviceLocked: false, verifiedBootState: .selfSigned)
        let parsed = try KD(extensionValue: kd.derEncoded())
        #expect(parsed.hardwareEnforced.rootOfTrust?.verifiedBootHash == nil)
        #expect(parsed == kd)
    }

    @Test("every security level and verified boot state", arguments: KD.VerifiedBootState.allCases)
    func enums(state: KD.VerifiedBootState) throws {
        for level in KD.SecurityLevel.allCases {
            var kd = Self.full
            kd.attestationSecurityLevel = level
            kd.keyMintSecurityLevel = level
            kd.hardwareEnforced.rootOfTrust?.verifiedBootState = state
            #expect(try KD(extensionValue: kd.derEncoded()) == kd)
        }
    }

    @Test("integers at the edges of Int")
    func integerEdges() throws {
        for value in [0, 1, -1, 127, 128, -128, -129, 255, 256, 65_535, Int(Int32.max), Int.max, Int.min, Int.min + 1] {
            var kd = Self.full
            kd.hardwareEnforced.keySize = value
            kd.hardwareEnforced.osVersion = value
            kd.softwareEnforced.creationDateTime = value
            kd.hardwareEnforced.purpose = [value, 0]
            let encoded = kd.derEncoded()
            #expect(try KD(extensionValue: encoded) == kd, "value \(value)")
        }
    }

    @Test("several packages and digests come back in DER SET OF order")
    func setOfOrdering() throws {
        var kd = Self.full
        let packages: [KD.AttestationPackageInfo] = [
            .init(packageName: "z.last", version: 1),
            .init(packageName: "a.first", version: 2),
            .init(packageName: "m.middle", version: 300),
        ]
        let digests: [[UInt8]] = [[0x03, 0x00], [0x01], [0x02, 0xFF, 0xFF]]
        kd.softwareEnforced.attestationApplicationId = .init(packageInfos: packages, signatureDigests: digests)
        let parsed = try KD(extensionValue: kd.derEncoded())
        let app = try #require(parsed.softwareEnforced.attestationApplicationId)
        #expect(Set(app.packageInfos) == Set(packages))
        #expect(Set(app.signatureDigests) == Set(digests))
        // Same-length members sort by content; the shorter sorts first otherwise (DER order of
        // the whole encodings, length octet included).
        #expect(app.signatureDigests == [[0x01], [0x03, 0x00], [0x02, 0xFF, 0xFF]])
        // Once in DER order, it is a fixed point.
        #expect(try KD(extensionValue: parsed.derEncoded()) == parsed)
        #expect(parsed.derEncoded() == kd.derEncoded())
    }

    @Test("seeded random descriptions round-trip (500 cases)")
    func randomRoundTrips() throws {
        var rng = SplitMix64(seed: 0x1A7C_4A7D_0001)
        for index in 0..<500 {
            let kd = Self.randomDescription(using: &rng)
            let encoded = kd.derEncoded()
            let parsed = try KD(extensionValue: encoded)
            #expect(parsed == kd, "case \(index)")
            #expect(parsed.derEncoded() == encoded, "case \(index)")
        }
    }

    static func randomDescription(using rng: inout SplitMix64) -> KD {
        func randomInt() -> Int {
            switch Int.random(in: 0..<4, using: &rng) {
            case 0: return Int.random(in: -2...300, using: &rng)
            case 1: return Int.random(in: 0...99_999_999, using: &rng)
            case 2: return Int(bitPattern: UInt(rng.next()))
            default: return [Int.min, Int.max, 0, -1][Int.random(in: 0..<4, using: &rng)]
            }
        }
        func randomBytes(_ maximum: Int) -> [UInt8] {
            (0..<Int.random(in: 0...maximum, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        }
        func maybe<T>(_ make: () -> T) -> T? { Bool.random(using: &rng) ? make() : nil }
        func randomSet() -> Set<Int> { Set((0..<Int.random(in: 0...4, using: &rng)).map { _ in randomInt() }) }
        func randomList() -> KD.AuthorizationList {
            var list = KD.AuthorizationList()
            list.purpose = maybe(randomSet)
            list.algorithm = maybe(randomInt)
            list.keySize = maybe(randomInt)
            list.digest = maybe(randomSet)
            list.padding = maybe(randomSet)
            list.ecCurve = maybe(randomInt)
            list.noAuthRequired = Bool.random(using: &rng)
            list.creationDateTime = maybe(randomInt)
            list.origin = maybe(randomInt)
            list.rootOfTrust = maybe {
                KD.RootOfTrust(
                    verifiedBootKey: randomBytes(40),
                    deviceLocked: Bool.random(using: &rng),
                    verifiedBootState: KD.VerifiedBootState.allCases.randomElement(using: &rng)!,
                    verifiedBootHash: maybe { randomBytes(40) }
                )
            }
            list.osVersion = maybe(randomInt)
            list.osPatchLevel = maybe(randomInt)
            // At most one package and one digest, so SET OF order cannot differ from input order.
            list.attestationApplicationId = maybe {
                KD.AttestationApplicationId(
                    packageInfos: Bool.random(using: &rng) ? [.init(packageName: randomBytes(30), version: randomInt())] : [],
                    signatureDigests: Bool.random(using: &rng) ? [randomBytes(32)] : []
                )
            }
            list.vendorPatchLevel = maybe(randomInt)
            list.bootPatchLevel = maybe(randomInt)
            list.moduleHash = maybe { randomBytes(32) }
            // Unknown tags, distinct, not modelled, in ascending order.
            var unknownTags = Set<UInt>()
            for _ in 0..<Int.random(in: 0...3, using: &rng) {
                let tag = UInt.random(in: 0...2_000, using: &rng)
                if !KD.AuthorizationList.Tag.modelled.contains(tag) { unknownTags.insert(tag) }
            }
            list.otherElements = unknownTags.sorted().map { tag in
                let content = randomBytes(20)
                return KD.UnknownAuthorization(tag: tag, value: [0x04, UInt8(content.count)] + content)
            }
            return list
        }
        return KD(
            attestationVersion: KD.supportedAttestationVersions.sorted().randomElement(using: &rng)!,
            attestationSecurityLevel: KD.SecurityLevel.allCases.randomElement(using: &rng)!,
            keyMintVersion: randomInt(),
            keyMintSecurityLevel: KD.SecurityLevel.allCases.randomElement(using: &rng)!,
            attestationChallenge: randomBytes(128),
            uniqueId: randomBytes(16),
            softwareEnforced: randomList(),
            hardwareEnforced: randomList()
        )
    }
}
