/// Where the request being served came from, for the audit records it writes: set by the HTTP edge around each
/// request (a task-local value, so engines need not pass it through every call).
public struct AuditOrigin: Sendable, Hashable {
    /// The client's address (after `X-Forwarded-For` when trusted; formatted when read, like ``userAgent``).
    public var address: String? {
        get { addressText ?? addressSource?.description }
        set {
            addressText = newValue
            addressSource = nil
        }
    }
    /// The `User-Agent` header, control characters replaced by `?` and clipped to 256 bytes.
    ///
    /// Cleaned when read: the edge sets an origin on every request, and most requests write no audit record.
    public var userAgent: String? {
        get { rawUserAgent.map { SecurityEvent.clipped(Self.printable($0), to: 256) } }
        set { rawUserAgent = newValue }
    }
    /// The request id Latch logs with (formatted when read, like ``userAgent``).
    public var requestID: String? {
        get { requestIDText ?? requestIDSource?.description }
        set {
            requestIDText = newValue
            requestIDSource = nil
        }
    }
    /// The app the request names, when it names one (`client_id`).
    public var clientID: String?
    /// The admin acting (the token id), on admin routes.
    public var admin: String?

    private var addressText: String?
    private var addressSource: (any CustomStringConvertible & Sendable)?
    private var rawUserAgent: String?
    private var requestIDText: String?
    private var requestIDSource: (any CustomStringConvertible & Sendable)?

    public init(address: String? = nil, userAgent: String? = nil, requestID: String? = nil, clientID: String? = nil, admin: String? = nil) {
        self.addressText = address
        self.rawUserAgent = userAgent
        self.requestIDText = requestID
        self.clientID = clientID
        self.admin = admin
    }

    /// An origin whose address and request id are descriptions made only when a record needs them (the HTTP edge
    /// passes the connection's peer and the logger's request-id metadata value).
    public init(
        address: (any CustomStringConvertible & Sendable)?, userAgent: String?, requestID: (any CustomStringConvertible & Sendable)?
    ) {
        self.init(userAgent: userAgent)
        addressSource = address
        requestIDSource = requestID
    }

    public static func == (lhs: AuditOrigin, rhs: AuditOrigin) -> Bool {
        lhs.address == rhs.address && lhs.userAgent == rhs.userAgent && lhs.requestID == rhs.requestID && lhs.clientID == rhs.clientID
            && lhs.admin == rhs.admin
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(address)
        hasher.combine(userAgent)
        hasher.combine(requestID)
        hasher.combine(clientID)
        hasher.combine(admin)
    }

    /// `text` with C0 and C1 control characters replaced by `?`, at most 512 scalars: a user agent is shown back in
    /// the console and in exports.
    static func printable(_ text: String) -> String {
        // Printable ASCII, the usual case, is kept as it is.
        if text.utf8.count <= 512, text.utf8.allSatisfy({ (0x20..<0x7F).contains($0) }) { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.prefix(512).map { $0.properties.generalCategory == .control ? "?" : $0 }))
    }

    /// The origin of the request this task serves.
    @TaskLocal public static var current: AuditOrigin?

    /// Runs `body` with the current origin changed by `change` (an empty origin when there is none).
    public static func with<T>(_ change: (inout AuditOrigin) -> Void, _ body: () async throws -> T) async rethrows -> T {
        var origin = current ?? AuditOrigin()
        change(&origin)
        return try await $current.withValue(origin, operation: body)
    }
}
