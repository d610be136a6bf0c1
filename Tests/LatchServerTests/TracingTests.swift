import Foundation
import HTTPTypes
import InMemoryTracing
import LatchApp
import LatchCore
import LatchModel
@testable import LatchServer
import Testing
import Tracing

/// Tracing (`tracing.enabled`) with swift-distributed-tracing's in-memory tracer bootstrapped for the process (spans
/// of other suites land there too: each test follows its own trace id).
@Suite("Tracing")
struct TracingTests {
    static let tracer: InMemoryTracer = {
        let tracer = InMemoryTracer()
        InstrumentationSystem.bootstrap(tracer)
        LatchTracing.setEnabled(true)
        return tracer
    }()

    /// The finished spans of trace `id`.
    static func spans(_ id: String) -> [FinishedInMemorySpan] { tracer.finishedSpans.filter { $0.traceID == id } }

    @Test("A request is a server span named by its route template, continuing the caller's trace; its grant, store reads and writes are its children; no query string, path or secret is recorded")
    func spansOfASignIn() async throws {
        _ = Self.tracer
        let deployment = try await Deployment.make { $0.tracingEnabled = true }
        try await deployment.run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated(subject: "ada")
            let assertion = try client.federatedAssertion(subject: "ada")
            let trace = "trace-" + UUID().uuidString
            let form = "grant_type=\(GrantType.jwtBearer.formEscaped)&assertion=\(assertion)"
            var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
            headers[HTTPField.Name(InMemoryTracer.traceIDKey)!] = trace
            headers[HTTPField.Name(InMemoryTracer.spanIDKey)!] = "caller-span"
            #expect(try await client.send(.post, "/oauth2/token", headers: headers, body: form).status == .ok)
            let spans = Self.spans(trace)
            let server = try #require(spans.first { $0.kind == .server }, "\(spans.map(\.operationName))")
            #expect(server.operationName == "POST /oauth2/token" && server.parentSpanID == "caller-span")
            #expect(server.attributes["http.route"]?.toSpanAttribute() == "/oauth2/token")
            #expect(server.attributes["http.response.status_code"]?.toSpanAttribute() == 200)
            let grant = try #require(spans.first { $0.operationName == "token \(GrantType.jwtBearer)" })
            #expect(grant.parentSpanID == server.spanID && grant.attributes["latch.outcome"]?.toSpanAttribute() == "ok")
            #expect(spans.contains { $0.operationName == "store.write" && $0.kind == .client })
            #expect(spans.contains { $0.operationName == "store.read" })
            // Nothing a client sent as a value: the assertion, the form, a query string.
            for span in spans {
                var described = span.operationName
                span.attributes.forEach { key, value in described += " \(key)=\(value)" }
                #expect(!described.contains(assertion.prefix(40)) && !described.contains("assertion") && !described.contains("?"), "\(described)")
            }
            // A refused grant: its outcome; an unmatched path: its own name.
            let refused = "trace-" + UUID().uuidString
            headers[HTTPField.Name(InMemoryTracer.traceIDKey)!] = refused
            _ = try await client.send(.post, "/oauth2/token", headers: headers, body: form)
            #expect(Self.spans(refused).first { $0.operationName.hasPrefix("token ") }?.attributes["latch.outcome"]?.toSpanAttribute() == "invalid_grant")
            let lost = "trace-" + UUID().uuidString
            headers[HTTPField.Name(InMemoryTracer.traceIDKey)!] = lost
            _ = try await client.send(.get, "/no/such/path?code=secret", headers: headers)
            let unmatched = Self.spans(lost).first { $0.kind == .server }
            #expect(unmatched?.operationName == "GET unmatched" && unmatched?.attributes["http.response.status_code"]?.toSpanAttribute() == 404)
        }
    }

    @Test("tracing.enabled=false: no server spans (the engines' spans go to the no-op tracer in production)")
    func off() async throws {
        _ = Self.tracer
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            let trace = "trace-" + UUID().uuidString
            var headers: HTTPFields = [:]
            headers[HTTPField.Name(InMemoryTracer.traceIDKey)!] = trace
            headers[HTTPField.Name(InMemoryTracer.spanIDKey)!] = "caller-span"
            _ = try await client.send(.get, "/.well-known/openid-configuration", headers: headers)
            #expect(Self.spans(trace).isEmpty)
        }
    }
}
