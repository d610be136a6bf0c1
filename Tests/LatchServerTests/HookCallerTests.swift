import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
@testable import LatchApp
import LatchCore
import NIOCore
import Testing

/// The deployment's hook caller against a live HTTP server on 127.0.0.1.
@Suite("Hook calls over HTTP")
struct HookCallerTests {
    static func withHookServer(_ body: @Sendable (String) async throws -> Void) async throws {
        let router = Router()
        router.post("echo") { request, _ -> Response in
            let bytes = try await request.body.collect(upTo: 1 << 20)
            let signature = request.headers[HTTPField.Name("Latch-Signature")!] ?? ""
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string:
                #"{"received":\#(bytes.readableBytes),"signature":"\#(signature)"}"#)))
        }
        router.post("redirect") { _, _ -> Response in Response(status: .found, headers: [.location: "http://169.254.169.254/"]) }
        router.post("big") { _, _ -> Response in Response(status: .ok, body: .init(byteBuffer: ByteBuffer(repeating: 0x41, count: 3 * 1024 * 1024))) }
        router.post("slow") { _, _ -> Response in
            try await Task.sleep(for: .seconds(3))
            return Response(status: .ok)
        }
        router.post("busy") { _, _ -> Response in Response(status: .serviceUnavailable) }
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)))
        try await app.test(.live) { client in try await body("http://127.0.0.1:\(try #require(client.port))") }
    }

    @Test("Answers come back; a redirect is refused, not followed; a 3 MB answer is too large; a slow hook times out; 503 is an answer")
    func outcomes() async throws {
        try await Self.withHookServer { base in
            let caller = HTTPHookCaller(policy: HookAddressPolicy(allowPrivateAddresses: true))
            let echo = await caller.post(url: base + "/echo", body: Array(#"{"a":1}"#.utf8), headers: [("Latch-Signature", "t=1,v1=ab")], timeoutSeconds: 30)
            let answer = try echo.get()
            #expect(answer.status == 200)
            #expect(String(decoding: answer.body, as: UTF8.self) == #"{"received":7,"signature":"t=1,v1=ab"}"#)
            #expect(await caller.post(url: base + "/redirect", body: [], headers: [], timeoutSeconds: 30) == .failure(.redirect(302)))
            #expect(await caller.post(url: base + "/big", body: [], headers: [], timeoutSeconds: 30) == .failure(.tooLarge))
            #expect(await caller.post(url: base + "/slow", body: [], headers: [], timeoutSeconds: 1) == .failure(.timeout))
            #expect(try await caller.post(url: base + "/busy", body: [], headers: [], timeoutSeconds: 30).get().status == 503)
        }
    }

    @Test("By default a hook on this host is refused before any connection, by literal address and by resolved name")
    func ssrf() async throws {
        try await Self.withHookServer { base in
            let caller = HTTPHookCaller(policy: HookAddressPolicy(allowPrivateAddresses: false))
            guard case .failure(.refused) = await caller.post(url: base + "/echo", body: [], headers: [], timeoutSeconds: 30) else {
                Issue.record("127.0.0.1 was called")
                return
            }
            let port = try #require(URLComponents(string: base)?.port)
            guard case .failure(.refused) = await caller.post(url: "http://localhost:\(port)/echo", body: [], headers: [], timeoutSeconds: 30) else {
                Issue.record("localhost was called")
                return
            }
            // A name that resolves to loopback is refused after resolution.
            #expect(await HTTPHookCaller.resolve("localhost").allSatisfy { HookAddressPolicy(allowPrivateAddresses: false).addressProblem($0) != nil })
            // A dead port is a network error (worth a retry).
            let dead = HTTPHookCaller(policy: HookAddressPolicy(allowPrivateAddresses: true))
            guard case .failure(.network) = await dead.post(url: "http://127.0.0.1:9/", body: [], headers: [], timeoutSeconds: 2) else {
                Issue.record("a dead port was not a network error")
                return
            }
        }
    }
}
