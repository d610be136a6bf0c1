import LatchAttestation
import Testing

/// Expected values come from the .json files next to each .pem in android/keyattestation
/// (Google's decoding of the same certificates), cross-checked with `openssl asn1parse`.
@Suite("Android KeyDescription: real devices")
struct AndroidKeyDescriptionRealDeviceTests {
    typealias KD = AndroidKeyDescription

    @Test("tegu (Pixel 9a, v400, TEE, locked, Key Attestation CA1 chain)")
    func tegu() throws {
        let kd = try KD(extensionValue: RealDeviceVectors.teguTEEv400)
        #expect(kd.attestationVersion == 400)
        #expect(kd.attestationSecurityLevel == .trustedEnvironment)
        #expect(kd.keyMintVersion == 400)
        #expect(kd.keyMintSecurityLevel == .trustedEnvironment)
        #expect(kd.attestationChallenge == bytes("6417f92c-daef-4cc1-8828-5bb39338ffd5"))
        #expect(kd.uniqueId.isEmpty)

        let sw = kd.softwareEnforced
        #expect(sw.creationDateTime == 1_771_894_563_060)
        #expect(sw.attestationApplicationId?.packageInfos == [.init(packageName: "com.google.android.attestation", version: 0)])
        #expect(sw.attestationApplicationId?.packageInfos.first?.packageNameString == "com.google.android.attestation")
        #expect(sw.attestationApplicationId?.signatureDigests == [collectorSignatureDigest])
        #expect(sw.moduleHash == hex("f4b818a9e5d2ef5cb28d60daa6098babcbdf23ff6e80778ef82d7e41ef48965e"))
        #expect(sw.rootOfTrust == nil)
        #expect(sw.otherElements.isEmpty)
        #expect(sw.tagsInAscendingOrder)

        let hw = kd.hardwareEnforced
        #expect(hw.purpose == [2, 3])
        #expect(hw.algorithm == 3)
        #expect(hw.keySize == 256)
        #expect(hw.digest == [4])
        #expect(hw.ecCurve == 1)
        #expect(hw.noAuthRequired)
        #expect(hw.origin == 0)
        #expect(
            hw.rootOfTrust
                == KD.RootOfTrust(
                    verifiedBootKey: hex("3327af62d84ab897af2523a16dcb5801e60c5d5b97f41ca1bd099c4784f7b743"),
                    deviceLocked: true,
                    verifiedBootState: .verified,
                    verifiedBootHash: hex("ecec32afd4f465fc889f3ed20e6f79aaca1fd1ab3adf9d7f197ecabb0c9a3856")
                )
        )
        #expect(hw.osVersion == 160_000)
        #expect(hw.osPatchLevel == 202_602)
        #expect(hw.vendorPatchLevel == 20_260_205)
        #expect(hw.bootPatchLevel == 20_260_205)
        #expect(hw.attestationApplicationId == nil)
        #expect(hw.otherElements.isEmpty)
    }

    @Test("caiman (Pixel 9 Pro, v400, device ID attestation kept as other elements)")
    func caiman() throws {
        let kd = try KD(extensionValue: RealDeviceVectors.caimanTEEv400)
        #expect(kd.attestationVersion == 400)
        #expect(kd.attestationChallenge == bytes("d688d763-6118-4ca6-94b2-e6cd9ed7e4e4"))
        #expect(kd.softwareEnforced.creationDateTime == 1_758_900_680_964)
        #expect(kd.softwareEnforced.moduleHash == hex("1bca17ee6ee1487b5fa8215d7003bf6a4a3632703d2a3a025237235ba6fdde61"))
        let hw = kd.hardwareEnforced
        #expect(hw.purpose == [2, 3])
        #expect(hw.rootOfTrust?.verifiedBootKey == [UInt8](repeating: 0, count: 32))
        #expect(hw.rootOfTrust?.deviceLocked == true)
        #expect(hw.rootOfTrust?.verifiedBootState == .verified)
        #expect(hw.rootOfTrust?.verifiedBootHash == hex("06a23925b6547ec124086ca5eddd35c35f58ce6eb68a13afdfd4195c41c61ed4"))
        #expect(hw.osVersion == 160_000)
        #expect(hw.osPatchLevel == 202_511)
        #expect(hw.vendorPatchLevel == 20_251_105)
        #expect(hw.bootPatchLevel == 20_251_105)
        // attestationIdBrand/Device/Product/Manufacturer/Model: OCTET STRINGs under tags 710-717.
        let octetString = { (s: String) in [0x04, UInt8(s.utf8.count)] + bytes(s) }
        #expect(
            hw.otherElements == [
                .init(tag: 710, value: octetString("google")),
                .init(tag: 711, value: octetString("caiman")),
                .init(tag: 712, value: octetString("caiman")),
                .init(tag: 716, value: octetString("Google")),
                .init(tag: 717, value: octetString("Pixel 9 Pro")),
            ]
        )
    }

    @Test("akita (Pixel 8a, v300, StrongBox RSA, unlocked)")
    func akita() throws {
        let kd = try KD(extensionValue: RealDeviceVectors.akitaStrongBoxV300)
        #expect(kd.attestationVersion == 300)
        #expect(kd.attestationSecurityLevel == .strongBox)
        #expect(kd.keyMintSecurityLevel == .strongBox)
        #expect(kd.attestationChallenge == bytes("challenge"))
        #expect(kd.softwareEnforced.creationDateTime == 1_727_389_887_639)
        let hw = kd.hardwareEnforced
        #expect(hw.purpose == [2])
        #expect(hw.algorithm == 1)
        #expect(hw.keySize == 2048)
        #expect(hw.ecCurve == nil)
        // rsaPublicExponent [200] = 65537 is not modelled.
        #expect(hw.otherElements == [.init(tag: 200, value: hex("0203010001"))])
        #expect(hw.rootOfTrust?.deviceLocked == false)
        #expect(hw.rootOfTrust?.verifiedBootState == .unverified)
        #expect(hw.rootOfTrust?.verifiedBootHash == hex("882588576475aeccb392982fe2fbc5f62c69c9fc84ba73e6c53cc052a1161586"))
        #expect(hw.osVersion == 140_000)
        #expect(hw.osPatchLevel == 202_408)
        #expect(hw.vendorPatchLevel == 20_240_805)
        #expect(hw.bootPatchLevel == 20_240_805)
    }

    @Test("blueline (Pixel 3, v3, Keymaster 4)")
    func blueline() throws {
        let kd = try KD(extensionValue: RealDeviceVectors.bluelineTEEv3)
        #expect(kd.attestationVersion == 3)
        #expect(kd.keymasterVersion == 4)
        #expect(kd.attestationSecurityLevel == .trustedEnvironment)
        #expect(kd.softwareEnforced.creationDateTime == 1_538_178_035_062)
        #expect(
            kd.softwareEnforced.attestationApplicationId
                == KD.AttestationApplicationId(
                    packageInfos: [
                        .init(packageName: "com.google.wireless.android.security.attestationverifier.collector", version: 0)
                    ],
                    signatureDigests: [collectorSignatureDigest]
                )
        )
        let hw = kd.hardwareEnforced
        #expect(hw.purpose == [2])
        #expect(hw.algorithm == 3)
        #expect(hw.keySize == 256)
        #expect(hw.ecCurve == 1)
        #expect(hw.noAuthRequired)
        #expect(hw.origin == 0)
        #expect(
            hw.rootOfTrust
                == KD.RootOfTrust(
                    verifiedBootKey: [],
                    deviceLocked: false,
                    verifiedBootState: .unverified,
                    verifiedBootHash: hex("6e9d0c5bea2cda99f3e5c76fb2740cdf8793d1d363422cd065d22bf0a2bb5bad")
                )
        )
        #expect(hw.osVersion == 90_000)
        #expect(hw.osPatchLevel == 201_908)
        #expect(hw.vendorPatchLevel == 201_809)
        #expect(hw.bootPatchLevel == 201_908)
    }

    @Test("marlin (Pixel XL, v2, software attestation, no root of trust)")
    func marlin() throws {
        let kd = try KD(extensionValue: RealDeviceVectors.marlinSoftwareV2)
        #expect(kd.attestationVersion == 2)
        #expect(kd.attestationSecurityLevel == .software)
        #expect(kd.keymasterVersion == 1)
        #expect(kd.keyMintSecurityLevel == .trustedEnvironment)
        #expect(kd.softwareEnforced.creationDateTime == 1_572_308_512_000)
        let hw = kd.hardwareEnforced
        #expect(hw.purpose == [2])
        #expect(hw.noAuthRequired)
        #expect(hw.rootOfTrust == nil)
        #expect(hw.osVersion == nil)
        // rollbackResistant [703] NULL is not modelled.
        #expect(hw.otherElements == [.init(tag: 703, value: [0x05, 0x00])])
    }

    @Test("canonical real vectors re-encode byte for byte", arguments: RealDeviceVectors.canonical.map(\.name))
    func reencodesExactly(name: String) throws {
        let original = try #require(RealDeviceVectors.canonical.first { $0.name == name }?.bytes)
        let kd = try KD(extensionValue: original)
        #expect(kd.derEncoded() == original)
        #expect(try KD(extensionValue: kd.derEncoded()) == kd)
    }

    @Test("tags out of ascending order are accepted and flagged; the encoder sorts them")
    func outOfOrderTags() throws {
        let kd = try KD(extensionValue: RealDeviceVectors.tagsNotAscending)
        #expect(kd.attestationVersion == 300)
        #expect(kd.softwareEnforced.tagsInAscendingOrder)
        #expect(!kd.hardwareEnforced.tagsInAscendingOrder)
        #expect(kd.hardwareEnforced.algorithm == 3)
        #expect(kd.hardwareEnforced.purpose == [2])
        #expect(
            kd.softwareEnforced.attestationApplicationId?.packageInfos
                == [.init(packageName: "com.example.attestationcollector", version: 1)]
        )

        let reencoded = kd.derEncoded()
        #expect(reencoded != RealDeviceVectors.tagsNotAscending)
        #expect(reencoded.count == RealDeviceVectors.tagsNotAscending.count)
        var again = try KD(extensionValue: reencoded)
        #expect(again.hardwareEnforced.tagsInAscendingOrder)
        again.hardwareEnforced.tagsInAscendingOrder = false
        #expect(again == kd)
    }

    @Test("BER-encoded deviceLocked (0x01) reads as true")
    func berDeviceLocked() throws {
        let kd = try KD(extensionValue: RealDeviceVectors.berDeviceLocked)
        #expect(kd.attestationVersion == 3)
        #expect(kd.attestationChallenge.count == 89)
        #expect(kd.hardwareEnforced.rootOfTrust?.deviceLocked == true)
        #expect(kd.hardwareEnforced.rootOfTrust?.verifiedBootState == .verified)
        #expect(kd.hardwareEnforced.osVersion == 100_000)
        #expect(kd.hardwareEnforced.osPatchLevel == 202_207)
        #expect(
            kd.softwareEnforced.attestationApplicationId?.packageInfos
                == [.init(packageName: "com.google.android.apps.photos", version: 51_193_451)]
        )
        // The encoder writes DER TRUE (0xFF), so this one does not re-encode byte for byte.
        let reencoded = kd.derEncoded()
        #expect(reencoded != RealDeviceVectors.berDeviceLocked)
        #expect(try KD(extensionValue: reencoded) == kd)
    }
}
