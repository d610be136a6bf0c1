import AsyncHTTPClient
import Foundation
import HTTPTypes
import LatchJOSE
import NIOCore
import NIOHTTP1
import LatchModel

/// A browser for the federation tests: follows 302/303 redirects between Latch (in-process, `https://latch.test`) and a
/// real upstream provider (over HTTP on 127.0.0.1), keeps each origin's cookies, and stops at a page or at a redirect
/// that leaves both (the app's redirect URI).
final class TestBrowser: Sendable {
    enum Stop: Sendable {
        /// A page (HTML or JSON) at `url`.
        case page(url: String, status: Int, body: String)
        /// A redirect out of Latch and the upstream: the app's URI, with its query.
        case app(String)

        var appURL: String? { if case .app(let url) = self { url } else { nil } }
        var body: String { if case .page(_, _, let body) = self { body } else { "" } }
        var status: Int { if case .page(_, let status, _) = self { status } else { 303 } }
        var url: String { if case .page(let url, _, _) = self { url } else { appURL ?? "" } }
    }

    let latch: Client
    let upstreamOrigin: String
    /// Cookies by origin, then name.
    let jar = Locked<[String: [String: String]]>([:])
    /// Every URL visited, in order.
    let visited = Locked<[String]>([])

    static let http = HTTPClient(configuration: .init(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10), read: .seconds(30))))

    init(latch: Client, upstreamOrigin: String) {
        self.latch = latch
        self.upstreamOrigin = upstreamOrigin
    }

    func cookies(_ origin: String) -> [String: String] { jar.withLock { $0[origin] ?? [:] } }

    func setCookie(_ origin: String, _ name: String, _ value: String?) {
        jar.withLock { $0[origin, default: [:]][name] = value }
    }

    private func store(_ origin: String, _ headers: [String]) {
        for header in headers {
            let first = header.split(separator: ";").first ?? ""
            let parts = first.split(separator: "=", maxSplits: 1)
            guard parts.count >= 1 else { continue }
            let name = String(parts[0]).trimmingCharacters(in: .whitespaces)
            let value = parts.count > 1 ? String(parts[1]) : ""
            let deleted = header.lowercased().contains("max-age=0") || value.isEmpty
            setCookie(origin, name, deleted ? nil : value)
        }
    }

    private func cookieHeader(_ origin: String) -> String? {
        let cookies = cookies(origin)
        return cookies.isEmpty ? nil : cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
    }

    func origin(of url: String) -> String? {
        if url.hasPrefix("https://latch.test/") { return "https://latch.test" }
        if url.hasPrefix(upstreamOrigin + "/") { return upstreamOrigin }
        return nil
    }

    /// One request: status, headers' Location and body.
    func fetch(_ method: HTTPRequest.Method, _ url: String, form: [(String, String)]? = nil, language: String? = nil) async throws
        -> (status: Int, location: String?, body: String)
    {
        visited.withLock { $0.append(url) }
        guard let origin = origin(of: url) else { throw Failure(description: "the browser does not go to \(url)") }
        let body = form.map { $0.map { "\($0.0.formEscaped)=\($0.1.formEscaped)" }.joined(separator: "&") }
        if origin == "https://latch.test" {
            var headers: HTTPFields = [:]
            if let cookie = cookieHeader(origin) { headers[.cookie] = cookie }
            if body != nil { headers[.contentType] = "application/x-www-form-urlencoded" }
            if let language { headers[.acceptLanguage] = language }
            let reply = try await latch.send(method, String(url.dropFirst("https://latch.test".count)), headers: headers, body: body)
            store(origin, reply.headers[values: .setCookie])
            return (Int(reply.status.code), reply.headers[.location], String(decoding: reply.body, as: UTF8.self))
        }
        var request = HTTPClientRequest(url: url)
        request.method = method == .post ? .POST : .GET
        if let cookie = cookieHeader(origin) { request.headers.add(name: "Cookie", value: cookie) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: body))
        }
        let response = try await Self.http.execute(request, timeout: .seconds(30))
        store(origin, response.headers["Set-Cookie"])
        let collected = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), response.headers.first(name: "Location"), String(buffer: collected))
    }

    /// Opens `url` and follows redirects (at most 10).
    func open(_ url: String, method: HTTPRequest.Method = .get, form: [(String, String)]? = nil, language: String? = nil) async throws -> Stop {
        var current = url
        var answer = try await fetch(method, current, form: form, language: language)
        for _ in 0..<10 {
            guard [301, 302, 303, 307].contains(answer.status), let location = answer.location else {
                return .page(url: current, status: answer.status, body: answer.body)
            }
            let next = location.hasPrefix("/") ? (origin(of: current) ?? "") + location : location
            guard origin(of: next) != nil else { return .app(next) }
            current = next
            answer = try await fetch(.get, current, language: language)
        }
        throw Failure(description: "more than 10 redirects from \(url)")
    }

    /// Submits the upstream's login form found on `page`.
    func signIn(at page: Stop, username: String = "alice", password: String = "password") async throws -> Stop {
        guard let pending = Self.capture(#"name="pending" value="([^"]*)""#, in: page.body) else {
            throw Failure(description: "no upstream login form: \(page.body.prefix(500))")
        }
        return try await open(upstreamOrigin + "/login", method: .post, form: [("username", username), ("password", password), ("pending", pending)])
    }

    static func capture(_ pattern: String, in text: String) -> String? {
        guard let regex = try? NSRegularExpression(pattern: pattern),
            let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)), let range = Range(match.range(at: 1), in: text)
        else { return nil }
        return String(text[range])
    }

    struct Failure: Error, CustomStringConvertible { let description: String }
}

/// The query parameters of a URL (first value each).
func queryParameters(_ url: String) -> [String: String] {
    guard let items = URLComponents(string: url)?.queryItems else { return [:] }
    var result: [String: String] = [:]
    for item in items where result[item.name] == nil { result[item.name] = item.value ?? "" }
    return result
}
