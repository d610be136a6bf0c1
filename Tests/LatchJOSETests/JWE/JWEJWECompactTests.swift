import Crypto
import Foundation
import LatchJOSE
import Testing

@Suite struct JWERoundTripTests {
    @Test(arguments: [0, 1, 15, 16, 17, 100, 4096])
    func roundTripRandomKeys(length: Int) throws {
        var generator = JWESplitMix64(seed: UInt64(length))
        let plaintext = (0 ..< length).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let kek = SymmetricKey(size: .bits256)
        let token = JWECompact.encrypt(plaintext, keyEncryptionKey: kek)
        #expect(try JWECompact.decrypt(token, keyEncryptionKey: kek) == plaintext)
    }

    @Test func randomCEKAndIVDifferEachTime() throws {
        let first = JWECompact.encrypt(JWEFixture.plaintext, keyEncryptionKey: JWEFixture.kek)
        let second = JWECompact.encrypt(JWEFixture.plaintext, keyEncryptionKey: JWEFixture.kek)
        #expect(first != second)
        #expect(JWEFixture.parts(first)[1] != JWEFixture.parts(second)[1])
        #expect(JWEFixture.parts(first)[2] != JWEFixture.parts(second)[2])
        #expect(try JWECompact.decrypt(first, keyEncryptionKey: JWEFixture.kek) == JWEFixture.plaintext)
        #expect(try JWECompact.decrypt(second, keyEncryptionKey: JWEFixture.kek) == JWEFixture.plaintext)
    }

    @Test func deterministicWithCEKAndIV() {
        #expect(JWEFixture.token == JWEFixture.token)
    }

    @Test func headerShape() {
        let header = String(decoding: JWEFixture.decodedPart(JWEFixture.token, 0), as: UTF8.self)
        #expect(header == #"{"alg":"A256KW","enc":"A256GCM","cty":"JWT"}"#)
        let plain = JWECompact.encrypt([], keyEncryptionKey: JWEFixture.kek)
        #expect(String(decoding: JWEFixture.decodedPart(plain, 0), as: UTF8.self) == JWEFixture.standardHeader)
    }

    @Test func contentTypeIsEscapedAndStillDecrypts() throws {
        let contentType = "a\"b\\c\n\u{01}é"
        let token = JWECompact.encrypt(JWEFixture.plaintext, keyEncryptionKey: JWEFixture.kek, contentType: contentType)
        let header = String(decoding: JWEFixture.decodedPart(token, 0), as: UTF8.self)
        #expect(header == #"{"alg":"A256KW","enc":"A256GCM","cty":"a\"b\\c\n\u0001é"}"#)
        let object = try JSONSerialization.jsonObject(with: Data(header.utf8)) as? [String: String]
        #expect(object?["cty"] == contentType)
        #expect(try JWECompact.decrypt(token, keyEncryptionKey: JWEFixture.kek) == JWEFixture.plaintext)
    }

    @Test func emptyPlaintextHasEmptyCiphertextPart() throws {
        let token = JWECompact.encrypt([], keyEncryptionKey: JWEFixture.kek)
        #expect(JWEFixture.parts(token)[3] == "")
        #expect(try JWECompact.decrypt(token, keyEncryptionKey: JWEFixture.kek) == [])
    }

    @Test func tokenBuiltIndependentlyDecrypts() throws {
        let token = try JWEFixture.seal(header: #"{"alg":"A256KW","enc":"A256GCM","typ":"JOSE","kid":"k1","x":[1,{"y":null}]}"#)
        #expect(try JWECompact.decrypt(token, keyEncryptionKey: JWEFixture.kek) == JWEFixture.plaintext)
    }

    @Test func aadIsTheEncodedHeaderSegment() throws {
        // RFC 7516 §5.2 step 14: AAD = ASCII(BASE64URL(UTF8(protected header))). A token whose GCM AAD was the
        // decoded header JSON instead must not decrypt.
        let right = try JWEFixture.seal(header: JWEFixture.standardHeader)
        #expect(JWEFixture.reason(right) == nil)
        let wrong = try JWEFixture.seal(header: JWEFixture.standardHeader, aad: Array(JWEFixture.standardHeader.utf8))
        #expect(JWEFixture.reason(wrong) == .decryptionFailed)
        let none = try JWEFixture.seal(header: JWEFixture.standardHeader, aad: [])
        #expect(JWEFixture.reason(none) == .decryptionFailed)
    }

    @Test func sizeLimit() throws {
        // A real token just under the limit decrypts.
        let plaintext = [UInt8](repeating: 0x41, count: 49_000)
        let token = JWECompact.encrypt(plaintext, keyEncryptionKey: JWEFixture.kek)
        #expect(token.utf8.count <= JWECompact.maximumInputLength)
        #expect(try JWECompact.decrypt(token, keyEncryptionKey: JWEFixture.kek) == plaintext)
        // One byte over: refused as too large before decoding; exactly at the limit it is parsed (and refused
        // for what it is).
        let limit = JWECompact.maximumInputLength
        #expect(JWEFixture.reason(String(repeating: "A", count: limit + 1)) == .tooLarge)
        #expect(JWEFixture.reason(String(repeating: "A", count: limit)) == .malformed)
        let padded = token + String(repeating: "A", count: limit + 1 - token.utf8.count)
        #expect(JWEFixture.reason(padded) == .tooLarge)
        // Counted in UTF-8 bytes, not characters.
        #expect(JWEFixture.reason(String(repeating: "é", count: limit / 2 + 1)) == .tooLarge)
    }

    @Test func errorShape() {
        #expect(JWEError(.malformed, "one") == JWEError(.malformed, "two"))
        #expect(JWEError(.malformed) != JWEError(.tooLarge))
        #expect(JWEError(.keyUnwrapFailed, "x").description == "key_unwrap_failed: x")
        #expect(JWEError(.keyUnwrapFailed).code == "key_unwrap_failed")
        #expect(JWEError.Reason.allCases.map(\.rawValue) == [
            "too_large", "malformed", "unsupported_algorithm", "unsupported_encryption", "unsupported_compression",
            "unsupported_critical", "invalid_key", "key_unwrap_failed", "decryption_failed",
        ])
    }
}

@Suite struct JWETamperTests {
    @Test func untamperedDecrypts() throws {
        #expect(try JWECompact.decrypt(JWEFixture.token, keyEncryptionKey: JWEFixture.kek) == JWEFixture.plaintext)
    }

    @Test(arguments: [
        #"{"alg":"A256KW","enc":"A256GCM","cty":"JWS"}"#,  // a value changed
        #"{"enc":"A256GCM","alg":"A256KW","cty":"JWT"}"#,  // same members, another order
        #"{"alg":"A256KW","enc":"A256GCM","cty":"JWT" }"#,  // same members, extra whitespace
        #"{"alg":"A256KW","enc":"A256GCM"}"#,  // a member removed
        #"{"alg":"A256KW","enc":"A256GCM","cty":"JWT","kid":"x"}"#,  // a member added
    ])
    func protectedHeaderReplaced(header: String) {
        // Still a valid, supported header, but not the one the AAD covered.
        let token = JWEFixture.replacing(JWEFixture.token, part: 0, with: Array(header.utf8))
        #expect(JWEFixture.reason(token) == .decryptionFailed)
    }

    @Test func protectedHeaderBitFlips() {
        // Any single flipped bit in the header JSON is refused; which reason depends on what the flip makes.
        let header = JWEFixture.decodedPart(JWEFixture.token, 0)
        for index in header.indices {
            for bit in 0 ..< 8 {
                var tampered = header
                tampered[index] ^= 1 << bit
                let reason = JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 0, with: tampered))
                #expect(reason != nil, "byte \(index) bit \(bit)")
            }
        }
    }

    @Test func encryptedKeyTampered() {
        let key = JWEFixture.decodedPart(JWEFixture.token, 1)
        #expect(key.count == 40)
        for index in key.indices {
            var tampered = key
            tampered[index] ^= 0x80
            #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 1, with: tampered)) == .keyUnwrapFailed, "byte \(index)")
        }
    }

    @Test func encryptedKeySubstitutedWithAnotherValidWrap() throws {
        // A genuine wrap of a different CEK under the same KEK unwraps fine, then GCM fails.
        let other = try AES.KeyWrap.wrap(SymmetricKey(size: .bits256), using: JWEFixture.kek)
        #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 1, with: Array(other))) == .decryptionFailed)
    }

    @Test(arguments: [2, 3, 4])
    func ivCiphertextOrTagTampered(part: Int) {
        let bytes = JWEFixture.decodedPart(JWEFixture.token, part)
        for index in bytes.indices {
            var tampered = bytes
            tampered[index] ^= 0x01
            #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: part, with: tampered)) == .decryptionFailed, "part \(part) byte \(index)")
        }
    }

    @Test func ciphertextTruncatedOrExtended() {
        let ciphertext = JWEFixture.decodedPart(JWEFixture.token, 3)
        #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 3, with: Array(ciphertext.dropLast()))) == .decryptionFailed)
        #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 3, with: ciphertext + [0])) == .decryptionFailed)
        #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 3, with: [])) == .decryptionFailed)
    }

    @Test func wrongKey() {
        #expect(JWEFixture.reason(JWEFixture.token, key: SymmetricKey(size: .bits256)) == .keyUnwrapFailed)
        var near = JWEFixture.kekBytes
        near[31] ^= 0x01
        #expect(JWEFixture.reason(JWEFixture.token, key: SymmetricKey(data: near)) == .keyUnwrapFailed)
    }

    @Test(arguments: [0, 16, 24, 31, 33, 64])
    func keyEncryptionKeyOfWrongSize(byteCount: Int) {
        let key = SymmetricKey(data: [UInt8](repeating: 7, count: byteCount))
        #expect(JWEFixture.reason(JWEFixture.token, key: key) == .invalidKey)
    }
}

@Suite struct JWERefusalTests {
    // MARK: Structure and base64url

    @Test(arguments: [
        "", ".", "....", "a.b.c.d", "a.b.c.d.e.f", "......",
    ])
    func notFiveParts(token: String) {
        #expect(JWEFixture.reason(token) == .malformed)
    }

    @Test func fourOrSixParts() {
        let parts = JWEFixture.parts(JWEFixture.token)
        #expect(JWEFixture.reason(parts.prefix(4).joined(separator: ".")) == .malformed)
        #expect(JWEFixture.reason((parts + [parts[4]]).joined(separator: ".")) == .malformed)
        #expect(JWEFixture.reason(JWEFixture.token + ".") == .malformed)
        #expect(JWEFixture.reason("." + JWEFixture.token) == .malformed)
    }

    @Test(arguments: 0 ..< 5)
    func badBase64URLInEachPart(part: Int) {
        let original = JWEFixture.parts(JWEFixture.token)[part]
        let spoilers: [String] = [
            original + "=",  // padding
            original + "==",
            original + " ",  // whitespace
            " " + original,
            original + "\n",
            "\t" + original,
            original + "+",  // the standard (non-URL) alphabet
            original + "/",
            original + "%",
            original + "é",  // non-ASCII
            original + "\u{0}",
            original + "A",  // a length that is 1 mod 4 for some parts, or a different value: see below
        ]
        for spoiled in spoilers.dropLast() {
            #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: part, withText: spoiled)) == .malformed, "\(spoiled.debugDescription)")
        }
        // A part of length 1 mod 4 can never be base64url.
        let oneMod4 = original.count % 4 == 0 ? original + "A" : String(repeating: "A", count: 5)
        #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: part, withText: oneMod4)) == .malformed)
    }

    @Test func nonCanonicalTrailingBitsRefused() {
        // The IV is 12 bytes (16 characters, no trailing bits); the tag is 16 bytes (22 characters: the last
        // carries 4 unused bits). Setting an unused bit re-spells the same bytes and is refused.
        let tag = JWEFixture.parts(JWEFixture.token)[4]
        #expect(tag.count == 22)
        let last = tag.last!
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let value = alphabet.firstIndex(of: last)!
        let respelled = String(tag.dropLast()) + String(alphabet[value | 0x01])
        if respelled != tag {
            #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 4, withText: respelled)) == .malformed)
        }
        // And the same through a hand-made example: "AAAAAAAAAAAAAAAAAAAAAB" has a set trailing bit.
        #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 4, withText: "AAAAAAAAAAAAAAAAAAAAAB")) == .malformed)
        #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 4, withText: "AAAAAAAAAAAAAAAAAAAAAA")) == .decryptionFailed)
    }

    @Test func emptyHeaderOrKeyOrIVOrTag() {
        for part in [0, 1, 2, 4] {
            #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: part, withText: "")) == .malformed, "part \(part)")
        }
    }

    // MARK: Header

    @Test(arguments: [
        "[]", #"["alg","A256KW"]"#, #""A256KW""#, "1", "null", "true",
    ])
    func headerNotAnObject(header: String) throws {
        #expect(JWEFixture.reason(try JWEFixture.seal(header: header)) == .malformed)
    }

    @Test(arguments: [
        #"{"alg":"A256KW","enc":"A256GCM""#,  // unterminated
        #"{"alg":"A256KW","enc":"A256GCM",}"#,  // trailing comma
        #"{"alg":"A256KW","enc":"A256GCM"}x"#,  // trailing garbage
        #"{"alg":"A256KW","enc":"A256GCM"}{}"#,  // two values
        #"{'alg':'A256KW','enc':'A256GCM'}"#,  // single quotes
        #"{alg:"A256KW",enc:"A256GCM"}"#,  // bare names
        "\u{FEFF}{\"alg\":\"A256KW\",\"enc\":\"A256GCM\"}",  // byte order mark
        "{\"alg\":\"A256KW\",\"enc\":\"A256GCM\",\"cty\":\"a\u{01}\"}",  // raw control character in a string
        #"{"alg":"A256KW","enc":"A256GCM","kid":"\ud800"}"#,  // lone surrogate escape
        #"{"alg":"A256KW","enc":"A256GCM","n":01}"#,  // leading zero
        #"{"alg":"A256KW","enc":"A256GCM"} /* c */"#,  // comment
    ])
    func headerNotStrictJSON(header: String) throws {
        #expect(JWEFixture.reason(try JWEFixture.seal(header: header)) == .malformed)
    }

    @Test func headerInvalidUTF8() throws {
        // A header whose bytes are not UTF-8 (0xC0 0xAF is an overlong "/"), assembled by hand.
        var bytes = Array(#"{"alg":"A256KW","enc":"A256GCM","kid":"x"}"#.utf8)
        bytes.insert(contentsOf: [0xC0, 0xAF], at: bytes.count - 2)
        let token = JWEFixture.replacing(try JWEFixture.seal(header: JWEFixture.standardHeader), part: 0, with: bytes)
        #expect(JWEFixture.reason(token) == .malformed)
    }

    @Test(arguments: [
        #"{"alg":"A256KW","enc":"A256GCM","alg":"A256KW"}"#,  // same name, same value
        #"{"alg":"dir","enc":"A256GCM","alg":"A256KW"}"#,  // last-one-wins would accept this
        #"{"alg":"A256KW","enc":"A256GCM","\u0061lg":"A256KW"}"#,  // the same name, escaped
        #"{"alg":"A256KW","enc":"A256GCM","kid":"a","kid":"b"}"#,  // an ignored member, duplicated
        #"{"alg":"A256KW","enc":"A256GCM","x":{"k":1,"k":2}}"#,  // a duplicate in a nested object
    ])
    func duplicateHeaderNames(header: String) throws {
        #expect(JWEFixture.reason(try JWEFixture.seal(header: header)) == .malformed)
    }

    @Test(arguments: [
        #"{"enc":"A256GCM"}"#,  // no alg
        #"{"alg":null,"enc":"A256GCM"}"#,
        #"{"alg":256,"enc":"A256GCM"}"#,
        #"{"alg":["A256KW"],"enc":"A256GCM"}"#,
        #"{"alg":"A256KW"}"#,  // no enc
        #"{"alg":"A256KW","enc":{"v":"A256GCM"}}"#,
    ])
    func algOrEncMissingOrNotAString(header: String) throws {
        #expect(JWEFixture.reason(try JWEFixture.seal(header: header)) == .malformed)
    }

    @Test(arguments: [
        "A128KW", "A192KW", "dir", "RSA-OAEP", "RSA-OAEP-256", "ECDH-ES+A256KW", "A256GCMKW", "PBES2-HS512+A256KW",
        "none", "a256kw", "A256KW ", "", "A256\u{212A}W",  // the last: KELVIN SIGN, canonically equivalent to K
    ])
    func unsupportedAlgorithm(alg: String) throws {
        let header = "{\"alg\":\(jsonQuote(alg)),\"enc\":\"A256GCM\"}"
        #expect(JWEFixture.reason(try JWEFixture.seal(header: header)) == .unsupportedAlgorithm)
    }

    @Test(arguments: ["A128GCM", "A192GCM", "A128CBC-HS256", "A256CBC-HS512", "a256gcm", "", "A256GCM\u{0}"])
    func unsupportedEncryption(enc: String) throws {
        let header = "{\"alg\":\"A256KW\",\"enc\":\(jsonQuote(enc))}"
        #expect(JWEFixture.reason(try JWEFixture.seal(header: header)) == .unsupportedEncryption)
    }

    @Test(arguments: [#""DEF""#, #""""#, "null", "0", "{}"])
    func zipRefused(value: String) throws {
        let header = #"{"alg":"A256KW","enc":"A256GCM","zip":"# + value + "}"
        #expect(JWEFixture.reason(try JWEFixture.seal(header: header)) == .unsupportedCompression)
    }

    @Test(arguments: [#"["exp"]"#, "[]", #"["zip"]"#, "null", #""b64""#])
    func critRefused(value: String) throws {
        let header = #"{"alg":"A256KW","enc":"A256GCM","crit":"# + value + #","exp":1}"#
        #expect(JWEFixture.reason(try JWEFixture.seal(header: header)) == .unsupportedCritical)
    }

    @Test func algIsCheckedBeforeEnc() throws {
        #expect(JWEFixture.reason(try JWEFixture.seal(header: #"{"alg":"dir","enc":"A128GCM"}"#)) == .unsupportedAlgorithm)
    }

    // MARK: Lengths

    @Test(arguments: [0, 1, 8, 11, 13, 16, 32])
    func wrongIVLength(length: Int) throws {
        let token = JWEFixture.replacing(JWEFixture.token, part: 2, with: [UInt8](repeating: 0x5A, count: length))
        #expect(JWEFixture.reason(token) == .malformed)
    }

    @Test(arguments: [0, 1, 12, 15, 17, 32])
    func wrongTagLength(length: Int) {
        let tag = JWEFixture.decodedPart(JWEFixture.token, 4)
        let resized = length <= 16 ? Array(tag.prefix(length)) : tag + [UInt8](repeating: 0, count: length - 16)
        #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 4, with: resized)) == .malformed)
    }

    @Test func wrongEncryptedKeyLength() throws {
        // A genuine AES-KW of a 128-bit or 192-bit CEK (24 or 32 bytes) or of a 512-bit one (72 bytes) is refused
        // for its length: A256GCM needs a 256-bit CEK.
        for size in [SymmetricKeySize.bits128, .bits192, SymmetricKeySize(bitCount: 512)] {
            let wrapped = try AES.KeyWrap.wrap(SymmetricKey(size: size), using: JWEFixture.kek)
            #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 1, with: Array(wrapped))) == .malformed)
        }
        for length in [1, 7, 8, 39, 41, 48] {
            let bytes = [UInt8](repeating: 0xA6, count: length)
            #expect(JWEFixture.reason(JWEFixture.replacing(JWEFixture.token, part: 1, with: bytes)) == .malformed)
        }
    }

    // MARK: Order of checks

    @Test func tooLargeIsCheckedFirst() {
        let huge = String(repeating: ".", count: JWECompact.maximumInputLength + 1)
        #expect(JWEFixture.reason(huge, key: SymmetricKey(data: [1, 2, 3])) == .tooLarge)
    }

    @Test func headerIsCheckedBeforeTheKeys() throws {
        // An unsupported alg is reported as such even if the key-encryption key is also wrong.
        let token = try JWEFixture.seal(header: #"{"alg":"A128KW","enc":"A256GCM"}"#)
        #expect(JWEFixture.reason(token, key: SymmetricKey(size: .bits256)) == .unsupportedAlgorithm)
    }
}

/// A JSON string literal (escaping via JSONSerialization so tests do not reuse the code under test).
func jsonQuote(_ text: String) -> String {
    let data = try! JSONSerialization.data(withJSONObject: [text])
    let array = String(decoding: data, as: UTF8.self)
    return String(array.dropFirst().dropLast())
}
