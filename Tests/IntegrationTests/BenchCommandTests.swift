import Foundation
import LatchModel
import LatchTesting
import Testing

@Suite("Benchmark command")
struct BenchCommandTests {
    /// Runs the benchmark for a second per scenario; checks the shape of what it prints, never the speed.
    @Test("latch bench runs briefly and reports every scenario it was asked for, well-formed")
    func runsAndReports() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let json = directory.path + "/bench.json"
        let names = ["jwks", "refresh", "refresh-dpop", "key-sign-in", "oob-status", "dpop-verify"]
        let (status, output) = try await run(
            try latchExecutable().path,
            ["bench", "--duration", "1", "--connections", "2", "--scenarios", names.joined(separator: ","), "--json", json], timeout: 120)
        #expect(status == 0, "\(output)")
        #expect(output.contains("cold start:"))
        #expect(!output.contains("did not stop"), "the server hung at shutdown:\n\(output)")
        #expect(!output.contains("first error:"), "\(output)")
        #expect(output.contains("QR codes, one thread:"))
        let lines = output.split(separator: "\n").map(String.init)
        for scenario in names {
            let row = try #require(lines.first { $0.hasPrefix(scenario + " ") }, "no row for \(scenario):\n\(output)")
            // rate, p50, p90, p99, errors: the first five numbers after the name.
            let numbers = row.dropFirst(scenario.count).split(separator: " ").prefix(5).compactMap { Double($0) }
            #expect(numbers.count == 5 && numbers[0] > 0 && numbers[4] == 0, "\(row)")
        }
        // The DPoP lines after the table: refresh with DPoP against refresh, and dpop-verify's split.
        let comparison = try #require(lines.first { $0.hasPrefix("refresh with DPoP: ") }, "\(output)")
        #expect(comparison.contains("/s = ") && comparison.contains(" % of refresh (target ≥ 70 %)"), "\(comparison)")
        let split = try #require(lines.first { $0.hasPrefix("dpop-verify, one thread: ") }, "\(output)")
        #expect(split.contains("AccessTokenVerifier.authenticate") && split.contains("DPoP.verify alone") && split.contains(" 0 errors"), "\(split)")
        let document = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: json)))
        let scenarios = try #require(document["scenarios"]?.arrayValue)
        #expect(scenarios.compactMap { $0["scenario"]?.stringValue } == names)
        for scenario in scenarios {
            #expect((scenario["rate"]?.doubleValue ?? 0) > 0)
            #expect(scenario["errors"] == 0)
            #expect((scenario["p99"]?.doubleValue ?? -1) >= (scenario["p50"]?.doubleValue ?? 0))
            // The server's CPU per operation is its CPU (cores) over the rate, where the server's CPU was measured.
            if let cores = scenario["serverCPU"]?.doubleValue, let rate = scenario["rate"]?.doubleValue, cores > 0 {
                let perOperation = try #require(scenario["serverMicrosecondsPerOperation"]?.doubleValue, "\(scenario)")
                #expect(abs(perOperation - cores * 1_000_000 / rate) <= 1e-6 * perOperation, "\(scenario)")
            }
        }
        #expect(scenarios.contains { ($0["serverMicrosecondsPerOperation"]?.doubleValue ?? 0) > 0 }, "\(scenarios)")
        #expect(lines.contains { $0.contains("server CPU   µs CPU/op") }, "\(output)")
        #expect((document["coldStartMilliseconds"]?.doubleValue ?? 0) > 0)
    }

    /// The custom-registration scenarios start the example SMS hook (built next to latch) and register through it.
    @Test("latch bench runs the custom-registration scenarios against the example SMS hook and prints Latch's overhead")
    func customRegistration() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let json = directory.path + "/bench.json"
        let names = ["custom-sms", "custom-hook-direct", "custom-sms@200", "custom-hook-direct@200"]
        let (status, output) = try await run(
            try latchExecutable().path,
            ["bench", "--duration", "1", "--connections", "2", "--scenarios", names.joined(separator: ","), "--json", json], timeout: 120)
        #expect(status == 0, "\(output)")
        #expect(!output.contains("did not stop"), "the server or a hook hung at shutdown:\n\(output)")
        #expect(!output.contains("first error:"), "\(output)")
        let lines = output.split(separator: "\n").map(String.init)
        for scenario in names {
            let row = try #require(lines.first { $0.hasPrefix(scenario + " ") }, "no row for \(scenario):\n\(output)")
            // rate, p50, p90, p99, errors: the first five numbers after the name.
            let numbers = row.dropFirst(scenario.count).split(separator: " ").prefix(5).compactMap { Double($0) }
            #expect(numbers.count == 5 && numbers[0] > 0 && numbers[4] == 0, "\(row)")
        }
        let overhead = lines.filter { $0.hasPrefix("custom registration (") }
        #expect(overhead.count == 2, "\(output)")
        for line in overhead {
            #expect(line.contains("steps/s") && line.contains("Latch's overhead p50 ") && line.contains(" ms, p99 "), "\(line)")
        }
        #expect(overhead.last?.contains("paced at 200 steps/s") == true, "\(output)")
        let document = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: json)))
        let scenarios = try #require(document["scenarios"]?.arrayValue)
        #expect(scenarios.compactMap { $0["scenario"]?.stringValue } == names)
        for scenario in scenarios {
            #expect((scenario["rate"]?.doubleValue ?? 0) > 0)
            #expect(scenario["errors"] == 0)
            #expect((scenario["p99"]?.doubleValue ?? -1) >= (scenario["p50"]?.doubleValue ?? 0))
        }
    }

    @Test("latch bench --writer-ceiling saturates the SQLite writer in process and reports units/s, writer CPU and bytes per unit, units per commit")
    func writerCeiling() async throws {
        let (status, output) = try await run(try latchExecutable().path, ["bench", "--writer-ceiling", "--duration", "1"], timeout: 120)
        #expect(status == 0, "\(output)")
        // "SQLite writer, saturated (…): N key sign-in units/s; writer thread N µs of CPU and N KiB written per unit; N units per commit"
        let line = try #require(output.split(separator: "\n").first { $0.hasPrefix("SQLite writer, saturated") }, "\(output)")
        func number(before marker: String) -> Double? {
            guard let end = line.range(of: marker)?.lowerBound else { return nil }
            return Double(line[..<end].split(separator: " ").last ?? "")
        }
        #expect((number(before: " key sign-in units/s") ?? 0) > 0, "\(line)")
        #expect((number(before: " µs of CPU") ?? 0) > 0, "\(line)")
        #expect((number(before: " KiB written") ?? 0) > 0, "\(line)")
        // Many tasks at once: the writer commits them in groups.
        #expect((number(before: " units per commit") ?? 0) > 1, "\(line)")
        #expect(!output.contains("cold start:"), "no server is started")
    }

    @Test("latch bench refuses durations over 30 s and unknown scenarios")
    func boundedArguments() async throws {
        let latch = try latchExecutable().path
        #expect(try await run(latch, ["bench", "--duration", "31"]).0 != 0)
        #expect(try await run(latch, ["bench", "--scenarios", "nope"]).0 != 0)
    }
}
