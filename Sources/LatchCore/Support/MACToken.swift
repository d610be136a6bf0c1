import Crypto
import Foundation
import LatchJOSE
import LatchModel

/// A stateless value Latch issues and later recognises without storing it: registration challenges (`lrc_`), sign-in
/// nonces (`lsn_`), FIDO ceremony ids (`lfc_`) and refresh tokens (`lrt_`).
///
/// Wire form: `prefix` + its fields joined by `.` + `.` + base64url(HMAC-SHA-256(key, `domain|field1|…|fieldN|bound1|…`)).
/// The `domain` (e.g. `lrt1`) keeps one format's MAC from being accepted as another's even under one key, and names
/// the version; the *bound* values are not in the token but are MAC'd, so a value issued for one username or one
/// registration type is refused for another. Fields never contain `.` or `|` (callers issue base64url, decimal and
/// fixed words). Keys are per purpose (``KeySealer/derivedKey(from:purpose:)``).
public struct MACToken: Sendable {
    /// The text before the fields, e.g. `lrt_`.
    public let prefix: String
    /// The MAC's domain separator and version, e.g. `lrt1`.
    public let domain: String
    /// The longest token accepted, bytes: longer input is refused before any work.
    public let maximumLength: Int
    /// HMAC-SHA-256 with the key's inner and outer pads already absorbed: each token copies it (the hash contexts are
    /// copied on write) instead of processing the key again.
    private let keyed: HMAC<SHA256>
    /// `domain` as bytes, the start of every MAC'd message.
    private let domainBytes: [UInt8]

    public init(prefix: String, domain: String, maximumLength: Int, key: SymmetricKey) {
        self.prefix = prefix
        self.domain = domain
        self.maximumLength = maximumLength
        keyed = HMAC<SHA256>(key: key)
        domainBytes = Array(domain.utf8)
    }

    /// The token carrying `fields`, its MAC also covering `bound`.
    public func seal(_ fields: [String], bound: [String] = []) -> String {
        var token = prefix
        token.reserveCapacity(prefix.utf8.count + fields.reduce(0) { $0 + $1.utf8.count + 1 } + 43)
        for field in fields {
            token += field
            token += "."
        }
        let code = mac(fields.map { Array($0.utf8) }, bound)
        return token + code.withUnsafeBytes { Base64URL.encode($0) }
    }

    /// The fields of `token` when it is one this key sealed with `fieldCount` fields and the same `bound` values;
    /// nil otherwise (wrong prefix or length, another shape, a MAC that does not match — compared in constant time).
    ///
    /// Works on the token's UTF-8 bytes: a refresh or a sign-in opens one of these on every request.
    public func open(_ token: String, fieldCount: Int, bound: [String] = []) -> [Substring]? {
        let utf8 = token.utf8
        guard utf8.count <= maximumLength, token.hasPrefix(prefix) else { return nil }
        // The byte offsets of the `.` separators after the prefix: exactly `fieldCount` of them.
        let bytes = Array(utf8)
        let start = prefix.utf8.count
        var dots: [Int] = []
        dots.reserveCapacity(fieldCount)
        for index in start..<bytes.count where bytes[index] == UInt8(ascii: ".") {
            dots.append(index)
            if dots.count > fieldCount { return nil }
        }
        guard dots.count == fieldCount else { return nil }
        let macStart = fieldCount == 0 ? start : dots[fieldCount - 1] + 1
        guard let presented = bytes.withUnsafeBufferPointer({ Base64URL.decodeBytes(UnsafeBufferPointer(rebasing: $0[macStart...])) }) else {
            return nil
        }
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(fieldCount)
        var fieldStart = start
        for dot in dots {
            ranges.append(fieldStart..<dot)
            fieldStart = dot + 1
        }
        let expected = mac(ranges.map { Array(bytes[$0]) }, bound)
        guard expected.withUnsafeBytes({ Secrets.constantTimeEquals(presented, $0) }) else { return nil }
        return ranges.map { range in
            token[utf8.index(utf8.startIndex, offsetBy: range.lowerBound)..<utf8.index(utf8.startIndex, offsetBy: range.upperBound)]
        }
    }

    /// HMAC-SHA-256 of `domain|field1|…|fieldN|bound1|…`.
    private func mac(_ fields: [[UInt8]], _ bound: [String]) -> HMAC<SHA256>.MAC {
        var message = domainBytes
        message.reserveCapacity(domainBytes.count + fields.reduce(0) { $0 + $1.count + 1 } + bound.reduce(0) { $0 + $1.utf8.count + 1 })
        for value in fields {
            message.append(UInt8(ascii: "|"))
            message.append(contentsOf: value)
        }
        for value in bound {
            message.append(UInt8(ascii: "|"))
            message.append(contentsOf: value.utf8)
        }
        var code = keyed
        message.withUnsafeBytes { code.update(data: $0) }
        return code.finalize()
    }

    /// A field holding a decimal integer in its one canonical spelling (no sign, no leading zero): "007" or "+7" is
    /// another spelling of 7, and would be another token for the same value.
    public static func integer(_ field: Substring) -> Int64? {
        guard let value = Int64(field), String(value) == field else { return nil }
        return value
    }
}
