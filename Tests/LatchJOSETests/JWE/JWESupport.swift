import Crypto
import Foundation
import LatchJOSE

/// Test helpers. Token assembly here uses Foundation's base64 and swift-crypto directly, independently of the
/// code under test, so a token built here checks `JWECompact.decrypt` rather than mirroring it.
enum JWEFixture {
    /// The fixed key-encryption key of most tests: bytes 0x00…0x1F (RFC 3394 §4.6's KEK).
    static let kekBytes: [UInt8] = Array(0x00 ... 0x1F)
    static let kek = SymmetricKey(data: kekBytes)
    /// A fixed content-encryption key: RFC 3394 §4.6's 256-bit key data.
    static let cekBytes = hex("00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F")
    static let iv = hex("f0e1d2c3b4a5968778695a4b")
    static let plaintext = Array("eyJhbGciOiJFUzI1NiJ9.eyJub25jZSI6ImxhdGNoIn0.c2lnbmF0dXJl".utf8)
    static let standardHeader = #"{"alg":"A256KW","enc":"A256GCM"}"#

    /// A valid token from `JWECompact.encrypt`, deterministic.
    static var token: String {
        JWECompact.encrypt(plaintext, keyEncryptionKey: kek, contentType: "JWT", cek: SymmetricKey(data: cekBytes), iv: iv)
    }

    /// Builds a token with any header text, sealed for real: AES-KW of `cek` under `kek`, AES-GCM with the
    /// header segment as AAD (or `aad` when given, to build deliberately wrong tokens).
    static func seal(
        header: String,
        plaintext: [UInt8] = JWEFixture.plaintext,
        kek: SymmetricKey = JWEFixture.kek,
        cek: [UInt8] = JWEFixture.cekBytes,
        iv: [UInt8] = JWEFixture.iv,
        aad: [UInt8]? = nil
    ) throws -> String {
        let headerSegment = b64url(Array(header.utf8))
        let contentKey = SymmetricKey(data: cek)
        let wrapped = try AES.KeyWrap.wrap(contentKey, using: kek)
        let box = try AES.GCM.seal(
            plaintext, using: contentKey, nonce: AES.GCM.Nonce(data: iv),
            authenticating: aad ?? Array(headerSegment.utf8))
        return [headerSegment, b64url(Array(wrapped)), b64url(iv), b64url(Array(box.ciphertext)), b64url(Array(box.tag))]
            .joined(separator: ".")
    }

    /// The five parts of a token, as text.
    static func parts(_ token: String) -> [String] {
        token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    /// The token with part `index` replaced by the base64url of `bytes`.
    static func replacing(_ token: String, part index: Int, with bytes: [UInt8]) -> String {
        var parts = parts(token)
        parts[index] = b64url(bytes)
        return parts.joined(separator: ".")
    }

    /// The token with part `index` replaced by `text` verbatim.
    static func replacing(_ token: String, part index: Int, withText text: String) -> String {
        var parts = parts(token)
        parts[index] = text
        return parts.joined(separator: ".")
    }

    /// The decoded bytes of part `index`.
    static func decodedPart(_ token: String, _ index: Int) -> [UInt8] {
        unb64url(parts(token)[index])!
    }

    /// The reason `decrypt` refuses `token`, or `nil` when it succeeds.
    static func reason(_ token: String, key: SymmetricKey = JWEFixture.kek) -> JWEError.Reason? {
        do {
            _ = try JWECompact.decrypt(token, keyEncryptionKey: key)
            return nil
        } catch {
            return error.reason
        }
    }
}

/// Unpadded base64url through Foundation (an implementation independent of the one under test).
func b64url(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}

/// Decodes unpadded base64url through Foundation (lenient about trailing bits; test use only).
func unb64url(_ text: String) -> [UInt8]? {
    var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while standard.count % 4 != 0 { standard += "=" }
    return Data(base64Encoded: standard).map { Array($0) }
}

func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.utf8)
    precondition(digits.count % 2 == 0)
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0 ..< $0 + 2], as: UTF8.self), radix: 16)! }
}

func hexString(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// JWESplitMix64: a tiny seeded generator so the fuzz run is the same every time.
struct JWESplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
