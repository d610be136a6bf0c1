/// Where the request being served came from, for the audit records it writes: set by the HTTP edge around each
/// request (a task-local value, so engines need not pass it through every call).
public struct AuditOrigin: Sendable, Hashable {
    /// The client's address (after `X-Forwarded-For` when trusted).
    public var address: String?
    /// The `User-Agent` header, clipped to 256 bytes.
    public var userAgent: String?
    /// The request id Latch logs with.
    public var requestID: String?
    /// The app the request names, when it names one (`client_id`).
    public var clientID: String?
    /// The admin acting (the token id), on admin routes.
    public var admin: String?

    public init(address: String? = nil, userAgent: String? = nil, requestID: String? = nil, clientID: String? = nil, admin: String? = nil) {
        self.address = address
        self.userAgent = userAgent.map { SecurityEvent.clipped($0, to: 256) }
        self.requestID = requestID
        self.clientID = clientID
        self.admin = admin
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
