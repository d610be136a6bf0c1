import Crypto
import Foundation

/// The `Latch-Signature` header of a custom-registration hook request:
/// `t=<unix seconds>,v1=<hex HMAC-SHA256(key: UTF-8 bytes of the hook secret, message: "<t>.<raw body>")>`.
///
/// While a hook secret is being rotated the header may carry several `v1=` values (one per secret); a request
/// verifies when any of them matches any secret the hook knows. Other schemes (`v0=`, a future `v2=`) are ignored.
public enum HookSignature {
    /// The header that carries the signature.
    public static let headerName = "Latch-Signature"
    /// The header that carries `<transactionId>:<step>:<attempt>` (see ``HookIdempotencyKey``).
    public static let idempotencyKeyHeaderName = "Idempotency-Key"
    /// The default replay window: a signature older or newer than this many seconds is refused.
    public static let defaultTolerance: TimeInterval = 300

    /// Longest header accepted (a few `v1=` values fit many times over).
    static let maximumHeaderLength = 2048
    /// Most `v1=` values accepted in one header.
    static let maximumSignatures = 8

    /// A signature that verified: its timestamp and the `v1` value that matched (lowercase hex).
    public struct Verified: Sendable, Hashable {
        /// The signer's clock, in Unix seconds.
        public let timestamp: Int64
        /// The `v1` value that matched, lowercase hex.
        public let signature: String

        public init(timestamp: Int64, signature: String) {
            self.timestamp = timestamp
            self.signature = signature
        }
    }

    /// The lowercase hex HMAC-SHA256 of `"<timestamp>.<body>"` keyed with the UTF-8 bytes of `secret`.
    public static func mac(secret: String, timestamp: Int64, body: some DataProtocol) -> String {
        hex(code(key: SymmetricKey(data: Array(secret.utf8)), timestamp: String(timestamp), body: body))
    }

    /// The header Latch sends: `t=<timestamp>,v1=<mac>`.
    public static func header(secret: String, timestamp: Int64, body: some DataProtocol) -> String {
        header(secrets: [secret], timestamp: timestamp, body: body)
    }

    /// The header signed with every secret, one `v1=` value each (in the order given): what Latch sends while a
    /// secret is rotated.
    public static func header(secrets: [String], timestamp: Int64, body: some DataProtocol) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + mac(secret: $0, timestamp: timestamp, body: body) }).joined(separator: ",")
    }

    /// Checks a `Latch-Signature` header against the raw request body: the format, a MAC that matches (compared in
    /// constant time), and a timestamp within `tolerance` seconds of `now` either way (the replay window).
    ///
    /// Verify the bytes exactly as received, before any JSON decoding. A hook that must also refuse a request
    /// replayed inside the window keeps a ``HookReplayGuard``:
    ///
    /// ```swift
    /// let replays = HookReplayGuard()
    ///
    /// /// The hook request, or nil when it must be refused with 401.
    /// func authenticate(body: Data, signature: String?, idempotencyKey: String?, secret: String) -> HookRequest? {
    ///     guard let signature,
    ///         let verified = try? HookSignature.verify(header: signature, body: body, secret: secret),
    ///         replays.admit(verified, idempotencyKey: idempotencyKey) == .accepted
    ///     else { return nil }
    ///     return try? JSONDecoder().decode(HookRequest.self, from: body)
    /// }
    /// ```
    ///
    /// - Throws: ``HookSignatureError/malformed(_:)``, ``HookSignatureError/mismatch`` or
    ///   ``HookSignatureError/stale(timestamp:now:)`` (checked in that order: a stale error means the MAC was right).
    @discardableResult
    public static func verify(
        header: String, body: some DataProtocol, secret: String, now: Date = Date(), tolerance: TimeInterval = defaultTolerance
    ) throws(HookSignatureError) -> Verified {
        try verify(header: header, body: body, secrets: [secret], now: now, tolerance: tolerance)
    }

    /// ``verify(header:body:secret:now:tolerance:)`` against several secrets (the hook's side of a rotation):
    /// accepted when any `v1` value matches any secret.
    @discardableResult
    public static func verify(
        header: String, body: some DataProtocol, secrets: [String], now: Date = Date(), tolerance: TimeInterval = defaultTolerance
    ) throws(HookSignatureError) -> Verified {
        let parsed = try parse(header)
        let keys = secrets.filter { !$0.isEmpty }.map { SymmetricKey(data: Array($0.utf8)) }
        guard !keys.isEmpty else { throw .malformed("no hook secret to verify with") }
        let message = Array(parsed.timestampText.utf8) + [UInt8(ascii: ".")] + Array(body)
        var matched: [UInt8]?
        // Every candidate against every key, with no early exit: the time taken does not say which one matched.
        for candidate in parsed.signatures {
            for key in keys where HMAC<SHA256>.isValidAuthenticationCode(candidate, authenticating: message, using: key) {
                matched = candidate
            }
        }
        guard let matched else { throw .mismatch }
        let nowSeconds = now.timeIntervalSince1970
        guard tolerance >= 0, abs(nowSeconds - Double(parsed.timestamp)) <= tolerance else {
            throw .stale(timestamp: parsed.timestamp, now: Int64(nowSeconds.rounded(.down)))
        }
        return Verified(timestamp: parsed.timestamp, signature: hex(matched))
    }

    // MARK: - Parsing

    struct Parsed {
        var timestampText: String
        var timestamp: Int64
        var signatures: [[UInt8]]
    }

    /// `t=<1–12 digits>` exactly once, `v1=<64 hex digits>` one to eight times, other `key=value` items ignored;
    /// items separated by commas, spaces around them allowed.
    static func parse(_ header: String) throws(HookSignatureError) -> Parsed {
        guard header.utf8.count <= maximumHeaderLength else { throw .malformed("the header is longer than \(maximumHeaderLength) bytes") }
        var timestampText: String?
        var signatures: [[UInt8]] = []
        for item in header.split(separator: ",", omittingEmptySubsequences: false) {
            let item = item.trimmingCharacters(in: .whitespaces)
            guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                throw .malformed("'\(item.prefix(40))' is not key=value")
            }
            let key = item[..<equals]
            let value = item[item.index(after: equals)...]
            switch key {
            case "t":
                guard timestampText == nil else { throw .malformed("t= appears more than once") }
                guard (1...12).contains(value.utf8.count), value.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                    throw .malformed("t= is not a Unix time in seconds")
                }
                timestampText = String(value)
            case "v1":
                guard let bytes = unhex(value), bytes.count == SHA256.byteCount else {
                    throw .malformed("v1= is not 64 hexadecimal digits")
                }
                signatures.append(bytes)
                guard signatures.count <= maximumSignatures else { throw .malformed("more than \(maximumSignatures) v1= values") }
            default:
                continue
            }
        }
        guard let timestampText, let timestamp = Int64(timestampText) else { throw .malformed("t= is missing") }
        guard !signatures.isEmpty else { throw .malformed("v1= is missing") }
        return Parsed(timestampText: timestampText, timestamp: timestamp, signatures: signatures)
    }

    // MARK: - Bytes

    static func code(key: SymmetricKey, timestamp: String, body: some DataProtocol) -> [UInt8] {
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: Array(timestamp.utf8) + [UInt8(ascii: ".")])
        mac.update(data: body)
        return Array(mac.finalize())
    }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func unhex(_ text: Substring) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count.isMultiple(of: 2) else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            case 0x41...0x46: c - 0x41 + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}

/// Why a `Latch-Signature` header was refused.
public enum HookSignatureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The header is not `t=<seconds>,v1=<64 hex digits>[,v1=…]` (or no secret was given); the reason says what.
    case malformed(String)
    /// The MAC is right but the timestamp is outside the replay window (too old, or too far in the future).
    case stale(timestamp: Int64, now: Int64)
    /// No `v1` value is the MAC of this body with any of the secrets: a wrong secret or a tampered body.
    case mismatch

    public var description: String {
        switch self {
        case .malformed(let reason): "malformed Latch-Signature: \(reason)"
        case .stale(let timestamp, let now) where timestamp > now:
            "Latch-Signature timestamp \(timestamp) is \(timestamp - now) s in the future (clock skew or replay)"
        case .stale(let timestamp, let now): "Latch-Signature timestamp \(timestamp) is \(now - timestamp) s old (replay window exceeded)"
        case .mismatch: "Latch-Signature does not match the body (wrong secret or tampered body)"
        }
    }
}

/// The `Idempotency-Key` header: `<transactionId>:<step>:<attempt>`. The same transaction and step with a higher
/// attempt is Latch retrying after a network error or a 5xx/429 answer.
///
/// Not covered by the signature: trust the signed body's `transactionId`, and use this to tell attempts apart.
public struct HookIdempotencyKey: Sendable, Hashable, CustomStringConvertible {
    public var transactionId: String
    public var step: HookRequest.Step
    public var attempt: Int

    public init(transactionId: String, step: HookRequest.Step, attempt: Int) {
        self.transactionId = transactionId
        self.step = step
        self.attempt = attempt
    }

    /// Parses from the right, so a transaction id with colons still reads; nil when malformed.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 3, let attempt = Int(parts[parts.count - 1]), attempt >= 0,
            let step = HookRequest.Step(rawValue: String(parts[parts.count - 2]))
        else { return nil }
        let transactionId = parts.dropLast(2).joined(separator: ":")
        guard !transactionId.isEmpty else { return nil }
        self.init(transactionId: transactionId, step: step, attempt: attempt)
    }

    public var description: String { "\(transactionId):\(step.rawValue):\(attempt)" }
}
