import Crypto
import Foundation
import LatchModel

/// Compact-serialized JWE (RFC 7516) with exactly one algorithm pair: key management `A256KW` (AES Key Wrap,
/// RFC 3394, with a 256-bit key-encryption key; RFC 7518 §4.4) and content encryption `A256GCM` (AES-256-GCM
/// with a 96-bit IV and a 128-bit tag; RFC 7518 §5.3). This is the shape of a Google Play Integrity token: the
/// server decrypts it with the 32-byte AES key from the Play Console and gets a compact JWS (ES256) to verify.
///
/// Decryption follows RFC 7516 §5.2 for the compact serialization:
///
/// 1. The token must be at most ``maximumInputLength`` bytes (checked before anything is decoded).
/// 2. It must have exactly five `.`-separated parts, each strict unpadded base64url (canonical spelling only,
///    no `=`, no whitespace). Only the ciphertext may be empty.
/// 3. The protected header must be a strict JSON object: UTF-8, RFC 8259 grammar, no duplicate member names.
///    `alg` must be `"A256KW"` and `enc` `"A256GCM"`; a `zip` or a `crit` member is refused outright. Other
///    members (`typ`, `cty`, `kid`, …) are ignored. (A compact JWE has no unprotected header.)
/// 4. The encrypted key must be 40 bytes (a 32-byte CEK plus AES-KW's 8-byte integrity block), the IV 12 and
///    the tag 16.
/// 5. The CEK is unwrapped with AES-KW; the unwrap's integrity check (the 0xA6A6… initial value) is done by
///    swift-crypto (BoringSSL's `AES_unwrap_key`, which compares in constant time).
/// 6. The content is opened with AES-GCM, with the additional authenticated data being the ASCII bytes of the
///    protected header's base64url segment as it appears in the token (RFC 7516 §5.2 step 14, no AAD member in
///    the compact form); the tag check is done by swift-crypto.
///
/// Failure reasons are in ``JWEError/Reason``. A wrong key-encryption key and a tampered encrypted key both
/// fail the AES-KW integrity check (`key_unwrap_failed`); telling that apart from a GCM failure gives an
/// attacker nothing useful, since AES-KW is deterministic and authenticated under the same secret key.
public enum JWECompact {
    /// The longest token accepted, in UTF-8 bytes (64 KiB). Play Integrity tokens are a few KiB.
    public static let maximumInputLength = 65_536

    /// The only key-management algorithm accepted.
    public static let algorithm = "A256KW"
    /// The only content-encryption algorithm accepted.
    public static let encryption = "A256GCM"

    static let wrappedKeyByteCount = 40
    static let contentKeyByteCount = 32
    static let ivByteCount = 12
    static let tagByteCount = 16

    /// Decrypts a compact `A256KW` + `A256GCM` JWE and returns its plaintext.
    ///
    /// - Parameters:
    ///   - compact: The token, five base64url parts separated by `.`.
    ///   - keyEncryptionKey: The 256-bit AES key-encryption key (for Play Integrity: the decryption key from
    ///     the Play Console, base64-decoded).
    /// - Throws: ``JWEError`` with a stable reason; nothing else.
    public static func decrypt(_ compact: String, keyEncryptionKey: SymmetricKey) throws(JWEError) -> [UInt8] {
        // 1. Size, before any work proportional to the input.
        guard compact.utf8.count <= maximumInputLength else {
            throw JWEError(.tooLarge, "the token is longer than \(maximumInputLength) bytes")
        }
        guard keyEncryptionKey.bitCount == 256 else {
            throw JWEError(.invalidKey, "the key-encryption key must be 256 bits, not \(keyEncryptionKey.bitCount)")
        }

        // 2. Five parts, each strict base64url.
        let token = Array(compact.utf8)
        var ranges: [Range<Int>] = []
        var start = 0
        for index in token.indices where token[index] == UInt8(ascii: ".") {
            ranges.append(start ..< index)
            start = index + 1
            if ranges.count > 4 { break }
        }
        ranges.append(start ..< token.count)
        guard ranges.count == 5 else {
            throw JWEError(.malformed, ranges.count > 5 ? "more than five parts" : "\(ranges.count) parts, not five")
        }
        let names = ["protected header", "encrypted key", "initialization vector", "ciphertext", "authentication tag"]
        var parts: [[UInt8]] = []
        for (index, range) in ranges.enumerated() {
            guard let decoded = token[range].withUnsafeBufferPointer({ Base64URL.decodeBytes($0) }) else {
                throw JWEError(.malformed, "the \(names[index]) is not unpadded base64url")
            }
            parts.append(decoded)
        }
        let headerBytes = parts[0], encryptedKey = parts[1], iv = parts[2], ciphertext = parts[3], tag = parts[4]

        // 3. The protected header.
        guard !headerBytes.isEmpty else { throw JWEError(.malformed, "the protected header is empty") }
        // LatchModel's strict parser: UTF-8, RFC 8259 grammar, no duplicate member names, bounded depth.
        let header: JSONValue
        do {
            header = try JSONValue.parse(headerBytes)
        } catch {
            throw JWEError(.malformed, "the protected header is not strict JSON: \(error)")
        }
        guard case .object(let members) = header else {
            throw JWEError(.malformed, "the protected header is not a JSON object")
        }
        // Compared byte for byte: Swift's `==` is canonical equivalence, under which "A256\u{212A}W" (KELVIN SIGN)
        // equals "A256KW" — a spelling other JOSE implementations would refuse.
        guard case .string(let alg)? = members["alg"] else {
            throw JWEError(.malformed, "the protected header has no string \"alg\"")
        }
        guard alg.utf8.elementsEqual(algorithm.utf8) else {
            throw JWEError(.unsupportedAlgorithm, "alg \(quoted(alg)) is not supported; only \(algorithm)")
        }
        guard case .string(let enc)? = members["enc"] else {
            throw JWEError(.malformed, "the protected header has no string \"enc\"")
        }
        guard enc.utf8.elementsEqual(encryption.utf8) else {
            throw JWEError(.unsupportedEncryption, "enc \(quoted(enc)) is not supported; only \(encryption)")
        }
        guard members["crit"] == nil else {
            throw JWEError(.unsupportedCritical, "the protected header has \"crit\"; no extensions are understood")
        }
        guard members["zip"] == nil else {
            throw JWEError(.unsupportedCompression, "the protected header has \"zip\"; compression is refused")
        }

        // 4. Lengths.
        guard encryptedKey.count == wrappedKeyByteCount else {
            throw JWEError(.malformed, "the encrypted key is \(encryptedKey.count) bytes, not \(wrappedKeyByteCount)")
        }
        guard iv.count == ivByteCount else {
            throw JWEError(.malformed, "the initialization vector is \(iv.count) bytes, not \(ivByteCount)")
        }
        guard tag.count == tagByteCount else {
            throw JWEError(.malformed, "the authentication tag is \(tag.count) bytes, not \(tagByteCount)")
        }

        // 5. Unwrap the content-encryption key.
        let contentKey: SymmetricKey
        do {
            contentKey = try AES.KeyWrap.unwrap(encryptedKey, using: keyEncryptionKey)
        } catch {
            throw JWEError(.keyUnwrapFailed, "AES key unwrap failed (wrong key or tampered encrypted key)")
        }
        guard contentKey.bitCount == contentKeyByteCount * 8 else {
            throw JWEError(.keyUnwrapFailed, "the unwrapped content-encryption key is not 256 bits")
        }

        // 6. Open the content; AAD is the header segment exactly as encoded in the token.
        let additionalData = Array(token[ranges[0]])
        do {
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: iv), ciphertext: ciphertext, tag: tag)
            return Array(try AES.GCM.open(box, using: contentKey, authenticating: additionalData))
        } catch {
            throw JWEError(.decryptionFailed, "AES-GCM authentication failed")
        }
    }

    /// Encrypts `plaintext` as a compact `A256KW` + `A256GCM` JWE. For tests and simulated evidence.
    ///
    /// The protected header is `{"alg":"A256KW","enc":"A256GCM"}`, with `"cty"` appended when `contentType`
    /// is given. With `cek` and `iv` given the output is deterministic; otherwise each is fresh and random.
    /// Never reuse an `iv` with the same `cek` outside of fixed test vectors.
    ///
    /// - Precondition: `keyEncryptionKey` and `cek` are 256-bit keys and `iv` is 12 bytes.
    public static func encrypt(
        _ plaintext: [UInt8],
        keyEncryptionKey: SymmetricKey,
        contentType: String? = nil,
        cek: SymmetricKey? = nil,
        iv: [UInt8]? = nil
    ) -> String {
        precondition(keyEncryptionKey.bitCount == 256, "the key-encryption key must be 256 bits")
        let contentKey = cek ?? SymmetricKey(size: .bits256)
        precondition(contentKey.bitCount == 256, "the content-encryption key must be 256 bits")
        let ivBytes = iv ?? AES.GCM.Nonce().withUnsafeBytes { Array($0) }
        precondition(ivBytes.count == ivByteCount, "the initialization vector must be 12 bytes")

        var headerJSON = "{\"alg\":\"\(algorithm)\",\"enc\":\"\(encryption)\""
        if let contentType { headerJSON += ",\"cty\":" + jsonString(contentType) }
        headerJSON += "}"
        let headerSegment = Base64URL.encode(Data(headerJSON.utf8))

        let wrappedKey: Data
        let box: AES.GCM.SealedBox
        do {
            wrappedKey = try AES.KeyWrap.wrap(contentKey, using: keyEncryptionKey)
            box = try AES.GCM.seal(
                plaintext, using: contentKey, nonce: try AES.GCM.Nonce(data: ivBytes),
                authenticating: Array(headerSegment.utf8))
        } catch {
            preconditionFailure("AES-KW / AES-GCM failed on valid inputs: \(error)")
        }
        return [
            headerSegment,
            Base64URL.encode(Data(wrappedKey)),
            Base64URL.encode(Data(ivBytes)),
            Base64URL.encode(Data(box.ciphertext)),
            Base64URL.encode(Data(box.tag)),
        ].joined(separator: ".")
    }

    /// A JSON string literal for `text`: quotes, backslashes and control characters escaped.
    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{00}" ..< "\u{20}":
                let hex = String(scalar.value, radix: 16, uppercase: false)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// A header value for an error detail: quoted, escaped, and cut short so a hostile header cannot flood logs.
    private static func quoted(_ value: String) -> String {
        let limit = 40
        let cut = value.unicodeScalars.count > limit
        let shown = cut ? String(String.UnicodeScalarView(value.unicodeScalars.prefix(limit))) : value
        return jsonString(shown) + (cut ? "…" : "")
    }
}
