import Foundation

/// Which hook URLs and addresses Latch may call (SSRF): by default only public addresses — loopback, private, link-local,
/// carrier-grade NAT, multicast and reserved ranges are refused unless the deployment allows private addresses
/// (`hooks.allowPrivateAddresses`, for hooks on the same host or network).
public struct HookAddressPolicy: Sendable {
    public var allowPrivateAddresses: Bool

    public init(allowPrivateAddresses: Bool) {
        self.allowPrivateAddresses = allowPrivateAddresses
    }

    /// Why a hook URL is refused before any lookup, or nil: an absolute http(s) URL of at most 2,048 bytes, with a host,
    /// without credentials or a fragment; a literal address must pass ``addressProblem(_:)``.
    public func urlProblem(_ text: String) -> String? {
        guard text.utf8.count <= 2048, let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https"
        else { return "the hook URL must be an absolute http or https URL of at most 2048 bytes" }
        guard let host = components.host, !host.isEmpty else { return "the hook URL has no host" }
        guard components.user == nil, components.password == nil else { return "the hook URL must not carry credentials" }
        guard components.fragment == nil else { return "the hook URL must not have a fragment" }
        if let port = components.port, !(1...65_535).contains(port) { return "the hook URL's port is out of range" }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if Self.isLiteralAddress(bare) { return addressProblem(bare) }
        if !allowPrivateAddresses, ["localhost", "localhost.localdomain"].contains(bare.lowercased()) || bare.lowercased().hasSuffix(".localhost") {
            return "the hook URL names this host; set hooks.allowPrivateAddresses to allow it"
        }
        return nil
    }

    /// Why Latch may not connect to `address` (a numeric IPv4 or IPv6 address), or nil.
    public func addressProblem(_ address: String) -> String? {
        guard !allowPrivateAddresses else { return nil }
        guard let range = Self.classify(address) else { return "\(address) is not an IP address" }
        return range.map { "the hook address \(address) is \($0); set hooks.allowPrivateAddresses to allow it" }
    }

    static func isLiteralAddress(_ host: String) -> Bool { IPv4(host) != nil || IPv6(host) != nil }

    /// nil when `address` is not numeric; `.some(nil)` for a public address; `.some(name)` for a special-purpose range
    /// (RFC 6890 and its successors).
    static func classify(_ address: String) -> String?? {
        if let v4 = IPv4(address) { return .some(special(v4)) }
        guard let v6 = IPv6(address) else { return nil }
        if v6.allSatisfy({ $0 == 0 }) { return .some("the unspecified address") }
        if v6[0..<15].allSatisfy({ $0 == 0 }) && v6[15] == 1 { return .some("loopback") }
        // IPv4-mapped (::ffff:0:0/96) and NAT64 (64:ff9b::/96) addresses are their IPv4 address.
        if v6[0..<10].allSatisfy({ $0 == 0 }) && v6[10] == 0xFF && v6[11] == 0xFF { return .some(special(Array(v6[12..<16]))) }
        if v6[0] == 0x00 && v6[1] == 0x64 && v6[2] == 0xFF && v6[3] == 0x9B && v6[4..<12].allSatisfy({ $0 == 0 }) {
            return .some(special(Array(v6[12..<16])))
        }
        if v6[0] & 0xFE == 0xFC { return .some("a unique local address (fc00::/7)") }
        if v6[0] == 0xFE && v6[1] & 0xC0 == 0x80 { return .some("link-local (fe80::/10)") }
        if v6[0] == 0xFE && v6[1] & 0xC0 == 0xC0 { return .some("site-local (fec0::/10)") }
        if v6[0] == 0xFF { return .some("multicast") }
        if v6[0] == 0x20 && v6[1] == 0x01 && v6[2] == 0x0D && v6[3] == 0xB8 { return .some("documentation (2001:db8::/32)") }
        return .some(nil)
    }

    static func special(_ a: [UInt8]) -> String? {
        switch (a[0], a[1]) {
        case (0, _): "\"this network\" (0.0.0.0/8)"
        case (10, _): "private (10.0.0.0/8)"
        case (100, 64...127): "carrier-grade NAT (100.64.0.0/10)"
        case (127, _): "loopback"
        case (169, 254): "link-local (169.254.0.0/16, cloud metadata)"
        case (172, 16...31): "private (172.16.0.0/12)"
        case (192, 168): "private (192.168.0.0/16)"
        case (192, 0) where a[2] == 0: "IETF protocol assignments (192.0.0.0/24)"
        case (198, 18...19): "benchmarking (198.18.0.0/15)"
        case (224...239, _): "multicast"
        case (240...255, _): "reserved"
        default: nil
        }
    }

    /// The four bytes of a dotted-quad IPv4 address (decimal, no leading zeros beyond "0").
    static func IPv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var bytes: [UInt8] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCIIDigit), part == "0" || !part.hasPrefix("0"),
                let value = UInt8(part)
            else { return nil }
            bytes.append(value)
        }
        return bytes
    }

    /// The sixteen bytes of an IPv6 address (RFC 4291 §2.2 text forms, a trailing dotted quad allowed; no zone id).
    static func IPv6(_ text: String) -> [UInt8]? {
        guard text.contains(":"), !text.contains("%"), text.utf8.count <= 45 else { return nil }
        var head = text
        var tail: [UInt8] = []
        if let lastColon = text.lastIndex(of: ":"), text[text.index(after: lastColon)...].contains(".") {
            guard let v4 = IPv4(String(text[text.index(after: lastColon)...])) else { return nil }
            tail = v4
            head = String(text[...lastColon])
            if head.hasSuffix(":") && !head.hasSuffix("::") { head.removeLast() }
        }
        func groups(_ part: Substring) -> [UInt16]? {
            if part.isEmpty { return [] }
            var result: [UInt16] = []
            for group in part.split(separator: ":", omittingEmptySubsequences: false) {
                guard !group.isEmpty, group.count <= 4, let value = UInt16(group, radix: 16) else { return nil }
                result.append(value)
            }
            return result
        }
        let halves = head.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        let wanted = 8 - tail.count / 2
        var words: [UInt16]
        if halves.count == 2 {
            guard let left = groups(Substring(halves[0])), let right = groups(Substring(halves[1])), left.count + right.count < wanted else { return nil }
            words = left + [UInt16](repeating: 0, count: wanted - left.count - right.count) + right
        } else {
            guard let all = groups(Substring(head)), all.count == wanted else { return nil }
            words = all
        }
        return words.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] } + tail
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
