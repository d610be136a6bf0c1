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
        try await formParameters(repeatable: []).single
    }

    /// The same, letting the names in `repeatable` appear more than once (their values in `repeated`, in order).
    func formParameters(repeatable: Set<String>) async throws -> (single: [String: String], repeated: [String: [String]]) {
        if let type = headers[.contentType], !type.lowercased().hasPrefix("application/x-www-form-urlencoded") {
            throw LatchError.invalidRequest("the body must be application/x-www-form-urlencoded")
        }
        let buffer = try await bodyBytes(oauth: true)
        do {
            return try buffer.withUnsafeReadableBytes { try FormURLEncoded.parse($0, repeatable: repeatable) }
        } catch FormURLEncoded.Failure.repeated(let name) {
            throw LatchError.invalidRequest("the parameter \(name.prefix(64)) is repeated")
        } catch {
            throw LatchError.invalidRequest("the body is not valid form encoding")
        }
    }

    /// A JSON body decoded as `T`; every decoding failure is `invalid_json` naming the field. The body passes the
    /// same strict check as ``jsonObject()`` first, so every JSON endpoint refuses the same things.
    func decodeJSON<T: Decodable>(_ type: T.Type) async throws -> T {
        let buffer = try await bodyBytes(oauth: false)
        _ = try Self.strictObject(buffer)
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
        try Self.strictObject(try await bodyBytes(oauth: false))
    }

    /// The one check every JSON body passes: UTF-8 JSON (RFC 8259 §8.1: no UTF-16, no byte-order mark) that is an
    /// object, with no duplicate member names, no trailing commas or other extensions, nested at most 32 deep, and
    /// no `null` anywhere — a field that is not set is left out.
    static func strictObject(_ buffer: ByteBuffer) throws -> [String: JSONValue] {
        guard buffer.readableBytes > 0 else { throw LatchError(.invalidJSON, "a JSON body is required") }
        let object: [String: JSONValue]
        do {
            guard case .object(let parsed) = try JSONParser.parse(buffer.readableBytesView) else {
                throw LatchError(.invalidJSON, "the body must be a JSON object")
            }
            object = parsed
        } catch let error as JSONParser.Failure {
            throw LatchError(.invalidJSON, "the body is not valid JSON (\(error.reason) at byte \(error.offset))")
        }
        if let path = firstNull(in: .object(object), path: "") {
            throw LatchError(.invalidJSON, "the field \(path) is null: leave a field out to leave it unset")
        }
        return object
    }

    /// The path of the first `null` in `value`, if any.
    private static func firstNull(in value: JSONValue, path: String) -> String? {
        switch value {
        case .null: return path
        case .object(let members):
            for (name, member) in members.sorted(by: { $0.key < $1.key }) {
                if let found = firstNull(in: member, path: path.isEmpty ? String(name.prefix(64)) : path + "." + name.prefix(64)) { return found }
            }
            return nil
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                if let found = firstNull(in: element, path: path + "[\(index)]") { return found }
            }
            return nil
        default: return nil
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
