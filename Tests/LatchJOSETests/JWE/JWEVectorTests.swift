import Crypto
import Foundation
import LatchJOSE
import Testing

/// Known-answer tests: RFC 3394 and tokens made by independent implementations.
@Suite struct JWEVectorTests {
    // MARK: RFC 3394 §4.6 — wrap 256 bits of key data with a 256-bit KEK

    static let rfc3394KEK = hex("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F")
    static let rfc3394KeyData = hex("00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F")
    static let rfc3394Ciphertext = hex("28C9F404C4B810F4CBCCB35CFB87F8263F5786E2D80ED326CBC7F0E71A99F43BFB988B9B7A02DD21")

    @Test func rfc3394WrapThroughSwiftCrypto() throws {
        // `JWECompact` uses swift-crypto's `AES.KeyWrap` for A256KW; this pins that function to the RFC.
        let wrapped = try AES.KeyWrap.wrap(SymmetricKey(data: Self.rfc3394KeyData), using: SymmetricKey(data: Self.rfc3394KEK))
        #expect(Array(wrapped) == Self.rfc3394Ciphertext)
    }

    @Test func rfc3394UnwrapThroughSwiftCrypto() throws {
        let unwrapped = try AES.KeyWrap.unwrap(Self.rfc3394Ciphertext, using: SymmetricKey(data: Self.rfc3394KEK))
        #expect(unwrapped.withUnsafeBytes { Array($0) } == Self.rfc3394KeyData)
    }

    @Test func rfc3394UnwrapRejectsAnyFlippedBit() {
        let kek = SymmetricKey(data: Self.rfc3394KEK)
        for index in Self.rfc3394Ciphertext.indices {
            var tampered = Self.rfc3394Ciphertext
            tampered[index] ^= 0x01
            #expect(throws: (any Error).self) { try AES.KeyWrap.unwrap(tampered, using: kek) }
        }
    }

    @Test func rfc3394VectorIsTheEncryptedKeyOfAToken() throws {
        // The same vector through the JWE code path: with that KEK and CEK, part 2 of the token is the RFC's
        // ciphertext, and decrypt unwraps it.
        let token = JWECompact.encrypt(
            Array("x".utf8), keyEncryptionKey: SymmetricKey(data: Self.rfc3394KEK),
            cek: SymmetricKey(data: Self.rfc3394KeyData), iv: JWEFixture.iv)
        #expect(JWEFixture.decodedPart(token, 1) == Self.rfc3394Ciphertext)
        #expect(try JWECompact.decrypt(token, keyEncryptionKey: SymmetricKey(data: Self.rfc3394KEK)) == Array("x".utf8))
    }

    // MARK: Deterministic encryption known answer (Python `cryptography` primitives)

    /// Produced with Python 3.11 and `cryptography` 48.0.0 (`aes_key_wrap` and `AESGCM`), not with any JOSE
    /// library:
    ///
    ///     kek = bytes(range(32)); cek = bytes.fromhex("00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F")
    ///     iv = bytes.fromhex("f0e1d2c3b4a5968778695a4b"); pt = b"Latch: deterministic A256KW+A256GCM vector"
    ///     hdr = b64url(b'{"alg":"A256KW","enc":"A256GCM","cty":"JWT"}')
    ///     wk = aes_key_wrap(kek, cek); ct_tag = AESGCM(cek).encrypt(iv, pt, hdr.encode("ascii"))
    ///     token = ".".join([hdr, b64url(wk), b64url(iv), b64url(ct_tag[:-16]), b64url(ct_tag[-16:])])
    static let deterministicToken =
        "eyJhbGciOiJBMjU2S1ciLCJlbmMiOiJBMjU2R0NNIiwiY3R5IjoiSldUIn0"
        + ".KMn0BMS4EPTLzLNc-4f4Jj9XhuLYDtMmy8fw5xqZ9Dv7mIubegLdIQ"
        + ".8OHSw7Sllod4aVpL"
        + ".KMEsF3rmWn9F6rFxhj8BQEH-p7FzPhodjbgrHrsMdmhjZwpRPfv07NyN"
        + ".uU0uqaSc_X9EbRwQjwIJ3g"

    @Test func deterministicEncryptMatchesPythonCryptography() {
        let token = JWECompact.encrypt(
            Array("Latch: deterministic A256KW+A256GCM vector".utf8), keyEncryptionKey: SymmetricKey(data: Self.rfc3394KEK),
            contentType: "JWT", cek: SymmetricKey(data: Self.rfc3394KeyData), iv: hex("f0e1d2c3b4a5968778695a4b"))
        #expect(token == Self.deterministicToken)
    }

    @Test func deterministicTokenDecrypts() throws {
        let plaintext = try JWECompact.decrypt(Self.deterministicToken, keyEncryptionKey: SymmetricKey(data: Self.rfc3394KEK))
        #expect(plaintext == Array("Latch: deterministic A256KW+A256GCM vector".utf8))
    }

    // MARK: A token made by joserfc (a third-party JOSE library)

    /// Produced once with Python 3.11 and joserfc 1.6.5 (cryptography 48.0.0), then hard-coded:
    ///
    ///     from joserfc import jwe, jws; from joserfc.jwk import OctKey, ECKey
    ///     kek = OctKey.import_key(bytes(range(0xA0, 0xC0)))          # KEK bytes A0 A1 … BF
    ///     ec = ECKey.generate_key("P-256")
    ///     payload = '{"requestDetails":{"requestPackageName":"com.example.latch","nonce":"bGF0Y2gtdGVzdC1ub25jZQ"},'
    ///               '"appIntegrity":{"appRecognitionVerdict":"PLAY_RECOGNIZED"}}'
    ///     inner = jws.serialize_compact({"alg": "ES256"}, payload, ec)   # an ES256 JWS, as Play Integrity wraps
    ///     token = jwe.encrypt_compact({"alg": "A256KW", "enc": "A256GCM"}, inner, kek)
    ///
    /// joserfc picks the CEK and IV at random; its header serializes as {"alg":"A256KW","enc":"A256GCM"}.
    static let joserfcKEK = Array(UInt8(0xA0) ... UInt8(0xBF))
    static let joserfcPlaintext =
        "eyJhbGciOiJFUzI1NiJ9"
        + ".eyJyZXF1ZXN0RGV0YWlscyI6eyJyZXF1ZXN0UGFja2FnZU5hbWUiOiJjb20uZXhhbXBsZS5sYXRjaCIsIm5vbmNlIjoiYkdGMFkyZ3RkR1Z6ZEMxdWIyNWpaUSJ9LCJhcHBJbnRlZ3JpdHkiOnsiYXBwUmVjb2duaXRpb25WZXJkaWN0IjoiUExBWV9SRUNPR05JWkVEIn19"
        + ".P9FcTmm82-kpAyyVQdzT392Ci8_QkQWlxa8_B-AyXMT-m4BqeoJ07iDc7eZq710FQnpDv0_BR436BI9WWXeTHg"
    static let joserfcToken =
        "eyJhbGciOiJBMjU2S1ciLCJlbmMiOiJBMjU2R0NNIn0"
        + ".7xqoIFz3Y8gCFqk1OBMvSNnJfjHZKGbbEeUgAGchqPE9I9QsAtPqMg"
        + ".0pKC9q0IWZsW8F0n"
        + ".RKADimAS89I4G4eIjKv-NDyK2pa0Bszq0JMCnW85LjmvPrWQ5EClW1Kii9wglsDrl8EilywJqf3HlxxvlFQFFiH6L-4GM3-0C91BSVGXDrLuW2z0ByHvum1BzdXTPPBGBRcx_7R1lYEiA-CjC3-5lebX5bjUultRahIuVBABWDvfF7rF8t-P7UDE_jqriyaL4saH1eSUs5qaDlKqlyaEs3wPTWCDlpN_VlP08-XKlB4kci_0G0EU5moWq0THtp4cp5I_HrZ5myR-pFtBe--n24Fv9dhFr14-_i7yY5VECsn0GihvZ9lywQ4QyurNfgymXs7jDiDynKvoaQPT4dLkoUgYRHh3y0GniXgf5e0fbJ8khdpZcQLMdzNwaMdbRn1KB3gyl25mQnISHpO2-2xsEeUPtOatrkPC"
        + ".aV7Dqg-dA7r_AHt16lfcJQ"

    @Test func joserfcTokenDecrypts() throws {
        let plaintext = try JWECompact.decrypt(Self.joserfcToken, keyEncryptionKey: SymmetricKey(data: Self.joserfcKEK))
        #expect(plaintext == Array(Self.joserfcPlaintext.utf8))
    }

    @Test func joserfcTokenRefusesAnotherKey() {
        #expect(JWEFixture.reason(Self.joserfcToken, key: JWEFixture.kek) == .keyUnwrapFailed)
    }

    // MARK: A token made by jwcrypto (a second third-party JOSE library)

    /// Produced once with Python 3.11 and jwcrypto 1.6.1 (cryptography 50.0.2), then hard-coded. Its header is
    /// serialized with spaces, in a different member order, with `kid` and `cty`, which the decryptor ignores:
    ///
    ///     from jwcrypto import jwe, jwk
    ///     key = jwk.JWK(kty="oct", k=b64url(bytes(range(0x40, 0x60))))   # KEK bytes 40 41 … 5F
    ///     plaintext = "Latch \u2713 play-integrity test, jwcrypto".encode("utf-8")
    ///     protected = json.dumps({"enc": "A256GCM", "alg": "A256KW", "kid": "play-console", "cty": "JWT"})
    ///     e = jwe.JWE(plaintext, protected=protected); e.add_recipient(key); token = e.serialize(compact=True)
    static let jwcryptoKEK = Array(UInt8(0x40) ... UInt8(0x5F))
    static let jwcryptoPlaintext = hex("4c6174636820e29c9320706c61792d696e7465677269747920746573742c206a7763727970746f")
    static let jwcryptoToken =
        "eyJlbmMiOiAiQTI1NkdDTSIsICJhbGciOiAiQTI1NktXIiwgImtpZCI6ICJwbGF5LWNvbnNvbGUiLCAiY3R5IjogIkpXVCJ9"
        + ".YjhmzCZFnMENnixIknzkTEKlTF4XR3G9sc2v08iKHqrvs91p8okNgw"
        + ".-0zmyGloOb8k1-5D"
        + ".JXkNHslMiFxC9ezMSS4B_41P6HbFWqpJXx9jau5Emf2vbj1LuMC1"
        + ".ArAeTLEZsC0a_vPNmt_SCw"

    @Test func jwcryptoTokenDecrypts() throws {
        let plaintext = try JWECompact.decrypt(Self.jwcryptoToken, keyEncryptionKey: SymmetricKey(data: Self.jwcryptoKEK))
        #expect(plaintext == Self.jwcryptoPlaintext)
        #expect(String(decoding: plaintext, as: UTF8.self) == "Latch \u{2713} play-integrity test, jwcrypto")
    }
}
