import HTTPTypes
import Hummingbird
import Tracing

/// A server span per request (`tracing.enabled`): named by method and route template (`POST /oauth2/token`), with the
/// status; the caller's W3C `traceparent` continues its trace. Unlike Hummingbird's `TracingMiddleware`, it never
/// records the raw path or the query string, which carry authorization codes, enrollment tickets and ID-token hints.
struct RequestTracingMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var serviceContext = ServiceContext.current ?? .topLevel
        InstrumentationSystem.instrument.extract(request.headers, into: &serviceContext, using: HTTPFieldsExtractor())
        let method = MetricsMiddleware<Context>.method(request.method)
        return try await withSpan(method, context: serviceContext, ofKind: .server) { span in
            span.attributes["http.request.method"] = method
            func finish(_ status: Int) {
                let route = context.endpointPath.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "unmatched"
                span.operationName = "\(method) \(route)"
                span.attributes["http.route"] = route
                span.attributes["http.response.status_code"] = status
                if status >= 500 { span.setStatus(SpanStatus(code: .error)) }
            }
            do {
                let response = try await next(request, context)
                finish(Int(response.status.code))
                return response
            } catch let error as any HTTPResponseError {
                finish(Int(error.status.code))
                throw error
            } catch {
                finish(500)
                throw error
            }
        }
    }
}

/// Reads propagation headers (`traceparent`, `tracestate`) from a request's fields.
struct HTTPFieldsExtractor: Extractor {
    func extract(key: String, from carrier: HTTPFields) -> String? {
        HTTPField.Name(key).flatMap { carrier[$0] }
    }
}
