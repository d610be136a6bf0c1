import CoreMetrics
import Foundation
import Hummingbird
import LatchCore
import NIOCore
import Prometheus
import LatchModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The deployment's metrics: swift-metrics instruments made by a factory of its own (never the process-global one,
/// so several deployments — tests, replicas in one process — keep separate counts), kept in a swift-prometheus
/// registry and rendered in the Prometheus text format at `GET /metrics`.
///
/// Label values come from closed sets only (route templates, methods, statuses, grant types, error codes), so the
/// number of series is bounded whatever clients send.
public final class LatchMetrics: StoreObserver, Sendable {
    let registry = PrometheusCollectorRegistry()
    let factory: PrometheusMetricsFactory
    let started = Date()

    /// Request-duration buckets, seconds: 0.5 ms … 10 s.
    static let durationBuckets: [Duration] = [
        .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(10),
    ]

    /// Units of work per commit (SQLite group commit: how many writes one fsync carried).
    static let unitBuckets: [Double] = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]

    public init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = Self.durationBuckets
        factory.valueHistogramBuckets["latch_store_commit_units"] = Self.unitBuckets
        self.factory = factory
        commitUnits = Recorder(label: "latch_store_commit_units", dimensions: [], aggregate: true, factory: factory)
        commitDuration = CoreMetrics.Timer(label: "latch_store_commit_duration_seconds", dimensions: [], factory: factory)
        readDuration = CoreMetrics.Timer(label: "latch_store_read_duration_seconds", dimensions: [], factory: factory)
    }

    let readDuration: CoreMetrics.Timer
    private let pooled = Locked<(any PooledStore)?>(nil)

    /// Reports `store`'s connection pool at each scrape: `latch_store_pool_size`, `latch_store_pool_connections{state}`
    /// (`in_use`, `waiting`) and `latch_store_pool_peak_operations` (the most operations holding or waiting for a
    /// connection at once since the previous scrape).
    public func observePool(_ store: any PooledStore) { pooled.withLock { $0 = store } }

    /// A read: `latch_store_read_duration_seconds`, waiting for a pooled connection included.
    public func read(nanoseconds: Int64) { readDuration.recordNanoseconds(nanoseconds) }

    let commitUnits: Recorder
    let commitDuration: CoreMetrics.Timer
    private let storeErrors = Locked<[String: CoreMetrics.Counter]>([:])

    /// A durable commit: `latch_store_commit_duration_seconds` and `latch_store_commit_units` (SQLite: the group
    /// commit's size).
    public func committed(units: Int, nanoseconds: Int64) {
        commitUnits.record(units)
        commitDuration.recordNanoseconds(nanoseconds)
    }

    /// `latch_store_errors_total{operation}`: the store was unavailable.
    public func failed(_ operation: String) {
        let counter =
            storeErrors.withLock { $0[operation] }
            ?? {
                let made = CoreMetrics.Counter(label: "latch_store_errors_total", dimensions: [("operation", operation)], factory: factory)
                return storeErrors.withLock { cache in
                    if let existing = cache[operation] { return existing }
                    cache[operation] = made
                    return made
                }
            }()
        counter.increment()
    }

    /// The instruments of one (route, method, status): found by one lookup per request; the timer is per (route, method).
    struct RequestKey: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    struct RequestInstruments {
        let counter: CoreMetrics.Counter
        let timer: CoreMetrics.Timer
    }

    struct PairKey: Hashable {
        var first: String
        var second: String
    }

    private let requestInstruments = Locked<[RequestKey: RequestInstruments]>([:])
    private let tokenCounters = Locked<[PairKey: CoreMetrics.Counter]>([:])
    private let registrationCounters = Locked<[PairKey: CoreMetrics.Counter]>([:])
    private let signInCounters = Locked<[PairKey: CoreMetrics.Counter]>([:])

    /// One answered HTTP request: `latch_http_requests_total` and `latch_http_request_duration_seconds` by route
    /// template, method and status.
    public func request(route: String, method: String, status: Int, nanoseconds: Int64) {
        let key = RequestKey(route: route, method: method, status: status)
        let instruments =
            requestInstruments.withLock { $0[key] }
            ?? {
                let made = RequestInstruments(
                    counter: CoreMetrics.Counter(
                        label: "latch_http_requests_total", dimensions: [("route", route), ("method", method), ("status", String(status))], factory: factory),
                    timer: CoreMetrics.Timer(label: "latch_http_request_duration_seconds", dimensions: [("route", route), ("method", method)], factory: factory))
                return requestInstruments.withLock { cache in
                    if let existing = cache[key] { return existing }
                    cache[key] = made
                    return made
                }
            }()
        instruments.counter.increment()
        instruments.timer.recordNanoseconds(nanoseconds)
    }

    /// A counter of `label` for one pair of label values, made once.
    func pairCounter(_ cache: borrowing Locked<[PairKey: CoreMetrics.Counter]>, _ label: String, _ names: (String, String), _ values: (String, String))
        -> CoreMetrics.Counter
    {
        let key = PairKey(first: values.0, second: values.1)
        if let counter = cache.withLock({ $0[key] }) { return counter }
        let made = CoreMetrics.Counter(label: label, dimensions: [(names.0, values.0), (names.1, values.1)], factory: factory)
        return cache.withLock { cache in
            if let existing = cache[key] { return existing }
            cache[key] = made
            return made
        }
    }

    /// One token-endpoint answer: `latch_token_requests_total` by grant type and outcome (`ok` or the error code).
    public func tokenRequest(grantType: String, outcome: String) {
        pairCounter(tokenCounters, "latch_token_requests_total", ("grant_type", "outcome"), (grantType, outcome)).increment()
    }

    /// One sign-in at the token endpoint: `latch_signins_total` by method (`federated`, `device_key`, `webauthn`,
    /// `app_attest`, `issuer_login`, `authorization_code`; `jwt_bearer` for an assertion refused before a method took it)
    /// and outcome (`ok` or the error code).
    public func signIn(method: String, outcome: String) {
        pairCounter(signInCounters, "latch_signins_total", ("method", "outcome"), (method, outcome)).increment()
    }

    /// One registration answer: `latch_registrations_total` by proof type (`challengeType`) and outcome.
    func registration(proofType: String, outcome: String) {
        pairCounter(registrationCounters, "latch_registrations_total", ("proof_type", "outcome"), (proofType, outcome)).increment()
    }

    /// The Prometheus text exposition, with the process gauges read now.
    public func render() -> [UInt8] {
        updateProcessGauges()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        return buffer
    }

    /// What recording costs on one thread: nanoseconds to count and time one request and count its token answer, over
    /// `iterations` requests spread across a few routes and outcomes (for `latch bench`).
    public static func recordingCost(iterations: Int = 200_000) -> Double {
        let metrics = LatchMetrics()
        let routes = ["/oauth2/token", "/v1/sign-in/challenge", "/oauth2/userinfo", "/v1/registrations"]
        let outcomes = ["ok", "ok", "ok", "invalid_grant"]
        let start = ContinuousClock.now
        for index in 0..<iterations {
            metrics.request(route: routes[index & 3], method: "POST", status: 200, nanoseconds: Int64(100_000 + index & 0xFFFF))
            metrics.tokenRequest(grantType: "refresh_token", outcome: outcomes[index & 3])
        }
        let elapsed = ContinuousClock.now - start
        let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        return nanoseconds / Double(max(1, iterations))
    }

    /// The answer of `GET /metrics` (on the main port with an admin token, or on `metrics.port`).
    public func response() -> Response {
        Response(
            status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: render())))
    }

    /// A router serving only `GET /metrics`, unauthenticated: for `metrics.port`, bound to loopback by default.
    public func router() -> Router<BasicRequestContext> {
        let router = Router()
        router.get("metrics") { _, _ -> Response in self.response() }
        return router
    }

    /// `process_resident_memory_bytes`, `process_cpu_seconds_total` (from `/proc/self/stat` on Linux) and
    /// `process_start_time_seconds`, named as Prometheus's own clients name them.
    func updateProcessGauges() {
        if let store = pooled.withLock({ $0 }) {
            let sample = store.poolSample()
            func gauge(_ name: String, _ help: String, _ labels: [(String, String)] = []) -> Prometheus.Gauge {
                registry.makeGauge(
                    descriptor: MetricNameDescriptor(namespace: "latch_store_pool", metricName: name, unitName: "", helpText: help), labels: labels)
            }
            let connections = "Store operations holding a pooled connection (in_use) or waiting for one (waiting)."
            gauge("size", "The most connections the store's pool opens.").set(Double(sample.size))
            gauge("connections", connections, [("state", "in_use")]).set(Double(sample.inUse))
            gauge("connections", connections, [("state", "waiting")]).set(Double(sample.waiting))
            gauge("peak_operations", "The most store operations holding or waiting for a connection at once since the previous scrape.")
                .set(Double(sample.peak))
        }
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "process", metricName: "start_time", unitName: "seconds", helpText: "Start time of the process since the Unix epoch, seconds.")
        ).set(started.timeIntervalSince1970)
        #if os(Linux)
        guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return }
        // Fields after the command name: state is field 3; utime 14, stime 15, rss 24 (in pages).
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 22, let utime = Double(fields[11]), let stime = Double(fields[12]), let rss = Double(fields[21]) else { return }
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "process", metricName: "cpu_seconds", unitName: "total", helpText: "User and system CPU time spent, seconds.")
        ).set((utime + stime) / ticks)
        registry.makeGauge(
            descriptor: MetricNameDescriptor(
                namespace: "process", metricName: "resident_memory", unitName: "bytes", helpText: "Resident memory size, bytes.")
        ).set(rss * page)
        #endif
    }
}
