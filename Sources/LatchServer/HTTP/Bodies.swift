import Foundation
import HTTPTypes
import Hummingbird
import LatchCore
import LatchModel

extension Request {
    /// The body, at most `RequestLimits.maximumBody` bytes.
    func bodyBytes(oauth: Bool) async throws -> ByteBuffer {
        do {
            return try await body.collect(upTo: RequestLimits.maximumBody)
        } catch {
            if oauth { throw LatchError.invalidRequest("the request body exceeds 64 KiB") }
            throw LatchError(.requestTooLarge, "the request body exceeds 64 KiB")
        }
    }

    /// An `application/x-www-form-urlencoded` body (OAuth endpoints; errors in RFC 6749 form).
    func formParameters() async throws -> [String: String] {
        if let type = headers[.contentType], !type.lowercased().hasPrefix("application/x-www-form-urlencoded") {
            throw LatchError.invalidRequest("the body must be application/x-www-form-urlencoded")
        }
        let buffer = try await bodyBytes(oauth: true)
        do {
            return try buffer.withUnsafeReadableBytes { try FormURLEncoded.parse($0) }
        } catch FormURLEncoded.Failure.repeated(let name) {
            throw LatchError.invalidRequest("the parameter \(name.prefix(64)) is repeated")
        } catch {
            throw LatchError.invalidRequest("the body is not valid form encoding")
        }
    }

    /// A JSON body decoded as `T`; every decoding failure is `invalid_json` naming the field.
    func decodeJSON<T: Decodable>(_ type: T.Type) async throws -> T {
        let buffer = try await bodyBytes(oauth: false)
        guard buffer.readableBytes > 0 else { throw LatchError(.invalidJSON, "a JSON body is required") }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch let error as DecodingError {
            throw LatchError(.invalidJSON, Self.describe(error))
        }
    }

    /// A JSON body decoded as `T`, or `defaults` when the body is empty (`Content-Length: 0`).
    func decodeJSON<T: Decodable>(_ type: T.Type, whenEmpty defaults: T) async throws -> T {
        if headers[.contentLength] == "0" { return defaults }
        return try await decodeJSON(type)
    }

    /// A JSON object body, parsed strictly without Codable (for hot endpoints).
    func jsonObject() async throws -> [String: JSONValue] {
        let buffer = try await bodyBytes(oauth: false)
        guard buffer.readableBytes > 0 else { throw LatchError(.invalidJSON, "a JSON body is required") }
        do {
            guard case .object(let object) = try JSONParser.parse(buffer.readableBytesView) else {
                throw LatchError(.invalidJSON, "the body must be a JSON object")
            }
            return object
        } catch let error as JSONParser.Failure {
            throw LatchError(.invalidJSON, "the body is not valid JSON (\(error.reason) at byte \(error.offset))")
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            let parent = path(context.codingPath)
            return "the field \(parent.isEmpty ? "" : parent + ".")\(key.stringValue) is required"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return "the field \(path(context.codingPath)) has the wrong type"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "the body is not valid JSON" : "the field \(path(context.codingPath)) is invalid"
        @unknown default:
            return "the body is not valid JSON"
        }
    }
}

/// JSON answers.
enum JSONResponse {
    /// `value` as JSON with `status`; `no-store` for anything carrying tokens or user data.
    static func make<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok, noStore: Bool = true) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return make(bytes: try encoder.encode(value), status: status, noStore: noStore)
    }

    /// Pre-serialized JSON bytes, followed by a newline (for terminals; JSON parsers skip it).
    static func make(bytes: some Sequence<UInt8>, status: HTTPResponse.Status = .ok, noStore: Bool = true, maxAge: Int? = nil)
        -> Response
    {
        var headers: HTTPFields = [.contentType: "application/json"]
        if noStore {
            headers[.cacheControl] = "no-store"
        } else if let maxAge {
            headers[.cacheControl] = "public, max-age=\(maxAge)"
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: withNewline(bytes)))
    }

    static func withNewline(_ bytes: some Sequence<UInt8>) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(bytes.underestimatedCount + 1)
        buffer.writeBytes(bytes)
        buffer.writeInteger(UInt8(ascii: "\n"))
        return buffer
    }
}
