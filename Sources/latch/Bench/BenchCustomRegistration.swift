import ArgumentParser
import Foundation
import LatchHookKit
import LatchModel

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The custom-registration scenarios of `latch bench` (issue 12), against the example two-step hook `Examples/SMSHook`,
/// which the bench starts itself on 127.0.0.1 (one fresh hook process per scenario, with a fixed code):
///
/// - `custom-sms`: registrations through Latch, one step per iteration — `init` with a new phone number, then
///   `complete` with the code — so the row's rate is steps per second and its latencies are per step;
/// - `custom-hook-direct`: the same signed hook requests sent straight to the hook (no Latch), so the hook's own
///   latency stands next to Latch's; Latch's overhead per step is the difference of the two p99s;
/// - `custom-sms@200`, `custom-hook-direct@200`: the same at a paced 200 steps/s (latency from the scheduled instant),
///   where neither side queues: the overhead the issue's target (≤ 1 ms at p99 with a local hook) is about.
///
/// The example hook's replay guard remembers at most 10,000 requests for its 5-minute window (it answers 503 beyond),
/// so each scenario stops after ``maximumSteps`` steps even when its time is not up.
final class BenchCustomRegistration: @unchecked Sendable {
    static let scenarios: Set<String> = ["custom-sms", "custom-hook-direct", "custom-sms@200", "custom-hook-direct@200"]
    /// Pairs of (through Latch, straight to the hook) whose difference is Latch's overhead.
    static let pairs = [("custom-sms", "custom-hook-direct"), ("custom-sms@200", "custom-hook-direct@200")]
    static let hookName = "SMSHook"
    static let code = "123456"
    /// Steps per scenario, under the example hook's replay-guard capacity (10,000 live requests).
    static let maximumSteps = 9_000
    /// What Latch names as the client in a hook request when the app names none.
    static let clientID = "default"

    let adminToken: String
    /// The `latch` executable: the hook is looked for next to it.
    let latchExecutable: String
    let secret = "bench-hook-secret-" + UUID().uuidString
    /// Per scenario: its hook, or why it could not start (the scenario then fails with that message).
    var hooks: [String: BenchHookProcess] = [:]
    var failures: [String: String] = [:]
    /// Per scenario through Latch: its provider's id.
    var providers: [String: String] = [:]
    /// Scenarios run so far: part of every phone number, so no two registrations of a run share one.
    var runs = 0

    init(adminToken: String, latchExecutable: String) {
        self.adminToken = adminToken
        self.latchExecutable = latchExecutable
    }

    /// Whether a scenario goes through Latch (else straight to the hook), and its pace in steps per second.
    static func kind(_ name: String) -> (throughLatch: Bool, rate: Double?) {
        let parts = name.split(separator: "@", maxSplits: 1)
        return (parts[0] == "custom-sms", parts.count == 2 ? Double(parts[1]) : nil)
    }

    /// The hook executable: next to `latch` (where `swift build` puts every product), else an error that says so.
    func hookExecutable() -> Result<String, BenchConnection.Failure> {
        var folders = [URL(fileURLWithPath: latchExecutable).deletingLastPathComponent()]
        if let bundle = Bundle.main.executableURL?.deletingLastPathComponent() { folders.append(bundle) }
        folders.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        let candidates = folders.map { $0.appendingPathComponent(Self.hookName).path }
        if let found = candidates.first(where: FileManager.default.isExecutableFile(atPath:)) { return .success(found) }
        return .failure(BenchConnection.Failure(
            description: "the \(Self.hookName) executable is not next to latch (looked in \(Set(folders.map(\.path)).sorted().joined(separator: ", "))); "
                + "build it too: swift build -c release --product \(Self.hookName)"))
    }

    /// Starts one hook per selected scenario and, for the scenarios through Latch, a two-step provider calling it.
    /// A hook that cannot start fails its scenario (not the run); a provider Latch refuses fails the run.
    func prepare(port: Int, scenarios: [String], directory: String) throws {
        let connection = try BenchConnection(host: "127.0.0.1", port: port)
        let headers = [("Content-Type", "application/json"), ("Authorization", "Bearer \(adminToken)")]
        for (index, name) in scenarios.enumerated() where Self.scenarios.contains(name) {
            let hook: BenchHookProcess
            do {
                let executable = try hookExecutable().get()
                hook = try BenchHookProcess(
                    executable: executable, output: directory + "/hook-\(index).log",
                    environment: ["HOOK_SECRET": secret, "HOOK_HOST": "127.0.0.1", "HOOK_PORT": "0", "SMS_OUTBOX": "/dev/null", "SMS_FIXED_CODE": Self.code])
            } catch {
                failures[name] = "\(error)"
                continue
            }
            hooks[name] = hook
            guard Self.kind(name).throughLatch else { continue }
            let provider = "bench-sms-\(index)"
            let request = AdminCustomProviderRequest(
                id: provider, name: "Bench SMS (\(name))", flow: "two_step", hookURL: "http://127.0.0.1:\(hook.port)/", hookSecret: secret)
            let (status, body) = try connection.send("POST", "/admin/v1/custom-providers", headers: headers, body: Array(try JSONEncoder().encode(request)))
            guard status == 201 else { throw ValidationError("setup custom provider failed: \(status) \(String(decoding: body.prefix(200), as: UTF8.self))") }
            providers[name] = provider
        }
    }

    /// A phone number no other registration of this bench run uses: "+49", the scenario's number in the run (2 digits),
    /// the worker (3 digits, < 256) and the registration's number on that worker (5 digits, < maximumSteps / 2).
    static func phone(scenario: Int, worker: Int, registration: Int) -> String {
        func digits(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "+49" + digits(scenario % 100, 2) + digits(worker, 3) + digits(registration, 5)
    }

    func run(_ name: String, port: Int, duration: Double, connections: Int, server: ServerProcess) -> ScenarioResult {
        guard let hook = hooks[name] else {
            return ScenarioResult(
                name: name, requests: 0, errors: 1, seconds: 0, latencies: [], firstError: failures[name] ?? "the hook did not start")
        }
        let (throughLatch, rate) = Self.kind(name)
        let index = runs
        runs += 1
        // Even: init; odd: complete of the same registration. Bounded by the hook's replay guard (see maximumSteps).
        let steps = max(2, Self.maximumSteps / connections / 2 * 2)
        let transactions = Slots<String>(count: connections, initial: "")
        if throughLatch {
            let provider = providers[name] ?? ""
            return LoadRunner.run(
                name: name, port: port, connections: connections, duration: duration, rate: rate, maximumIterations: steps, server: server
            ) { connection, worker, iteration in
                let json = [("Content-Type", "application/json")]
                if iteration % 2 == 0 {
                    let phone = Self.phone(scenario: index, worker: worker, registration: iteration / 2)
                    let (status, body) = try connection.send(
                        "POST", "/v1/custom-registrations/init", headers: json,
                        body: Array(#"{"identityProvider":"\#(provider)","data":{"phone":"\#(phone)"}}"#.utf8))
                    let id = status == 200 ? BenchFixture.member("transactionId", in: body) : nil
                    transactions.set(worker, id ?? "")
                    return (1, id != nil, id != nil ? nil : "init: \(status) \(String(decoding: body.prefix(200), as: UTF8.self))")
                }
                let id = transactions.value(worker)
                guard !id.isEmpty else { return (0, false, "complete: no transaction (its init failed)") }
                let (status, body) = try connection.send(
                    "POST", "/v1/custom-registrations/complete", headers: json,
                    body: Array(#"{"transactionId":"\#(id)","data":{"code":"\#(Self.code)"}}"#.utf8))
                return (1, status == 201, status == 201 ? nil : "complete: \(status) \(String(decoding: body.prefix(200), as: UTF8.self))")
            }
        }
        // Straight to the hook: the requests Latch would send (the same JSON encoding, signature and idempotency key),
        // each transaction new to the hook.
        let initData = Slots<JSONValue>(count: connections, initial: .null)
        let run = UUID().uuidString.prefix(8)
        let secret = secret
        return LoadRunner.run(
            name: name, port: hook.port, connections: connections, duration: duration, rate: rate, maximumIterations: steps, server: nil
        ) { connection, worker, iteration in
            let phone = Self.phone(scenario: index, worker: worker, registration: iteration / 2)
            let transactionID = "bench-\(run)-\(worker)-\(iteration / 2)"
            let isInit = iteration % 2 == 0
            let request = HookRequest(
                step: isInit ? .`init` : .complete, transactionId: transactionID, identityProvider: "bench-sms", clientId: Self.clientID,
                data: isInit ? ["phone": .string(phone)] : ["code": .string(Self.code)], initData: isInit ? nil : initData.value(worker))
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let body = Array(try encoder.encode(request))
            let key = HookIdempotencyKey(transactionId: transactionID, step: request.step, attempt: 1)
            let (status, answer) = try connection.send("POST", "/", headers: [
                ("Content-Type", "application/json"),
                (HookSignature.headerName, HookSignature.header(secret: secret, timestamp: Int64(Date().timeIntervalSince1970), body: body)),
                (HookSignature.idempotencyKeyHeaderName, key.description),
                ("User-Agent", "Latch-Hook/1"),
            ], body: body)
            let parsed = status == 200 ? try? JSONValue.parse(answer) : nil
            if isInit { initData.set(worker, parsed?["data"] ?? .null) }
            let ok = parsed?["status"]?.intValue == 2000 && (isInit || parsed?["user"]?["username"]?.stringValue == phone)
            return (1, ok, ok ? nil : "\(request.step.rawValue): \(status) \(String(decoding: answer.prefix(200), as: UTF8.self))")
        }
    }

    /// One line per pair measured in this run: steps/s and p99 per step through Latch and straight to the hook, and
    /// their difference — Latch's overhead per step.
    static func overhead(_ results: [ScenarioResult]) -> [String] {
        pairs.compactMap { latchName, directName in
            guard let latch = results.first(where: { $0.name == latchName }), let direct = results.first(where: { $0.name == directName }),
                !latch.latencies.isEmpty, !direct.latencies.isEmpty
            else { return nil }
            func rate(_ result: ScenarioResult) -> Double { Double(result.latencies.count) / max(result.seconds, 0.001) }
            let load = kind(latchName).rate.map { String(format: "paced at %.0f steps/s", $0) } ?? "as fast as it goes"
            return "custom registration (\(load)), per step: " + String(
                format: "through Latch %.0f steps/s, p50 %.2f ms, p99 %.2f ms; straight to the hook %.0f steps/s, "
                    + "p50 %.2f ms, p99 %.2f ms; Latch's overhead p50 %.2f ms, p99 %.2f ms (target ≤ 1 ms at p99 with a local hook)",
                rate(latch), latch.percentile(0.5), latch.percentile(0.99), rate(direct), direct.percentile(0.5), direct.percentile(0.99),
                latch.percentile(0.5) - direct.percentile(0.5), latch.percentile(0.99) - direct.percentile(0.99))
        }
    }

    /// Stops every hook: SIGTERM to all at once, then each waited for (bounded, see ``BenchHookProcess/stop()``).
    func stop() {
        for hook in hooks.values { hook.terminate() }
        for hook in hooks.values { hook.stop() }
    }
}

/// An example hook started by the benchmark on 127.0.0.1, port of its choosing (its first line: `listening on <port>`).
final class BenchHookProcess {
    let process = Process()
    private(set) var port = 0
    /// When SIGTERM was sent.
    private var terminated: Double?

    init(executable: String, output: String, environment extra: [String: String]) throws {
        guard FileManager.default.createFile(atPath: output, contents: nil), let log = FileHandle(forWritingAtPath: output) else {
            throw BenchConnection.Failure(description: "cannot write \(output)")
        }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = []
        process.environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        process.standardOutput = log
        process.standardError = log
        let name = URL(fileURLWithPath: executable).lastPathComponent
        try process.run()
        // Wait for `listening on <port>` (bounded: 30 s).
        let started = LoadRunner.now()
        while LoadRunner.now() - started < 30 {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.hasPrefix("listening on ") {
                if let number = Int(line.dropFirst("listening on ".count)), number > 0 {
                    port = number
                    return
                }
            }
            guard process.isRunning else { throw BenchConnection.Failure(description: "\(name) exited during start: \(text.prefix(500))") }
            usleep(10_000)
        }
        stop()
        throw BenchConnection.Failure(description: "\(name) did not print `listening on <port>` within 30 s")
    }

    /// Sends SIGTERM once, without waiting.
    func terminate() {
        guard terminated == nil, process.isRunning else { return }
        terminated = LoadRunner.now()
        process.terminate()
    }

    /// SIGTERM, then SIGKILL 10 s after it: a hook that does not shut down cannot hang the benchmark.
    func stop() {
        guard process.isRunning else { return }
        terminate()
        let asked = terminated ?? LoadRunner.now()
        while process.isRunning && LoadRunner.now() - asked < 10 { usleep(10_000) }
        if process.isRunning {
            FileHandle.standardError.write(Data("latch bench: the hook did not stop within 10 s of SIGTERM; killing it\n".utf8))
            kill(process.processIdentifier, SIGKILL)
        }
        process.waitUntilExit()
    }

    deinit { stop() }
}
