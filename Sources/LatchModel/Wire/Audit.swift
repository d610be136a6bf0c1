/// One audit record as the admin API and the export show it.
public struct AuditRecordView: Codable, Sendable, Hashable {
    /// The record's number: unique and increasing in the order records were written (the `cursor` of the next page).
    public var seq: Int64
    /// Position in the audit chain; absent until the sealer has linked the record, within seconds of its commit.
    public var position: Int64?
    public var id: String
    /// Seconds since 1970.
    public var at: Int64
    /// The event kind (`signin.failed`, `admin.clients.update`, …).
    public var type: String
    public var actor: String
    /// The user the event is about.
    public var subject: String?
    public var session: String?
    public var client: String?
    public var detail: String?
    public var address: String?
    public var userAgent: String?
    public var requestId: String?
    /// The chain's HMAC over this record (hex); absent until sealed, and for records from before the chain existed.
    public var mac: String?

    public init(
        seq: Int64, id: String, at: Int64, type: String, actor: String, subject: String?, session: String?, client: String?, detail: String?,
        address: String?, userAgent: String?, requestId: String?, mac: String?, position: Int64? = nil
    ) {
        self.seq = seq
        self.position = position
        self.id = id
        self.at = at
        self.type = type
        self.actor = actor
        self.subject = subject
        self.session = session
        self.client = client
        self.detail = detail
        self.address = address
        self.userAgent = userAgent
        self.requestId = requestId
        self.mac = mac
    }
}

/// `GET /admin/v1/audit`: a page, newest first.
public struct AuditPage: Codable, Sendable, Hashable {
    public var records: [AuditRecordView]
    /// Pass as `cursor` for the next (older) page; absent on the last.
    public var nextCursor: String?
    public init(records: [AuditRecordView], nextCursor: String?) {
        self.records = records
        self.nextCursor = nextCursor
    }
}

/// `GET /admin/v1/audit/verify`: what checking the chain found.
///
/// Positions (`firstSeq`, `lastSeq`, `anchorSeq`, `brokenAt`) are places in the chain, not record numbers.
public struct AuditVerificationView: Codable, Sendable, Hashable {
    public var verified: Bool
    /// Sealed records whose chain MAC was checked.
    public var checked: Int
    public var firstSeq: Int64?
    public var lastSeq: Int64?
    /// Records up to this one were purged by retention or predate the chain.
    public var anchorSeq: Int64
    /// The first record that does not verify.
    public var brokenAt: Int64?
    public var problem: String?
    /// Records written but not sealed into the chain yet (each checked for its entry MAC), and when the oldest of them
    /// was recorded (seconds since 1970). The sealer links records within seconds of their commit.
    public var unsealed: Int
    public var oldestUnsealedAt: Int64?

    public init(
        verified: Bool, checked: Int, firstSeq: Int64?, lastSeq: Int64?, anchorSeq: Int64, brokenAt: Int64?, problem: String?,
        unsealed: Int = 0, oldestUnsealedAt: Int64? = nil
    ) {
        self.unsealed = unsealed
        self.oldestUnsealedAt = oldestUnsealedAt
        self.verified = verified
        self.checked = checked
        self.firstSeq = firstSeq
        self.lastSeq = lastSeq
        self.anchorSeq = anchorSeq
        self.brokenAt = brokenAt
        self.problem = problem
    }
}

/// One event in `GET /v1/me/security-events`: what a user may see of their own account's history.
public struct MySecurityEvent: Codable, Sendable, Hashable {
    public var id: String
    public var at: Int64
    public var type: String
    /// `user` (you), `admin` or `system`.
    public var actor: String
    public var client: String?
    public var address: String?
    public var userAgent: String?
    public var detail: String?

    public init(id: String, at: Int64, type: String, actor: String, client: String?, address: String?, userAgent: String?, detail: String?) {
        self.id = id
        self.at = at
        self.type = type
        self.actor = actor
        self.client = client
        self.address = address
        self.userAgent = userAgent
        self.detail = detail
    }
}

/// `GET /v1/me/security-events`: newest first.
public struct MySecurityEvents: Codable, Sendable, Hashable {
    public var events: [MySecurityEvent]
    public var nextCursor: String?
    public init(events: [MySecurityEvent], nextCursor: String?) {
        self.events = events
        self.nextCursor = nextCursor
    }
}
