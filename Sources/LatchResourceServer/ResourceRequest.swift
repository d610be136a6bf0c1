/// What ``AccessTokenVerifier`` needs of an HTTP request, independent of the web framework: its method, where it was
/// sent, and the values of its `Authorization` and `DPoP` header fields (every field of each name, in order, so that a
/// repeated header is noticed).
public struct ResourceRequest: Sendable {
    /// The method, e.g. `GET` (a DPoP proof's `htm`).
    public var method: String
    /// The request target's path as received (e.g. `/v1/hello`; a query is ignored), appended to
    /// ``ResourceServerConfiguration/externalBaseURL`` to make the URL the client called.
    public var path: String
    /// The absolute URL the client called, when known; it takes the place of the external base URL and ``path``.
    public var url: String?
    /// The values of every `Authorization` header field.
    public var authorization: [String]
    /// The values of every `DPoP` header field.
    public var dpop: [String]

    /// A request for `path` (its URL is ``ResourceServerConfiguration/externalBaseURL`` + `path`).
    public init(method: String, path: String, authorization: [String], dpop: [String] = []) {
        self.method = method
        self.path = path
        self.url = nil
        self.authorization = authorization
        self.dpop = dpop
    }

    /// A request whose absolute URL, as the client called it, is known.
    public init(method: String, url: String, authorization: [String], dpop: [String] = []) {
        self.method = method
        self.path = ""
        self.url = url
        self.authorization = authorization
        self.dpop = dpop
    }
}

/// The credentials of an `Authorization` header: `Bearer <token>` (RFC 6750 §2.1) or `DPoP <token>` (RFC 9449 §7.1).
struct PresentedToken {
    var scheme: ResourceServerError.Scheme
    var token: String

    enum Reading {
        case token(PresentedToken)
        /// No credentials of a scheme this resource accepts (no header, or another scheme).
        case absent
        /// A header of ours whose value is not `<scheme> 1*SP <token68>`.
        case malformed(ResourceServerError.Scheme)
    }

    /// Reads a header value on its UTF-8 bytes: the scheme case-insensitively, then one or more spaces, then a token68
    /// (`1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`).
    static func read(_ value: String) -> Reading {
        let utf8 = value.utf8
        guard let space = utf8.firstIndex(of: UInt8(ascii: " ")) else { return .absent }
        let scheme: ResourceServerError.Scheme
        switch utf8[..<space].count {
        case 6 where Self.equalsIgnoringCase(utf8[..<space], "bearer"): scheme = .bearer
        case 4 where Self.equalsIgnoringCase(utf8[..<space], "dpop"): scheme = .dpop
        default: return .absent
        }
        var start = space
        while start < utf8.endIndex, utf8[start] == UInt8(ascii: " ") { start = utf8.index(after: start) }
        var end = utf8.endIndex
        while end > start, utf8[utf8.index(before: end)] == UInt8(ascii: " ") { end = utf8.index(before: end) }
        guard start < end, isToken68(utf8[start..<end]) else { return .malformed(scheme) }
        return .token(PresentedToken(scheme: scheme, token: String(value[start..<end])))
    }

    static func equalsIgnoringCase(_ bytes: Substring.UTF8View.SubSequence, _ lowercase: StaticString) -> Bool {
        // ASCII letters only: setting bit 0x20 lower-cases a letter and never turns a non-letter into one of `lowercase`'s.
        lowercase.withUTF8Buffer { expected in
            zip(bytes, expected).allSatisfy { $0 | 0x20 == $1 }
        }
    }

    static func isToken68(_ bytes: Substring.UTF8View.SubSequence) -> Bool {
        var padding = false
        for byte in bytes {
            if byte == UInt8(ascii: "=") {
                padding = true
                continue
            }
            guard !padding else { return false }
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                continue
            default:
                return false
            }
        }
        return bytes.first != UInt8(ascii: "=")
    }
}
