#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
import Darwin
#endif
import HTTPTypes
import Hummingbird
import HummingbirdCore
import LatchModel
import Logging
import NIOCore
import NIOHTTPTypes

/// Answers plain `GET` and `HEAD` requests for the well-known documents (discovery, authorization-server metadata,
/// JWKS) on the connection's event loop, from the same ``WellKnownDocuments`` the router serves.
///
/// Every verifier and client library fetches these documents, they carry nothing secret, and they are the same for
/// every caller; through the router each answer crossed from the event loop to the task pool and back and passed
/// the middleware chain, which cost half as much again as writing the cached answer here (86 against 57 µs of server
/// CPU per request in docs/bench-2026-11-27-well-known.md). Only requests the router
/// would answer exactly alike are taken: `GET` or `HEAD` of one of the three paths (any query), without a body or a
/// `Connection` header, while no earlier request of the connection is still being answered (HTTP/1.1 answers in
/// order). Anything else passes on untouched. Each answer is counted in `latch_http_requests_total` under the route
/// the router would name. Not installed when tracing is on (the router's middleware makes the spans).
///
/// Sits after Hummingbird's connection-state handler (see ``LatchHTTP1Channel``), so the idle timeout and graceful
/// shutdown see these requests and answers like any other.
public final class WellKnownFastPath: ChannelDuplexHandler, RemovableChannelHandler {
    public typealias InboundIn = HTTPRequestPart
    public typealias InboundOut = HTTPRequestPart
    public typealias OutboundIn = HTTPResponsePart
    public typealias OutboundOut = HTTPResponsePart

    private let documents: WellKnownDocuments
    private let metrics: LatchMetrics?
    private let serverName: String?
    /// Requests passed on whose answer has not ended.
    private var passedOn = 0
    /// A request this handler answers, until its end arrives.
    private var taken: (answer: WellKnownDocuments.Answer, method: HTTPRequest.Method, started: NIODeadline)?
    private var needsFlush = false
    private var date = HTTPDate()

    public init(documents: WellKnownDocuments, metrics: LatchMetrics?, serverName: String?) {
        self.documents = documents
        self.metrics = metrics
        self.serverName = serverName
    }

    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let request):
            if passedOn == 0, taken == nil, let answer = answer(for: request) {
                taken = (answer, request.method, .now())
                return
            }
            passedOn += 1
            context.fireChannelRead(data)
        case .body:
            // A taken request declared no body, so the parser gives it none.
            if taken == nil { context.fireChannelRead(data) }
        case .end:
            guard let (answer, method, started) = taken else {
                context.fireChannelRead(data)
                return
            }
            taken = nil
            write(answer, head: method == .head, context: context)
            metrics?.request(
                route: answer.route, method: method.rawValue, status: 200, nanoseconds: (NIODeadline.now() - started).nanoseconds)
        }
    }

    public func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { passedOn -= 1 }
        context.write(data, promise: promise)
    }

    /// The answer when the router would give exactly it, else nil.
    private func answer(for request: HTTPRequest) -> WellKnownDocuments.Answer? {
        guard request.method == .get || request.method == .head, let target = request.path else { return nil }
        let fields = request.headerFields
        guard fields[.connection] == nil, fields[.contentLength] == nil, fields[.transferEncoding] == nil else { return nil }
        let path = target.firstIndex(of: "?").map { target[..<$0] } ?? target[...]
        return documents.answer(path: path)
    }

    private func write(_ answer: WellKnownDocuments.Answer, head: Bool, context: ChannelHandlerContext) {
        var fields = answer.headers
        fields[.contentLength] = String(answer.body.readableBytes)
        fields[.date] = date.now()
        if let serverName { fields[.server] = serverName }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: .ok, headerFields: fields))), promise: nil)
        if !head { context.write(wrapOutboundOut(.body(answer.body)), promise: nil) }
        context.write(wrapOutboundOut(.end(nil)), promise: nil)
        needsFlush = true
    }
}

/// Hummingbird's HTTP/1.1 channel with ``WellKnownFastPath`` placed after its connection-state handler.
public struct LatchHTTP1Channel: ServerChildChannel {
    public typealias Value = HTTP1Channel.Value

    private let base: HTTP1Channel
    private let fastPath: (@Sendable () -> WellKnownFastPath)?
    /// Whether the process has said that the fast path could not be installed (said once, not per connection).
    private static let warned = Locked(false)

    /// `fastPath` makes each connection's handler; nil serves every request through the router.
    public init(base: HTTP1Channel, fastPath: (@Sendable () -> WellKnownFastPath)?) {
        self.base = base
        self.fastPath = fastPath
    }

    public func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { [fastPath] value in
            guard let fastPath else { return value }
            let pipeline = channel.pipeline.syncOperations
            // Without the state handler (a Hummingbird that builds its pipeline otherwise) every request goes through
            // the router: slower, never wrong.
            guard let state = try? pipeline.handler(type: HTTPConnectionStateHandler.self) else {
                if Self.warned.withLock({ warned in defer { warned = true }; return !warned }) {
                    logger.warning("well-known fast path not installed: no HTTPConnectionStateHandler in Hummingbird's pipeline")
                }
                return value
            }
            try pipeline.addHandler(fastPath(), position: .after(state))
            return value
        }
    }

    public func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// The `Date` header (RFC 9110 §5.6.7, IMF-fixdate), formatted at most once a second.
struct HTTPDate {
    private var second = Int.min
    private var text = ""

    mutating func now() -> String {
        let seconds = time(nil)
        if seconds != second {
            second = seconds
            text = Self.format(epochSeconds: seconds)
        }
        return text
    }

    static func format(epochSeconds: Int) -> String {
        var value = time_t(epochSeconds)
        var parts = tm()
        gmtime_r(&value, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
