/// The domain of an email address, for the allowed-email-domains rule of upstream identity providers.
///
/// An address is an RFC 5322 §3.4.1 `addr-spec` (RFC 5321 §4.1.2 `Mailbox`): a local part — a dot-atom, or a quoted
/// string in which `@` may appear — then exactly one unquoted `@`, then the domain. Anything else (a second unquoted
/// `@`, as in `mallory@evil.example@corp.example`, an empty part, an address literal such as `[192.0.2.1]`) has no
/// domain, so it is in no allowed domain.
///
/// Domains compare in the form IDNA2008 (RFC 5890 §2.3.2.1) calls the A-label form, lower-cased: ASCII letters,
/// digits and hyphens in dot-separated labels of 1–63 characters (RFC 1035 §2.3.1, RFC 1123 §2.1), at most 253
/// characters, no trailing dot. Latch has no IDNA mapping (UTS #46), so a domain written with non-ASCII characters
/// (a U-label, `bücher.example`) is not normalised but refused: upstreams and admins give the `xn--` form
/// (`xn--bcher-kva.example`).
public enum EmailDomain {
    /// The lower-cased domain of `address`, or nil when `address` is not one address with a domain in A-label form.
    public static func of(_ address: String) -> String? {
        let bytes = Array(address.utf8)
        guard !bytes.isEmpty, bytes.count <= 254 else { return nil }  // RFC 5321 §4.5.3.1.3 (path), less the brackets.
        var index = 0
        if bytes[0] == UInt8(ascii: "\"") {
            // A quoted string (RFC 5322 §3.2.4): any printable ASCII or space, `\` escaping one such character.
            index = 1
            var closed = false
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\\") {
                    guard index + 1 < bytes.count, isQuotable(bytes[index + 1]) else { return nil }
                    index += 2
                } else if byte == UInt8(ascii: "\"") {
                    index += 1
                    closed = true
                    break
                } else {
                    guard isQuotable(byte) else { return nil }
                    index += 1
                }
            }
            guard closed, index > 2 else { return nil }
        } else {
            // A dot-atom (RFC 5322 §3.2.3), or UTF-8 in the local part (RFC 6531 §3.3): no unquoted `@`, no space,
            // no quote, no control character; dots neither first, last nor doubled.
            while index < bytes.count, bytes[index] != UInt8(ascii: "@") {
                let byte = bytes[index]
                guard byte >= 0x80 || isAtext(byte) || byte == UInt8(ascii: ".") else { return nil }
                if byte == UInt8(ascii: "."), index == 0 || bytes[index - 1] == UInt8(ascii: ".") { return nil }
                index += 1
            }
            guard index > 0, bytes[index - 1] != UInt8(ascii: ".") else { return nil }
        }
        // RFC 5321 §4.5.3.1.1: a local part of at most 64 octets.
        guard index <= 64, index < bytes.count, bytes[index] == UInt8(ascii: "@") else { return nil }
        return normalized(String(decoding: bytes[(index + 1)...], as: UTF8.self))
    }

    /// `domain` lower-cased when it is a domain name in A-label form (see the type's discussion), else nil — as
    /// for an admin's allowed domain.
    public static func normalized(_ domain: String) -> String? {
        let bytes = Array(domain.utf8)
        guard !bytes.isEmpty, bytes.count <= 253 else { return nil }
        var label = 0
        for (offset, byte) in bytes.enumerated() {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                label += 1
            case UInt8(ascii: "-"):
                guard label > 0, offset + 1 < bytes.count, bytes[offset + 1] != UInt8(ascii: ".") else { return nil }
                label += 1
            case UInt8(ascii: "."):
                guard label > 0 else { return nil }
                label = 0
            default:
                return nil  // Non-ASCII (a U-label), `@`, `[`, a space, a control character...
            }
            guard label <= 63 else { return nil }
        }
        guard label > 0 else { return nil }  // No empty last label: no trailing dot.
        return domain.lowercased()
    }

    /// RFC 5322 §3.2.3 `atext`.
    static func isAtext(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        default: Array("!#$%&'*+-/=?^_`{|}~".utf8).contains(byte)
        }
    }

    /// What may stand in a quoted string: printable ASCII and space (RFC 5322 §3.2.4 `qtext`, `quoted-pair`).
    static func isQuotable(_ byte: UInt8) -> Bool { byte >= 0x20 && byte < 0x7F }
}
