// KeyDescription extension values (OID 1.3.6.1.4.1.11129.2.1.17) lifted from the leaf certificates
// of REAL device attestation chains in Google's verifier test data:
//
//   repository  https://github.com/android/keyattestation (Google's Kotlin key attestation verifier)
//   commit      47f970d044ae4da7b00da068e7e1a4e952b0fd2f
//   files       testdata/<device>/<sdk>/<name>.pem (the chain, leaf first) and the sibling .json
//               (Google's own decoding, used here for the expected values)
//
// Extraction: the leaf certificate's extension value (the extnValue OCTET STRING content), read
// with Python `cryptography` and checked with `openssl asn1parse`. Only these extension bytes are
// reproduced; no certificate or code from that repository is.
//
// Chains checked with `openssl verify -no_check_time` against roots/ (see roots/SOURCES.md):
// blueline, akita, caiman and malformed_rot_device_locked verify up to the Google RSA root, tegu
// up to Key Attestation CA1. marlin (Pixel XL, Android 10) is software-attested: its chain ends
// at the "Android Keystore Software Attestation Root" instead (and verifies against it).
// tags_not_in_ascending_order is an edited fixture, not device output (see below).

enum RealDeviceVectors {
    /// testdata/marlin/sdk29/TEE_EC_NONE.pem: Pixel XL, attestation version 2 (Keymaster),
    /// attestationSecurityLevel Software, no rootOfTrust, rollbackResistant [703].
    static let marlinSoftwareV2 = hex(
        "3081cb0201020a01000201010a010104096368616c6c656e67650400308183bf853d080206016e14e3ed00bf85457304",
        "71306f314930470442636f6d2e676f6f676c652e776972656c6573732e616e64726f69642e73656375726974792e6174",
        "746573746174696f6e76657269666965722e636f6c6c6563746f7202010031220420103938ee4537e59e8ee792f65450",
        "4fb8346fc6b346d0bbc4415fc339fcfc8ec1302aa1053103020102a203020103a30402020100aa03020101bf83770205",
        "00bf853e03020100bf853f020500"
    )

    /// testdata/blueline/sdk28/TEE_EC_NONE.pem: Pixel 3 (Android 9), attestation version 3,
    /// Keymaster 4, TEE, unlocked bootloader (verifiedBootState Unverified, empty boot key).
    static let bluelineTEEv3 = hex(
        "308201190201030a01010201040a010104096368616c6c656e67650400308183bf853d0802060166228e2d76bf854573",
        "0471306f314930470442636f6d2e676f6f676c652e776972656c6573732e616e64726f69642e73656375726974792e61",
        "74746573746174696f6e76657269666965722e636f6c6c6563746f7202010031220420103938ee4537e59e8ee792f654",
        "504fb8346fc6b346d0bbc4415fc339fcfc8ec13078a1053103020102a203020103a30402020100aa03020101bf837702",
        "0500bf853e03020100bf85402c302a04000101000a010204206e9d0c5bea2cda99f3e5c76fb2740cdf8793d1d363422c",
        "d065d22bf0a2bb5badbf8541050203015f90bf85420502030314b4bf854e050203031451bf854f0502030314b4"
    )

    /// testdata/akita/sdk34/SB_RSA_NONE.pem: Pixel 8a (Android 14), attestation version 300,
    /// StrongBox, RSA-2048 with rsaPublicExponent [200] (not modelled: kept in otherElements).
    static let akitaStrongBoxV300 = hex(
        "308201420202012c0a01020202012c0a010204096368616c6c656e67650400308183bf853d08020601923075ec97bf85",
        "45730471306f314930470442636f6d2e676f6f676c652e776972656c6573732e616e64726f69642e7365637572697479",
        "2e6174746573746174696f6e76657269666965722e636f6c6c6563746f7202010031220420103938ee4537e59e8ee792",
        "f654504fb8346fc6b346d0bbc4415fc339fcfc8ec130819ea1053103020102a203020101a30402020800bf8148050203",
        "010001bf8377020500bf853e03020100bf85404c304a0420000000000000000000000000000000000000000000000000",
        "00000000000000000101000a01020420882588576475aeccb392982fe2fbc5f62c69c9fc84ba73e6c53cc052a1161586",
        "bf85410502030222e0bf85420502030316a8bf854e0602040134d9a5bf854f0602040134d9a5"
    )

    /// testdata/tegu/sdk36/TEE_EC_2026_ROOT.pem: preproduction Pixel 9a (Android 16), attestation
    /// version 400, TEE, locked + Verified, moduleHash [724]; chain ends at Key Attestation CA1.
    static let teguTEEv400 = hex(
        "30820165020201900a0101020201900a0101042436343137663932632d646165662d346363312d383832382d35626233",
        "39333338666664350400308185bf853d080206019c8d2560f4bf85454f044d304b31253023041e636f6d2e676f6f676c",
        "652e616e64726f69642e6174746573746174696f6e02010031220420103938ee4537e59e8ee792f654504fb8346fc6b3",
        "46d0bbc4415fc339fcfc8ec1bf8554220420f4b818a9e5d2ef5cb28d60daa6098babcbdf23ff6e80778ef82d7e41ef48",
        "965e3081a4a1083106020102020103a203020103a30402020100a5053103020104aa03020101bf8377020500bf853e03",
        "020100bf85404c304a04203327af62d84ab897af2523a16dcb5801e60c5d5b97f41ca1bd099c4784f7b7430101ff0a01",
        "000420ecec32afd4f465fc889f3ed20e6f79aaca1fd1ab3adf9d7f197ecabb0c9a3856bf8541050203027100bf854205",
        "020303176abf854e0602040135256dbf854f0602040135256d"
    )

    /// testdata/caiman/sdk36/TEE_EC_RKP.pem: Pixel 9 Pro (Android 16), attestation version 400, TEE,
    /// remotely provisioned, with device ID attestation (brand/device/product/manufacturer/model:
    /// tags 710, 711, 712, 716, 717, kept in otherElements).
    static let caimanTEEv400 = hex(
        "308201a6020201900a0101020201900a0101042464363838643736332d363131382d346361362d393462322d65366364",
        "39656437653465340400308185bf853d080206019986a67904bf85454f044d304b31253023041e636f6d2e676f6f676c",
        "652e616e64726f69642e6174746573746174696f6e02010031220420103938ee4537e59e8ee792f654504fb8346fc6b3",
        "46d0bbc4415fc339fcfc8ec1bf85542204201bca17ee6ee1487b5fa8215d7003bf6a4a3632703d2a3a025237235ba6fd",
        "de613081e5a1083106020102020103a203020103a30402020100a5053103020104aa03020101bf8377020500bf853e03",
        "020100bf85404c304a042000000000000000000000000000000000000000000000000000000000000000000101ff0a01",
        "00042006a23925b6547ec124086ca5eddd35c35f58ce6eb68a13afdfd4195c41c61ed4bf8541050203027100bf854205",
        "020303170fbf8546080406676f6f676c65bf85470804066361696d616ebf85480804066361696d616ebf854c08040647",
        "6f6f676c65bf854d0d040b506978656c20392050726fbf854e060204013501e1bf854f060204013501e1"
    )

    /// testdata/invalid/tags_not_in_ascending_order.pem: attestation version 300, TEE; the
    /// hardwareEnforced list starts algorithm [2] then purpose [1]. NOT device output: the leaf's
    /// signature does not verify (openssl: "certificate signature failure"), so this is a real
    /// certificate whose extension Google edited to make a fixture. Google's verifier parses it
    /// and flags the ordering for its policy layer; so does this parser (`tagsInAscendingOrder`).
    static let tagsNotAscending = hex(
        "3082011b0202012c0a01010202012c0a010104096368616c6c656e676504003061bf853d0802060191514c8c6fbf8545",
        "51044f304d312730250420636f6d2e6578616d706c652e6174746573746174696f6e636f6c6c6563746f720201013122",
        "042008ea6b6f15014e1e0f70065e525d15268f8e357c02485676811873f8dde65c4130819aa203020103a10531030201",
        "02a30402020100aa03020101bf8377020500bf853e03020100bf85404c304a0420000000000000000000000000000000",
        "00000000000000000000000000000000000101000a01020420882588576475aeccb392982fe2fbc5f62c69c9fc84ba73",
        "e6c53cc052a1161586bf85410502030222e0bf85420502030316a8bf854e0602040134d9a5bf854f0602040134d9a5"
    )

    /// testdata/invalid/malformed_rot_device_locked.pem: attestation version 3, Keymaster 4, a key
    /// of com.google.android.apps.photos; RootOfTrust.deviceLocked is BOOLEAN 0x01 (BER, not DER).
    /// Device output: the chain verifies (openssl) up to Google's RSA root. Google's verifier
    /// reads it as true; so does this parser.
    static let berDeviceLocked = hex(
        "3082015d0201030a01010201040a01010459019b115a17fdf26b371309467080d0aec1b5a0c1c6a7a3350b920560659f",
        "a79b97a21a751a9bf9f031323b99253619dcc4c31a4a8aba0335006321620f2c70b3e80f0c504f6474b5f487898fe587",
        "7cf2d9d7c2cd255e235fa704003062bf853d080206019c578bb6a0bf8545520450304e31283026041e636f6d2e676f6f",
        "676c652e616e64726f69642e617070732e70686f746f730204030d266b312204203d7a1223019aa39d9ea0e3436ab7c0",
        "896bfb4fb679f4de5fe7c23f326c8f994a30818da1053103020102a203020103a30402020100a5053103020104aa0302",
        "0101bf8377020500bf853e03020100bf85404c304a04206c882d2469a0a03261f8b1137bcd82dd6ce8c26c02e7f10891",
        "7c5a32efa4a87c0101010a010004209639c9e929a83f96bb51996d7aa0130e1b2d6e73734eb2dc455ce2831c1240d2bf",
        "85410502030186a0bf85420502030315df"
    )

    /// The vectors whose encoding is canonical DER (re-encoding reproduces them byte for byte).
    static let canonical: [(name: String, bytes: [UInt8])] = [
        ("marlin", marlinSoftwareV2),
        ("blueline", bluelineTEEv3),
        ("akita", akitaStrongBoxV300),
        ("tegu", teguTEEv400),
        ("caiman", caimanTEEv400),
    ]
}
