import Foundation
import LatchApp
import LatchModel
import Logging
import Testing

@Suite("JSON logs")
struct JSONLogHandlerTests {
    final class Lines: Sendable {
        let lines = Locked<[String]>([])
    }

    @Test("One JSON object per line: time, level, label, message, source and metadata (nested too); quotes and line breaks stay inside the string; below the level nothing is written")
    func format() throws {
        let captured = Lines()
        var handler = JSONLogHandler(label: "latch.test") { line in captured.lines.withLock { $0.append(line) } }
        handler.logLevel = .info
        handler[metadataKey: "replica"] = "a"
        var logger = Logger(label: "latch.test", factory: { _ in handler })
        logger.logLevel = .info
        logger.info("signed \"in\"\nforged line", metadata: ["hb.request.id": "r-1", "user": "u-1", "pairs": ["x", "y"], "nested": ["k": "v"]])
        logger.debug("not written")
        let lines = captured.lines.withLock { $0 }
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        #expect(line.hasSuffix("\n") && line.filter { $0 == "\n" }.count == 1)
        guard case .object(let object) = try JSONValue.parse(Data(line.utf8)) else { Issue.record("not an object: \(line)"); return }
        #expect(object["level"] == .string("info") && object["label"] == .string("latch.test"))
        #expect(object["message"] == .string("signed \"in\"\nforged line"))
        #expect(object["hb.request.id"] == .string("r-1") && object["replica"] == .string("a") && object["user"] == .string("u-1"))
        #expect(object["pairs"] == .array([.string("x"), .string("y")]))
        #expect(object["nested"] == .object(["k": .string("v")]))
        let time = try #require(object["time"]?.stringValue)
        #expect(time.count == 24 && time.hasSuffix("Z") && time.contains("T"), "\(time)")
    }

    @Test("log.format is text or json")
    func configuration() async throws {
        let json = try await LatchConfiguration.load(overrides: [:], environment: ["LATCH_LOG_FORMAT": "json"], configFile: nil)
        #expect(json.logFormat == .json)
        await #expect(throws: (any Error).self) {
            _ = try await LatchConfiguration.load(overrides: [:], environment: ["LATCH_LOG_FORMAT": "xml"], configFile: nil)
        }
    }
}
