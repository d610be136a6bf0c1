#if os(Linux)
import Synchronization
#else
import Atomics
#endif
import Foundation
import HTTPTypes
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import LatchModel

/// How long a client may take, and how many connections may be open at once: what keeps slow or silent clients
/// (slowloris) from holding every connection.
public struct ConnectionLimits: Sendable {
    /// From the connection's start, or the first byte of the next request, to its complete head.
    public var headTimeout: Duration = .seconds(10)
    /// From a request's head to the end of its body.
    public var bodyTimeout: Duration = .seconds(30)
    /// An idle keep-alive connection (between a response and the next request) is closed after this.
    public var idleTimeout: Duration = .seconds(60)
    /// Connections open at once; past it new ones are closed at once (see ``effectiveMaximum(configured:)``).
    public var maximumConnections: Int = 4096

    public init() {}

    /// `configured`, held under the process's descriptor limit (`RLIMIT_NOFILE`) less 128 kept for the database,
    /// files and the listening socket: past the limit `accept` would fail and stall every client.
    public static func effectiveMaximum(configured: Int) -> (maximum: Int, descriptorLimit: Int?) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return (configured, nil) }
        let descriptors = Int(clamping: limit.rlim_cur)
        return (max(16, min(configured, descriptors - 128)), descriptors)
    }
}

/// The open connections of one server, across event loops.
public final class ConnectionCounter: Sendable {
    let limits: ConnectionLimits
    let logger: Logger
    // The stdlib's `Atomic` (inline, Linux) where it exists; swift-atomics' on Apple platforms before macOS 15.
    #if os(Linux)
    private let open = Atomic<Int>(0)
    /// Seconds since the epoch of the last "limit reached" log line (one every 10 s at most).
    private let lastWarning = Atomic<Int64>(0)
    #else
    private let open = ManagedAtomic<Int>(0)
    private let lastWarning = ManagedAtomic<Int64>(0)
    #endif

    public init(limits: ConnectionLimits, logger: Logger) {
        self.limits = limits
        self.logger = logger
    }

    public var openConnections: Int { open.load(ordering: .relaxed) }

    /// Counts a new connection in; false (and uncounted) past the limit.
    func admit() -> Bool {
        let now = increment()
        guard now > limits.maximumConnections else { return true }
        decrement()
        let second = Int64(Date().timeIntervalSince1970)
        let last = lastWarning.load(ordering: .relaxed)
        if second - last >= 10, lastWarning.compareExchange(expected: last, desired: second, ordering: .relaxed).exchanged {
            logger.warning(
                "connection limit reached: new connections are closed until others end",
                metadata: ["limit": "\(limits.maximumConnections)", "setting": "http.maxConnections"])
        }
        return false
    }

    func release() { decrement() }

    /// One more open connection; the count after it.
    private func increment() -> Int {
        #if os(Linux)
        open.wrappingAdd(1, ordering: .relaxed).newValue
        #else
        open.wrappingIncrementThenLoad(by: 1, ordering: .relaxed)
        #endif
    }

    private func decrement() {
        #if os(Linux)
        open.wrappingSubtract(1, ordering: .relaxed)
        #else
        open.wrappingDecrement(ordering: .relaxed)
        #endif
    }

    /// The handlers one connection needs (Hummingbird adds them after HTTP decoding).
    public func handlers() -> [any RemovableChannelHandler] { [ConnectionGuard(counter: self)] }
}

/// Enforces ``ConnectionLimits`` on one connection. It watches request parts after decoding, and installs a
/// ``RawBytesWatcher`` at the front of the pipeline to see the first byte of a request before its head is whole.
/// A head or body that does not arrive in time gets `408 Request Timeout` and the connection closes; an idle
/// keep-alive connection just closes.
///
/// A request only moves a deadline (a clock read); nothing is scheduled per request. One timer per connection
/// ticks at most every `min(headTimeout, bodyTimeout, idleTimeout)` and acts when the deadline has passed: since
/// every new deadline lies at least that far ahead, the next tick is never late.
final class ConnectionGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    enum Phase {
        /// Waiting for a head that has begun (or for the first request of the connection).
        case awaitingHead
        case readingBody
        /// The request is being answered: no client deadline (the database timeout bounds it).
        case answering
        /// Between a response and the next request's first byte.
        case idle
    }

    private let counter: ConnectionCounter
    private var admitted = false
    private(set) var phase = Phase.awaitingHead
    /// When the current phase's time is up; nil while answering.
    private var deadline: NIODeadline?
    private var tick: Scheduled<Void>?
    private let interval: TimeAmount
    private var watcher: RawBytesWatcher?
    private var requestsInProgress = 0
    /// Whether a response has begun since the last request head: then a timeout may only close.
    private var responding = false
    /// The current request asked to close after its response (HTTP/1.0 without keep-alive, `Connection: close`).
    var closeAfterResponse = false
    private var context: ChannelHandlerContext?

    init(counter: ConnectionCounter) {
        self.counter = counter
        let limits = counter.limits
        interval = Self.amount(min(limits.headTimeout, limits.bodyTimeout, limits.idleTimeout))
    }

    static func amount(_ duration: Duration) -> TimeAmount {
        .nanoseconds(Int64(duration.components.seconds) * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        guard counter.admit() else {
            context.close(promise: nil)
            return
        }
        admitted = true
        self.context = context
        let watcher = RawBytesWatcher(guard: self)
        self.watcher = watcher
        try? context.pipeline.syncOperations.addHandler(watcher, position: .first)
        // HTTP/1 semantics the version-less parts no longer carry: whether the client keeps the connection.
        if let codec = try? context.pipeline.syncOperations.handler(type: HTTP1ToHTTPServerCodec.self) {
            try? context.pipeline.syncOperations.addHandler(KeepAliveWatcher(guard: self), position: .before(codec))
        }
        deadline = .now() + Self.amount(counter.limits.headTimeout)
        schedule(context, at: deadline!)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        tick?.cancel()
        tick = nil
        self.context = nil
        if admitted {
            admitted = false
            counter.release()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            requestsInProgress += 1
            responding = false
            phase = .readingBody
            deadline = .now() + Self.amount(counter.limits.bodyTimeout)
            if tick == nil { schedule(context, at: .now() + interval) }
        case .body:
            break
        case .end:
            phase = .answering
            deadline = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var response):
            responding = true
            if closeAfterResponse {
                // RFC 9112 §9.6: tell the client this is the last response.
                response.headerFields[.connection] = "close"
                context.write(wrapOutboundOut(.head(response)), promise: promise)
                return
            }
        case .body:
            break
        case .end:
            if closeAfterResponse {
                // RFC 9112 §9.3: a connection the client does not keep alive closes after the response.
                context.writeAndFlush(data, promise: promise)
                context.close(promise: nil)
                return
            }
            requestsInProgress -= 1
            if requestsInProgress <= 0, phase == .answering {
                phase = .idle
                deadline = .now() + Self.amount(counter.limits.idleTimeout)
                if tick == nil { schedule(context, at: .now() + interval) }
            }
        }
        context.write(data, promise: promise)
    }

    /// A head over the decoder's limits (8 KiB a field, 16 KiB or 100 fields in all) is answered `431 Request Header
    /// Fields Too Large` (RFC 6585 §5) and the connection closed; other errors go on to Hummingbird (400).
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let parserError = error as? HTTPParserError, parserError == .headerOverflow, let watcher {
            watcher.answerAndClose(RawBytesWatcher.headersTooLarge)
            return
        }
        context.fireErrorCaught(error)
    }

    /// The first raw byte after a response: a new request has begun; its head has `headTimeout`.
    func bytesArrived() {
        guard phase == .idle else { return }
        phase = .awaitingHead
        deadline = .now() + Self.amount(counter.limits.headTimeout)
    }

    private func schedule(_ context: ChannelHandlerContext, at time: NIODeadline) {
        tick = context.eventLoop.assumeIsolated().scheduleTask(deadline: time) { [self] in
            tick = nil
            let now = NIODeadline.now()
            guard let deadline else { return }  // answering: the response's end schedules again
            guard now >= deadline else {
                schedule(context, at: min(deadline, now + interval))
                return
            }
            // A 408 only where no response has begun: a head never came, or a body is late before any answer.
            if phase == .awaitingHead || (phase == .readingBody && !responding) {
                watcher?.answerAndClose(RawBytesWatcher.timeout)
            } else {
                context.close(promise: nil)
            }
        }
    }
}

/// Between NIO's HTTP/1 decoder and the conversion to HTTP types: tells the guard whether the client keeps
/// the connection alive (RFC 9112 §9.3: HTTP/1.0 only with `Connection: keep-alive`; HTTP/1.1 unless `close`).
final class KeepAliveWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    private unowned let owner: ConnectionGuard

    init(guard owner: ConnectionGuard) { self.owner = owner }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) { owner.closeAfterResponse = !head.isKeepAlive }
        context.fireChannelRead(data)
    }
}

/// The front of the pipeline: reports raw bytes to its ``ConnectionGuard`` and can write a bare 408 there.
final class RawBytesWatcher: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private unowned let owner: ConnectionGuard
    private var context: ChannelHandlerContext?

    init(guard owner: ConnectionGuard) { self.owner = owner }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }
    func handlerRemoved(context: ChannelHandlerContext) { self.context = nil }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        owner.bytesArrived()
        context.fireChannelRead(data)
    }

    /// A complete answer with a JSON error body and `Connection: close`, for writing straight to the socket.
    static func answer(_ status: String, code: String, message: String) -> [UInt8] {
        let body = #"{"error":"\#(code)","error_description":"\#(message)"}"#
        return Array(
            "HTTP/1.1 \(status)\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
    }

    static let timeout = answer("408 Request Timeout", code: "request_timeout", message: "the request did not arrive in time")
    static let headersTooLarge = answer(
        "431 Request Header Fields Too Large", code: "headers_too_large", message: "the request head exceeds 8 KiB a field, or 16 KiB or 100 fields in all")

    /// Writes `answer` straight to the socket (no response has begun) and closes.
    func answerAndClose(_ answer: [UInt8]) {
        guard let context else { return }
        var buffer = context.channel.allocator.buffer(capacity: answer.count)
        buffer.writeBytes(answer)
        let promise = context.eventLoop.makePromise(of: Void.self)
        context.writeAndFlush(NIOAny(buffer), promise: promise)
        promise.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
