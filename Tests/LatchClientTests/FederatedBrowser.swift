import AsyncHTTPClient
import Foundation
import LatchApp
import LatchClient
import LatchCore
import LatchModel
import LatchTesting
import NIOCore
import NIOHTTP1
import Testing

/// A browser for the SDK's federated sign-in tests, over real HTTP: follows 302/303 redirects between a ``LiveLatch``
/// and the upstream provider (both on 127.0.0.1, each origin with its own cookies), submits the upstream's login form,
/// and stops at a page or at a redirect that leaves both (the app's redirect URI).
final class FederatedBrowser: Sendable {
    enum Stop: Sendable, CustomStringConvertible {
        /// A page at `url`.
        case page(url: String, status: Int, body: String)
        /// A redirect out of Latch and the upstream: the app's URI, with its query.
        case app(String)

        var appURL: String? { if case .app(let url) = self { url } else { nil } }
        var body: String { if case .page(_, _, let body) = self { body } else { "" } }
        var status: Int { if case .page(_, let status, _) = self { status } else { 303 } }
        var description: String {
            switch self {
            case .page(let url, let status, let body): "page \(status) at \(url): \(body.prefix(600))"
            case .app(let url): "redirect to \(url)"
            }
        }
    }

    let origins: [String]
    /// Cookies by origin, then name.
    let jar = Locked<[String: [String: String]]>([:])

    static let http = HTTPClient(configuration: .init(redirectConfiguration: .disallow, timeout: .init(connect: .seconds(10), read: .seconds(60))))

    /// A browser that follows redirects within `latch` and `upstream` (origins `http://127.0.0.1:N`).
    init(latch: String, upstream: String) {
        origins = [latch, upstream]
    }

    func cookies(_ origin: String) -> [String: String] { jar.withLock { $0[origin] ?? [:] } }

    static func origin(of url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme, let host = components.host else { return nil }
        return "\(scheme)://\(host)" + (components.port.map { ":\($0)" } ?? "")
    }

    private func store(_ origin: String, _ headers: [String]) {
        for header in headers {
            let first = header.split(separator: ";").first ?? ""
            let parts = first.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let rawName = parts.first else { continue }
            let name = rawName.trimmingCharacters(in: .whitespaces)
            let value = parts.count > 1 ? String(parts[1]) : ""
            let deleted = header.lowercased().contains("max-age=0") || value.isEmpty
            jar.withLock { $0[origin, default: [:]][name] = deleted ? nil : value }
        }
    }

    /// One request to any origin: status, `Location` and body.
    func fetch(_ method: HTTPMethod, _ url: String, form: [(String, String)]? = nil) async throws -> (status: Int, location: String?, body: String) {
        guard let origin = Self.origin(of: url) else { throw Failure(description: "not a URL: \(url)") }
        var request = HTTPClientRequest(url: url)
        request.method = method
        let cookies = cookies(origin)
        if !cookies.isEmpty {
            request.headers.add(name: "Cookie", value: cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))
        }
        if let form {
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = .bytes(ByteBuffer(string: FormEncoding.query(form)))
        }
        let response = try await Self.http.execute(request, timeout: .seconds(60))
        store(origin, response.headers["Set-Cookie"])
        let body = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), response.headers.first(name: "Location"), String(buffer: body))
    }

    /// Opens `url` and follows redirects (at most 10) while they stay within Latch and the upstream.
    func open(_ url: String, method: HTTPMethod = .GET, form: [(String, String)]? = nil) async throws -> Stop {
        var current = url
        var answer = try await fetch(method, current, form: form)
        for _ in 0..<10 {
            guard [301, 302, 303, 307].contains(answer.status), let location = answer.location else {
                return .page(url: current, status: answer.status, body: answer.body)
            }
            let next = location.hasPrefix("/") ? (Self.origin(of: current) ?? "") + location : location
            guard let origin = Self.origin(of: next), origins.contains(origin) else { return .app(next) }
            current = next
            answer = try await fetch(.GET, current)
        }
        throw Failure(description: "more than 10 redirects from \(url)")
    }

    /// Submits the upstream's login form found on `page`.
    func signIn(at page: Stop, username: String = "alice", password: String = "password") async throws -> Stop {
        guard let pending = Self.capture(#"name="pending" value="([^"]*)""#, in: page.body) else {
            throw Failure(description: "no upstream login form: \(page)")
        }
        return try await open(origins[1] + "/login", method: .POST, form: [("username", username), ("password", password), ("pending", pending)])
    }

    /// Opens `url` (Latch's authorization URL), signs in at the upstream when it asks, and returns the app redirect.
    func signInThrough(_ url: URL, username: String = "alice", password: String = "password") async throws -> URL {
        var stop = try await open(url.absoluteString)
        if stop.appURL == nil { stop = try await signIn(at: stop, username: username, password: password) }
        guard let app = stop.appURL, let redirect = URL(string: app) else { throw Failure(description: "no redirect to the app: \(stop)") }
        return redirect
    }

    static func capture(_ pattern: String, in text: String) -> String? {
        guard let regex = try? NSRegularExpression(pattern: pattern),
            let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)), let range = Range(match.range(at: 1), in: text)
        else { return nil }
        return String(text[range])
    }

    struct Failure: Error, CustomStringConvertible { let description: String }
}

/// A ``LiveLatch`` with the real upstream provider (`Tests/Peers/upstream_oidc_provider.py`) registered as `corp` and
/// allowed for the default client, whose redirect URIs are ``appRedirect`` and any loopback `/callback`.
struct FederatedLatch: Sendable {
    static let appRedirect = "com.example.app:/callback"
    static let appSignedOut = "com.example.app:/signed-out"
    static let upstreamClientID = "latch-rp"
    static let upstreamSecret = "upstream-secret-0123456789abcdef"

    let latch: LiveLatch
    let upstream: UpstreamProviderProcess

    func browser() -> FederatedBrowser { FederatedBrowser(latch: latch.url.absoluteString, upstream: upstream.issuer) }

    /// Runs `body` with Latch and the upstream provider (a test calling it takes `.requires(.upstreamProvider)`).
    static func run(_ body: @Sendable (FederatedLatch) async throws -> Void) async throws {
        // Its tests take `.requires(.upstreamProvider)`: skipped without Authlib and Flask, failed here under LATCH_CI=1.
        try await Peer.upstreamProvider.require()
        let directory = TemporaryDirectory(prefix: "latch-federated-sdk")
        defer { directory.remove() }
        // Latch first: the upstream must know Latch's callback URLs, which name Latch's port.
        try await LiveLatch.run { latch in
            let issuer = latch.url.absoluteString
            let upstream = try await UpstreamProviderProcess(
                clientID: upstreamClientID, clientSecret: upstreamSecret,
                redirectURIs: ["\(issuer)/oauth2/upstream/corp/callback", "\(issuer)/oauth2/upstream/corp/signed-out"],
                users: ["alice:password:alice@example.com:Alice Liddell", "bob:hunter22:bob@other.example:Bob"], output: directory.path + "/upstream.log")
            do {
                let added = try await CustomHookFixture.admin(
                    latch, "POST", "admin/v1/upstream-idps",
                    body: AdminUpstreamIdPRequest(
                        id: "corp", displayName: "Corp SSO", issuer: upstream.issuer, clientId: upstreamClientID, clientSecret: upstreamSecret,
                        scopes: ["openid", "profile", "email"], usernameClaim: "preferred_username", keptClaims: ["email", "name"]))
                try #require(added.status == 201, "\(String(decoding: added.body, as: UTF8.self))")
                let patched = try await CustomHookFixture.admin(
                    latch, "PATCH", "admin/v1/clients/default",
                    body: AdminClientPatch(
                        redirectUris: [appRedirect, "http://127.0.0.1/callback"], postLogoutRedirectUris: [appSignedOut], upstreamIdps: ["corp"]))
                try #require(patched.status == 200, "\(String(decoding: patched.body, as: UTF8.self))")
                try await body(FederatedLatch(latch: latch, upstream: upstream))
            } catch {
                await upstream.stop()
                throw error
            }
            await upstream.stop()
        }
    }

    /// The upstream's test counters (`GET /test/state`).
    func upstreamState() async throws -> JSONValue {
        let response = try await FederatedBrowser.http.execute(HTTPClientRequest(url: upstream.issuer + "/test/state"), timeout: .seconds(10))
        return try JSONValue.parse(Array(try await response.body.collect(upTo: 1 << 20).readableBytesView))
    }

    /// Sets the upstream's misbehaviour (`POST /test/misbehave`).
    func misbehave(_ mode: String) async throws {
        var request = HTTPClientRequest(url: upstream.issuer + "/test/misbehave")
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(string: #"{"mode": "\#(mode)"}"#))
        let response = try await FederatedBrowser.http.execute(request, timeout: .seconds(10))
        try #require(response.status.code == 200)
    }
}
