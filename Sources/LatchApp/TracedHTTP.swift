import AsyncHTTPClient
import Foundation
import NIOCore
import LatchCore
import NIOHTTP1
import Tracing

extension HTTPClient {
    /// `execute`, as a client span (`tracing.enabled`): the method, the host (never the path or query) and the status,
    /// with the trace's `traceparent` sent along so the callee (a hook, an upstream provider) can continue it.
    func traced(_ request: HTTPClientRequest, timeout: TimeAmount, span name: String) async throws -> HTTPClientResponse {
        guard LatchTracing.isEnabled else { return try await execute(request, timeout: timeout) }
        var request = request
        return try await withSpan(name, ofKind: .client) { span in
            span.attributes["http.request.method"] = request.method.rawValue
            span.attributes["server.address"] = URLComponents(string: request.url)?.host
            InstrumentationSystem.instrument.inject(ServiceContext.current ?? .topLevel, into: &request.headers, using: HTTPHeadersInjector())
            let response = try await execute(request, timeout: timeout)
            span.attributes["http.response.status_code"] = Int(response.status.code)
            if response.status.code >= 500 { span.setStatus(SpanStatus(code: .error)) }
            return response
        }
    }
}

/// Writes propagation headers into an outgoing request.
struct HTTPHeadersInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout HTTPHeaders) {
        carrier.replaceOrAdd(name: key, value: value)
    }
}
