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
    private let key: SymmetricKey

    public init(prefix: String, domain: String, maximumLength: Int, key: SymmetricKey) {
        self.prefix = prefix
        self.domain = domain
        self.maximumLength = maximumLength
        self.key = key
    }

    /// The token carrying `fields`, its MAC also covering `bound`.
    public func seal(_ fields: [String], bound: [String] = []) -> String {
        prefix + fields.joined(separator: ".") + "." + Base64URL.encode(Data(mac(fields, bound)))
    }

    /// The fields of `token` when it is one this key sealed with `fieldCount` fields and the same `bound` values;
    /// nil otherwise (wrong prefix or length, another shape, a MAC that does not match — compared in constant time).
    public func open(_ token: String, fieldCount: Int, bound: [String] = []) -> [Substring]? {
        guard token.utf8.count <= maximumLength, token.hasPrefix(prefix) else { return nil }
        let parts = token.dropFirst(prefix.count).split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == fieldCount + 1, let presented = Base64URL.decode(parts[fieldCount]) else { return nil }
        let fields = Array(parts.prefix(fieldCount))
        guard Secrets.constantTimeEquals(presented, Data(mac(fields, bound))) else { return nil }
        return fields
    }

    private func mac(_ fields: [some StringProtocol], _ bound: [String]) -> HMAC<SHA256>.MAC {
        var message = Array(domain.utf8)
        for value in fields {
            message.append(UInt8(ascii: "|"))
            message.append(contentsOf: value.utf8)
        }
        for value in bound {
            message.append(UInt8(ascii: "|"))
            message.append(contentsOf: value.utf8)
        }
        return HMAC<SHA256>.authenticationCode(for: message, using: key)
    }

    /// A field holding a decimal integer in its one canonical spelling (no sign, no leading zero): "007" or "+7" is
    /// another spelling of 7, and would be another token for the same value.
    public static func integer(_ field: Substring) -> Int64? {
        guard let value = Int64(field), String(value) == field else { return nil }
        return value
    }
}
