import Foundation

/// `POST /admin/v1/users/{id}/enrollments` and `POST /v1/me/enrollments` (device linking).
public struct OutOfBandEnrollmentRequest: Codable, Sendable, Hashable {
    /// Create the user `{id}` when it does not exist (admin only).
    public var createUser: Bool?
    /// The username of a user created here (default: the id).
    public var username: String?
    /// `registration` (default) or `authentication` (an approval shown on the user's device).
    public var operation: String?
    /// The text an approval shows (authentication only; at most 1,000 characters).
    public var message: String?

    public init(createUser: Bool? = nil, username: String? = nil, operation: String? = nil, message: String? = nil) {
        self.createUser = createUser
        self.username = username
        self.operation = operation
        self.message = message
    }
}

/// The answer to an enrollment request.
public struct OutOfBandEnrollmentResponse: Codable, Sendable, Hashable {
    public var userId: String
    public var username: String
    /// `pending`.
    public var status: String
    public var enrollment: Enrollment

    public struct Enrollment: Codable, Sendable, Hashable {
        public var transactionId: String
        /// Polls `POST /v1/oob/status`; keep it on the backend.
        public var statusToken: String
        public var operation: String
        /// Unix seconds after which the token can no longer be redeemed.
        public var expiresAt: Int64
        public var qrCode: QRCode
        /// `https://<issuer>/open?payload=<base64url payload>`: the link the QR code holds.
        public var appLinkUri: String

        public init(transactionId: String, statusToken: String, operation: String, expiresAt: Int64, qrCode: QRCode, appLinkUri: String) {
            self.transactionId = transactionId
            self.statusToken = statusToken
            self.operation = operation
            self.expiresAt = expiresAt
            self.qrCode = qrCode
            self.appLinkUri = appLinkUri
        }
    }

    public struct QRCode: Codable, Sendable, Hashable {
        /// `image/png`.
        public var type: String
        /// Pixels per side.
        public var size: Int
        /// `data:image/png;base64,…`.
        public var dataUri: String

        public init(type: String, size: Int, dataUri: String) {
            self.type = type
            self.size = size
            self.dataUri = dataUri
        }
    }

    public init(userId: String, username: String, status: String, enrollment: Enrollment) {
        self.userId = userId
        self.username = username
        self.status = status
        self.enrollment = enrollment
    }
}

/// What the QR code and the app link carry (the Nevis shape), base64url-encoded JSON:
/// `{"data": {"token", "redeem_url"}, "content_type", "version"}`.
public struct OutOfBandPayload: Codable, Sendable, Hashable {
    public struct Data: Codable, Sendable, Hashable {
        public var token: String
        public var redeem_url: String

        public init(token: String, redeem_url: String) {
            self.token = token
            self.redeem_url = redeem_url
        }
    }

    public var data: Data
    public var content_type: String
    public var version: String

    /// The content type Latch writes.
    public static let contentType = "application/vnd.latch.oob+json"

    public init(token: String, redeemURL: String) {
        data = Data(token: token, redeem_url: redeemURL)
        content_type = Self.contentType
        version = "1"
    }

    /// Longest link or payload text read (a version 40-M QR code holds 2,331 bytes).
    public static let maximumLength = 2_331

    /// Decodes a payload from a link (`…/open?payload=…`), the QR code's text, or the bare base64url payload.
    public init(decoding text: String) throws(PayloadError) {
        guard text.utf8.count <= Self.maximumLength else { throw .tooLong }
        var encoded = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if encoded.contains("://") || encoded.contains("?") {
            guard let components = URLComponents(string: encoded), let value = components.queryItems?.first(where: { $0.name == "payload" })?.value else {
                throw .notAPayload("the link has no payload parameter")
            }
            encoded = value
        }
        guard let bytes = Self.base64URLDecode(encoded) else { throw .notAPayload("the payload is not base64url") }
        guard let payload = try? JSONDecoder().decode(OutOfBandPayload.self, from: bytes) else {
            throw .notAPayload("the payload is not {data: {token, redeem_url}, content_type, version}")
        }
        guard payload.version == "1", !payload.data.token.isEmpty, let url = URL(string: payload.data.redeem_url), url.scheme != nil else {
            throw .notAPayload("unsupported payload version or an empty token or redeem_url")
        }
        self = payload
    }

    /// The base64url JSON.
    public var encoded: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = (try? encoder.encode(self)) ?? Foundation.Data()
        return json.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func base64URLDecode(_ text: String) -> Foundation.Data? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Foundation.Data(base64Encoded: standard)
    }

    /// Why a payload was refused.
    public enum PayloadError: Error, Sendable, Equatable, CustomStringConvertible {
        case tooLong
        case notAPayload(String)

        public var description: String {
            switch self {
            case .tooLong: "the payload is longer than \(OutOfBandPayload.maximumLength) characters"
            case .notAPayload(let detail): detail
            }
        }
    }
}

/// `POST /v1/oob/redeem/{operation}`.
public struct OutOfBandRedeemRequest: Codable, Sendable, Hashable {
    public var token: String
    public init(token: String) { self.token = token }
}

/// `POST /v1/oob/status`.
public struct OutOfBandStatusRequest: Codable, Sendable, Hashable {
    public var statusToken: String
    public init(statusToken: String) { self.statusToken = statusToken }
}

/// A transaction's status: `pending` (not completed yet; `redeemed` says whether a device took it), `succeeded`,
/// `failed`, `approved`, `denied`, `expired`, or `unknown` (no transaction has this status token).
public struct OutOfBandStatus: Codable, Sendable, Hashable {
    public var status: String
    public var transactionId: String?
    public var operation: String?
    public var redeemed: Bool?
    public var authenticatorId: String?
    public var expiresAt: Int64?

    public init(
        status: String, transactionId: String? = nil, operation: String? = nil, redeemed: Bool? = nil, authenticatorId: String? = nil,
        expiresAt: Int64? = nil
    ) {
        self.status = status
        self.transactionId = transactionId
        self.operation = operation
        self.redeemed = redeemed
        self.authenticatorId = authenticatorId
        self.expiresAt = expiresAt
    }
}
