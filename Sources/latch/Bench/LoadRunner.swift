import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What one scenario measured.
struct ScenarioResult {
    var name: String
    var requests: Int
    var errors: Int
    var seconds: Double
    /// Latencies in microseconds, sorted.
    var latencies: [UInt32]
    var serverCPU: Double?
    var peakRSS: Int?
    var firstError: String?

    var rate: Double { seconds > 0 ? Double(requests) / seconds : 0 }

    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return 0 }
        let index = min(latencies.count - 1, Int((Double(latencies.count) * p).rounded(.up)) - 1)
        return Double(latencies[max(0, index)]) / 1000
    }
}

/// Drives `connections` threads, each with its own keep-alive connection, for at most `duration` seconds.
///
/// Every loop is bounded twice: by the deadline and by `maximumIterations` per connection. With `rate`, each
/// connection sends on a fixed schedule and latency counts from the scheduled instant (no coordinated omission).
enum LoadRunner {
    /// One iteration of a scenario on one connection: returns how many requests it made and whether all
    /// succeeded; throws on transport failure.
    typealias Step = @Sendable (_ connection: BenchConnection, _ worker: Int, _ iteration: Int) throws -> (requests: Int, ok: Bool, error: String?)

    static func run(
        name: String, port: Int, connections: Int, duration: Double, rate: Double? = nil, maximumIterations: Int = .max,
        server: ServerProcess?, step: @escaping Step
    ) -> ScenarioResult {
        struct WorkerResult {
            var latencies: [UInt32] = []
            var requests = 0
            var errors = 0
            var firstError: String?
        }
        let results = Slots<WorkerResult>(count: connections, initial: WorkerResult())
        server?.resetPeakRSS()
        let cpuBefore = server?.cpuSeconds()
        let group = DispatchGroup()
        let started = now()
        let deadline = started + duration
        let interval = rate.map { Double(connections) / $0 }
        for worker in 0..<connections {
            let workerPort = server?.port(for: worker, target: port) ?? port
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                var result = WorkerResult()
                result.latencies.reserveCapacity(1 << 16)
                do {
                    let connection = try BenchConnection(host: "127.0.0.1", port: workerPort)
                    var iteration = 0
                    // Stagger paced workers across one interval.
                    var scheduled = started + (interval.map { $0 * Double(worker) / Double(connections) } ?? 0)
                    while iteration < maximumIterations {
                        if interval != nil {
                            let wait = scheduled - now()
                            if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
                        }
                        let begin = interval == nil ? now() : scheduled
                        if begin >= deadline { break }
                        let outcome = try step(connection, worker, iteration)
                        let elapsed = now() - begin
                        result.latencies.append(UInt32(min(elapsed * 1_000_000, Double(UInt32.max))))
                        result.requests += outcome.requests
                        if !outcome.ok {
                            result.errors += 1
                            if result.firstError == nil { result.firstError = outcome.error }
                        }
                        iteration += 1
                        if let interval { scheduled += interval }
                    }
                } catch {
                    result.errors += 1
                    result.firstError = result.firstError ?? "\(error)"
                }
                results.set(worker, result)
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        group.wait()
        let elapsed = now() - started
        var merged = WorkerResult()
        for result in results.values {
            merged.latencies += result.latencies
            merged.requests += result.requests
            merged.errors += result.errors
            merged.firstError = merged.firstError ?? result.firstError
        }
        merged.latencies.sort()
        let cpu: Double? = if let server, let cpuBefore { (server.cpuSeconds() - cpuBefore) / elapsed } else { nil }
        return ScenarioResult(
            name: name, requests: merged.requests, errors: merged.errors, seconds: elapsed, latencies: merged.latencies,
            serverCPU: cpu, peakRSS: server?.peakRSS(), firstError: merged.firstError)
    }

    /// Monotonic seconds.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

/// One slot per worker thread, written once each under a lock.
final class Slots<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Value]

    init(count: Int, initial: Value) { storage = Array(repeating: initial, count: count) }

    func set(_ index: Int, _ value: Value) {
        lock.lock()
        storage[index] = value
        lock.unlock()
    }

    func value(_ index: Int) -> Value {
        lock.lock()
        defer { lock.unlock() }
        return storage[index]
    }

    var values: [Value] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}
