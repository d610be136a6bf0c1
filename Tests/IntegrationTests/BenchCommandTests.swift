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
        let (status, output) = try await run(
            try latchExecutable().path,
            ["bench", "--duration", "1", "--connections", "2", "--scenarios", "jwks,refresh,key-sign-in,oob-status", "--json", json], timeout: 120)
        #expect(status == 0, "\(output)")
        #expect(output.contains("cold start:"))
        #expect(!output.contains("did not stop"), "the server hung at shutdown:\n\(output)")
        #expect(output.contains("QR codes, one thread:"))
        for scenario in ["jwks", "refresh", "key-sign-in", "oob-status"] {
            let row = output.split(separator: "\n").first { $0.hasPrefix(scenario + " ") }
            #expect(row != nil, "no row for \(scenario):\n\(output)")
        }
        let document = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: json)))
        let scenarios = try #require(document["scenarios"]?.arrayValue)
        #expect(scenarios.compactMap { $0["scenario"]?.stringValue } == ["jwks", "refresh", "key-sign-in", "oob-status"])
        for scenario in scenarios {
            #expect((scenario["rate"]?.doubleValue ?? 0) > 0)
            #expect(scenario["errors"] == 0)
            #expect((scenario["p99"]?.doubleValue ?? -1) >= (scenario["p50"]?.doubleValue ?? 0))
        }
        #expect((document["coldStartMilliseconds"]?.doubleValue ?? 0) > 0)
    }

    @Test("latch bench refuses durations over 30 s and unknown scenarios")
    func boundedArguments() async throws {
        let latch = try latchExecutable().path
        #expect(try await run(latch, ["bench", "--duration", "31"]).0 != 0)
        #expect(try await run(latch, ["bench", "--scenarios", "nope"]).0 != 0)
    }
}
