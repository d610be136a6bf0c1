import ArgumentParser
import Foundation
import LatchApp
import LatchModel

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `latch health`: is a Latch server ready? For container health checks (the Dockerfile's `HEALTHCHECK`), systemd
/// and scripts, without curl in the image.
struct Health: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check that a Latch server is ready (GET /health/ready): exit 0 when it is, 3 when it is not.",
        discussion: """
            Exit 3 — the server cannot be reached, does not answer within --timeout, answers something that is not \
            Latch, or answers that it is not ready (its database cannot be reached) — with one line on stderr saying \
            which; exit 2 for a bad flag or configuration. With --wait it probes again every 0.2 s until the \
            server is ready or the seconds pass (a script that starts a server: `latch health --wait 60`).
            Without --url it probes where `latch serve` listens with the same configuration (http.host and \
            http.port from LATCH_HTTP_HOST, LATCH_HTTP_PORT or --config; a wildcard host such as 0.0.0.0 is probed \
            on loopback): http://127.0.0.1:8080 unless they are set.
            """)

    @Option(help: "Base URL of the server (default: the address latch serve listens on with this configuration).")
    var url: String?

    @Option(help: "Seconds to wait for the answer, connecting included (0.1–60).")
    var timeout: Double = 5

    @Option(help: "JSON configuration file the server runs with, to find its address when --url is not given.")
    var config: String?

    @Option(help: "Keep probing (every 0.2 s) until the server is ready, for up to this many seconds (0–600): for scripts that start a server.")
    var wait: Double = 0

    func validate() throws {
        guard timeout >= 0.1, timeout <= 60 else { throw ValidationError("--timeout must be 0.1–60 seconds, not \(timeout)") }
        guard wait >= 0, wait <= 600 else { throw ValidationError("--wait must be 0–600 seconds, not \(wait)") }
    }

    func run() async throws {
        let base = try await baseURL()
        guard let components = URLComponents(string: base), ["http", "https"].contains(components.scheme?.lowercased()), components.host?.isEmpty == false,
            let probeURL = URL(string: base.hasSuffix("/") ? base + "health/ready" : base + "/health/ready")
        else {
            throw ValidationError("--url must be an http or https URL, not \(base)")
        }
        let deadline = ContinuousClock.now + .seconds(wait)
        var outcome = await Self.probe(probeURL, timeout: timeout)
        // What is reported is the last failure that says something about the server. A probe cut short because the
        // wait was running out (its limit below --timeout) and that timed out only says the wait ended: under load a
        // refused connection once took longer than the 0.25 s left, and "no answer within 0.25 s" hid "cannot reach".
        var reported = outcome
        while !outcome.isReady, ContinuousClock.now + .milliseconds(200) < deadline {
            try await Task.sleep(for: .milliseconds(200))
            let limit = min(timeout, max(0.1, (deadline - ContinuousClock.now) / .seconds(1)))
            outcome = await Self.probe(probeURL, timeout: limit)
            if case .timedOut = outcome, limit < timeout { continue }
            reported = outcome
        }
        if outcome.isReady { return }
        FileHandle.standardError.write(Data("error: \(probeURL.absoluteString): \(reported.reason)\n".utf8))
        throw ExitCode(ExitStatus.unreachable)
    }

    /// `--url`, or where `latch serve` listens with the configuration of this environment (and `--config`).
    func baseURL() async throws -> String {
        if let url { return url }
        let configuration = try await LatchConfiguration.load(overrides: [:], configFile: config)
        guard configuration.port != 0 else {
            throw ValidationError("http.port is 0 (a free port picked at start): give the server's address with --url")
        }
        return "http://\(Self.probeHost(configuration.host)):\(configuration.port)"
    }

    /// The host to connect to for a listening address: loopback for a wildcard address, brackets for IPv6.
    static func probeHost(_ host: String) -> String {
        switch host {
        case "", "0.0.0.0", "*": "127.0.0.1"
        case "::", "[::]": "[::1]"
        default: host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        }
    }

    enum Outcome: Sendable {
        case ready
        case failed(String)
        /// No answer within this many seconds.
        case timedOut(Double)

        var isReady: Bool {
            if case .ready = self { true } else { false }
        }

        var reason: String {
            switch self {
            case .ready: "ready"
            case .failed(let reason): reason
            case .timedOut(let seconds): "no answer within \(seconds.formatted()) s (--timeout)"
            }
        }
    }

    private struct NoAnswer: Error {}

    /// One GET, answered within `timeout` seconds whatever the network does: the request's own timeouts are set,
    /// and the deadline answers `.timedOut` if they do not fire (the request is then abandoned; the process exits).
    static func probe(_ url: URL, timeout: Double) async -> Outcome {
        do {
            return try await withAbandoningDeadline(.seconds(timeout), timeoutError: { NoAnswer() }) {
                await request(url, timeout: timeout)
            }
        } catch {
            return .timedOut(timeout)
        }
    }

    private static func request(_ url: URL, timeout: Double) async -> Outcome {
        let settings = URLSessionConfiguration.ephemeral
        settings.timeoutIntervalForRequest = timeout
        settings.timeoutIntervalForResource = timeout
        let session = URLSession(configuration: settings)
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch let error as URLError where error.code == .timedOut {
            return .timedOut(timeout)
        } catch {
            return .failed("cannot reach the server: \(error.localizedDescription)")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        if status == 200, (try? JSONDecoder().decode(HealthBody.self, from: data))?.status == "ok" { return .ready }
        if status != 200, let error = try? JSONDecoder().decode(ErrorResponse.self, from: data) {
            let detail = error.errorDescription.map { ": \($0)" } ?? ""
            return .failed("not ready: HTTP \(status) \(error.error.rawValue)\(detail)")
        }
        if status == 503 { return .failed("not ready: HTTP 503 (the server runs but its database does not answer)") }
        return .failed("HTTP \(status) with an answer that is not Latch's health status; is this a Latch server?")
    }

    private struct HealthBody: Decodable {
        let status: String
    }
}
