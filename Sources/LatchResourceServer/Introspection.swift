import AsyncHTTPClient
import Crypto
import Foundation
import LatchModel
import NIOCore
import NIOHTTP1

/// Asks Latch whether a token is active (RFC 7662). ``HTTPTokenIntrospector`` makes the HTTP call; tests may answer
/// themselves.
public protocol TokenIntrospecting: Sendable {
    /// The introspection answer for `token` (a JSON object with at least `active`), or a thrown error when Latch could
    /// not be asked.
    func introspect(token: String) async throws -> [String: JSONValue]
}

/// RFC 7662 over HTTP(S): `POST` of `token=…` (form-encoded) with the resource server's HTTP Basic credential
/// (RFC 6749 §2.3.1), bounded in time and size, no redirects.
public struct HTTPTokenIntrospector: TokenIntrospecting {
    /// Why a call failed.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    let url: String
    let authorization: String
    let client: HTTPClient
    let timeout: TimeAmount

    /// Introspection as `options` says; `client` nil uses this library's client that never follows redirects.
    public init(options: IntrospectionOptions, client: HTTPClient? = nil) {
        url = options.url
        // RFC 6749 §2.3.1: the id and secret are form-urlencoded before they are joined and base64-encoded.
        let credential = "\(Self.formEncoded(options.clientID)):\(Self.formEncoded(options.clientSecret))"
        authorization = "Basic " + Data(credential.utf8).base64EncodedString()
        self.client = client ?? .latchResourceServer
        timeout = options.timeout.timeAmount
    }

    public func introspect(token: String) async throws -> [String: JSONValue] {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Authorization", value: authorization)
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(ByteBuffer(string: "token=" + Self.formEncoded(token)))
        let response = try await client.execute(request, timeout: timeout)
        guard response.status.code == 200 else { throw Failure(description: "introspection answered HTTP \(response.status.code)") }
        let body = try await response.body.collect(upTo: 64 * 1024)
        guard case .object(let answer)? = try? JSONValue.parse(Array(body.readableBytesView)) else {
            throw Failure(description: "the introspection answer is not a JSON object")
        }
        return answer
    }

    /// `application/x-www-form-urlencoded` (unreserved characters kept, everything else percent-encoded).
    static func formEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}

/// Recent `active` introspection answers, by token: each kept for the configured lifetime and never past the token's
/// `exp`; at most `capacity` entries (16 bytes of hash and an expiry each). Inactive answers are never cached.
final class IntrospectionCache: Sendable {
    let lifetime: Int64
    let capacity: Int
    /// The answers' expiries, and when a full cache may next be swept (at most once a second: tokens are verified
    /// before they get here, yet sweeping costs a pass over every entry).
    let state = Locked<(entries: [DPoPReplayCache.Key: Int64], nextSweep: Int64)>(([:], 0))

    init(lifetime: Int64, capacity: Int) {
        self.lifetime = lifetime
        self.capacity = max(1, capacity)
    }

    var isEnabled: Bool { lifetime > 0 }

    func isActive(_ token: String, now: Int64) -> Bool {
        guard isEnabled else { return false }
        let key = DPoPReplayCache.Key(token)
        return state.withLock { ($0.entries[key] ?? .min) > now }
    }

    func remember(_ token: String, expiresAt: Int64, now: Int64) {
        guard isEnabled else { return }
        let key = DPoPReplayCache.Key(token)
        state.withLock { state in
            if state.entries.count >= capacity, now >= state.nextSweep {
                state.entries = state.entries.filter { $0.value > now }
                state.nextSweep = now + 1
            }
            // Still full of live answers: this one is simply not cached.
            guard state.entries.count < capacity else { return }
            state.entries[key] = min(now + lifetime, expiresAt)
        }
    }
}
