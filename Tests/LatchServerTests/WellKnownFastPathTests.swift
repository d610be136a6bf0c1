import Foundation
import HTTPTypes
import LatchCore
import LatchModel
@testable import LatchServer
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

/// The well-known documents answered on the event loop (`WellKnownFastPath`), driven through NIO's embedded channel.
@Suite("Well-known fast path")
struct WellKnownFastPathTests {
    /// A channel with the fast path over `deployment`'s documents and metrics.
    static func channel(_ deployment: Deployment) -> EmbeddedChannel {
        EmbeddedChannel(
            handler: WellKnownFastPath(documents: WellKnownDocuments(deployment.services), metrics: deployment.services.metrics, serverName: "Latch"))
    }

    /// Runs `body` with a fresh deployment, a client of its router and a fast-path channel over its documents; the
    /// channel is finished after `body` and the deployment removed (also when `body` throws).
    static func withFastPath(_ body: @escaping @Sendable (Deployment, EmbeddedChannel, Client) async throws -> Void) async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            let channel = Self.channel(deployment)
            try await body(deployment, channel, client)
            _ = try channel.finish()
        }
    }

    static func request(_ method: HTTPRequest.Method, _ path: String, _ fields: HTTPFields = [:]) -> HTTPRequestPart {
        .head(HTTPRequest(method: method, scheme: nil, authority: "latch.test", path: path, headerFields: fields))
    }

    /// One whole request: its head, a body when given, its end.
    static func send(_ channel: EmbeddedChannel, _ head: HTTPRequestPart, body: String? = nil) throws {
        try channel.writeInbound(head)
        if let body { try channel.writeInbound(HTTPRequestPart.body(ByteBuffer(string: body))) }
        try channel.writeInbound(HTTPRequestPart.end(nil))
    }

    /// The router's answer to the oldest request passed on: a head and its end.
    static func routerAnswers(_ channel: EmbeddedChannel, _ status: HTTPResponse.Status = .ok) throws {
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: status)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
    }

    /// The response parts written so far: (head, body bytes, whether it ended), one per response.
    static func answers(_ channel: EmbeddedChannel) throws -> [(HTTPResponse, [UInt8], Bool)] {
        var answers: [(HTTPResponse, [UInt8], Bool)] = []
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) {
            switch part {
            case .head(let head): answers.append((head, [], false))
            case .body(let buffer): answers[answers.count - 1].1 += Array(buffer.readableBytesView)
            case .end: answers[answers.count - 1].2 = true
            }
        }
        return answers
    }

    /// The request heads that passed on to the router, by path.
    static func passedOn(_ channel: EmbeddedChannel) throws -> [String] {
        var paths: [String] = []
        while let part = try channel.readInbound(as: HTTPRequestPart.self) {
            if case .head(let head) = part { paths.append(head.path ?? "") }
        }
        return paths
    }

    @Test("GET and HEAD of the three documents answer what the router answers, with Date and Server, and are counted under the router's route")
    func answersLikeTheRouter() async throws {
        try await Self.withFastPath { deployment, channel, client in
            let paths = ["/.well-known/openid-configuration", "/.well-known/oauth-authorization-server", "/.well-known/jwks.json"]
            for path in paths {
                for method in [HTTPRequest.Method.get, .head] {
                    try Self.send(channel, Self.request(method, path + (method == .head ? "?any=query" : "")))
                }
            }
            let answers = try Self.answers(channel)
            #expect(try Self.passedOn(channel).isEmpty)
            #expect(answers.count == 6)
            for (index, path) in paths.enumerated() {
                let routed = try await client.get(path)
                #expect(routed.status == .ok)
                let (getHead, getBody, getEnded) = answers[index * 2]
                let (headHead, headBody, headEnded) = answers[index * 2 + 1]
                #expect(getHead.status == .ok && getEnded && headEnded)
                #expect(getBody == Array(routed.body), "\(path)")
                #expect(headBody.isEmpty)
                for head in [getHead, headHead] {
                    #expect(head.headerFields[.contentType] == routed.headers[.contentType])
                    #expect(head.headerFields[.cacheControl] == routed.headers[.cacheControl])
                    #expect(head.headerFields[.contentLength] == String(routed.body.count))
                    #expect(head.headerFields[.server] == "Latch")
                    #expect(head.headerFields[.date]?.hasSuffix(" GMT") == true)
                }
            }
            let text = String(decoding: Array(try #require(deployment.services.metrics).render()), as: UTF8.self)
            // One GET each through the fast path and one through the router, under one series.
            for path in paths {
                #expect(MetricsTests.value(text, #"latch_http_requests_total{route="\#(path)",method="GET",status="200"}"#) == 2, "\(path)")
                #expect(MetricsTests.value(text, #"latch_http_requests_total{route="\#(path)",method="HEAD",status="200"}"#) == 1, "\(path)")
            }
        }
    }

    @Test("Requests the router would answer differently pass on untouched: other methods and paths, a body, a Connection header")
    func passesOnTheRest() async throws {
        try await Self.withFastPath { _, channel, _ in
            let requests: [(HTTPRequestPart, String)] = [
                (Self.request(.post, "/.well-known/jwks.json"), "/.well-known/jwks.json"),
                (Self.request(.options, "/.well-known/jwks.json"), "/.well-known/jwks.json"),
                (Self.request(.get, "/.well-known/jwks.json/"), "/.well-known/jwks.json/"),
                (Self.request(.get, "/.well-known/JWKS.json"), "/.well-known/JWKS.json"),
                (Self.request(.get, "/.well-known/jwks.jsonx"), "/.well-known/jwks.jsonx"),
                (Self.request(.get, "/oauth2/userinfo"), "/oauth2/userinfo"),
                (Self.request(.get, "/.well-known/jwks.json", [.connection: "close"]), "/.well-known/jwks.json"),
                (Self.request(.get, "/.well-known/jwks.json", [.connection: "keep-alive"]), "/.well-known/jwks.json"),
                (Self.request(.get, "/.well-known/jwks.json", [.contentLength: "2"]), "/.well-known/jwks.json"),
                (Self.request(.get, "/.well-known/jwks.json", [.transferEncoding: "chunked"]), "/.well-known/jwks.json"),
            ]
            for (head, path) in requests {
                try Self.send(channel, head, body: "{}")
                #expect(try Self.passedOn(channel) == [path])
                #expect(try Self.answers(channel).isEmpty)
                // The router's answer ends; the next request is then free to be taken.
                try Self.routerAnswers(channel, .notFound)
                #expect(try Self.answers(channel).count == 1)
            }
            try Self.send(channel, Self.request(.get, "/.well-known/jwks.json"))
            #expect(try Self.passedOn(channel).isEmpty)
            #expect(try Self.answers(channel).first?.0.status == .ok)
        }
    }

    @Test("HTTP/1.1 answers in order: while an earlier request is being answered by the router, the documents pass on too")
    func keepsPipelinedOrder() async throws {
        try await Self.withFastPath { _, channel, _ in
            // A token request, then two documents pipelined behind it before its answer.
            try Self.send(channel, Self.request(.post, "/oauth2/token", [.contentLength: "2"]), body: "{}")
            for path in ["/.well-known/jwks.json", "/.well-known/openid-configuration"] {
                try Self.send(channel, Self.request(.get, path))
            }
            #expect(try Self.passedOn(channel) == ["/oauth2/token", "/.well-known/jwks.json", "/.well-known/openid-configuration"])
            #expect(try Self.answers(channel).isEmpty)
            // The router answers the three in turn; only after the last does the fast path take the next request.
            for remaining in [2, 1, 0] {
                try Self.routerAnswers(channel)
                try Self.send(channel, Self.request(.get, "/.well-known/jwks.json"))
                if remaining > 0 {
                    #expect(try Self.passedOn(channel) == ["/.well-known/jwks.json"])
                    // The request passed on now is answered too before the count falls.
                    try Self.routerAnswers(channel)
                } else {
                    #expect(try Self.passedOn(channel).isEmpty)
                }
            }
            let answers = try Self.answers(channel)
            #expect(answers.map(\.0.status.code) == [200, 200, 200, 200, 200, 200])
            #expect(answers.last?.0.headerFields[.contentType] == "application/json")
            #expect(answers.dropLast().allSatisfy { $0.0.headerFields[.contentType] == nil })
        }
    }

    @Test("A key rotation shows in the next answer")
    func rotationShows() async throws {
        try await Self.withFastPath { deployment, channel, _ in
            func keyIDs() throws -> [String] {
                try Self.send(channel, Self.request(.get, "/.well-known/jwks.json"))
                let body = try #require(try Self.answers(channel).first).1
                return try JSONValue.parse(Data(body))["keys"]?.arrayValue?.compactMap { $0["kid"]?.stringValue } ?? []
            }
            let before = try keyIDs()
            #expect(before.count == 1)
            _ = try await deployment.services.keys.rotate(random: .system)
            let after = try keyIDs()
            #expect(after.count == 2 && after.contains(before[0]), "\(after)")
        }
    }

    @Test("The Date header is RFC 9110's IMF-fixdate")
    func dateFormat() {
        // RFC 9110 §5.6.7's example.
        #expect(HTTPDate.format(epochSeconds: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(HTTPDate.format(epochSeconds: 0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(HTTPDate.format(epochSeconds: 1_795_824_000) == "Sat, 28 Nov 2026 00:00:00 GMT")
    }
}
