import Foundation
import HTTPTypes
import Hummingbird
import LatchCore
import LatchModel

/// The one mapping from error codes to HTTP statuses (documented in docs/errors.md).
enum ErrorStatus {
    static func status(for code: ErrorCode) -> HTTPResponse.Status {
        switch code {
        case .invalidClient, .invalidToken, .insufficientUserAuthentication, .unauthorized: .unauthorized
        case .challengeTypeDisabled, .customProviderDisabled, .customTransactionClientMismatch, .forbidden, .invalidCSRFToken: .forbidden
        case .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .alreadyRegistered, .registrationConflict, .conflict, .deviceAlreadyRegistered, .customTransactionFinished: .conflict
        case .hookUnavailable, .hookInvalidAnswer, .hookAddressRefused: .badGateway
        case .hookTimeout: .gatewayTimeout
        case .requestTooLarge: .contentTooLarge
        case .rateLimited: .tooManyRequests
        case .temporarilyUnavailable: .serviceUnavailable
        case .serverError: .internalServerError
        default: .badRequest
        }
    }

    /// A JSON error answer, `no-store`, with `WWW-Authenticate` where RFC 6750 / RFC 9470 ask for it.
    static func response(
        code: ErrorCode, message: String, status: HTTPResponse.Status? = nil, maxAge: Int? = nil,
        members: [String: JSONValue] = [:], extraHeaders: HTTPFields = [:], atResource: Bool = false
    ) -> Response {
        let status = status ?? self.status(for: code)
        var headers = extraHeaders
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        switch code {
        case .invalidToken:
            headers[.wwwAuthenticate] = "Bearer error=\"invalid_token\", error_description=\"\(quoted(message))\""
        case .insufficientUserAuthentication:
            var challenge = "Bearer error=\"insufficient_user_authentication\", error_description=\"\(quoted(message))\""
            if let maxAge { challenge += ", max_age=\(maxAge)" }
            headers[.wwwAuthenticate] = challenge
        case .invalidClient:
            // RFC 6749 §5.2: a 401 for invalid_client names the scheme the client should use.
            headers[.wwwAuthenticate] = "Bearer error=\"invalid_client\""
        case .temporarilyUnavailable:
            headers[.retryAfter] = "1"
        case .invalidDPoPProof where atResource, .useDPoPNonce where atResource:
            // RFC 9449 §7.1: the DPoP scheme's challenge, with the algorithms a proof may use.
            headers[.wwwAuthenticate] = "DPoP error=\"\(code.rawValue)\", error_description=\"\(quoted(message))\", algs=\"ES256 ES384 RS256\""
        default:
            break
        }
        var writer = JSONWriter(reservingCapacity: 128)
        writer.beginObject()
        writer.member("error", code.rawValue)
        writer.member("error_description", message)
        for (name, value) in members.sorted(by: { $0.key < $1.key }) {
            writer.key(name)
            writer.write(value)
        }
        writer.endObject()
        return Response(status: status, headers: headers, body: .init(byteBuffer: JSONResponse.withNewline(writer.bytes)))
    }

    /// RFC 7230 quoted-string content: no quotes, backslashes or control characters.
    private static func quoted(_ text: String) -> String {
        String(text.unicodeScalars.filter { $0 != "\"" && $0 != "\\" && $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
    }
}
