import Foundation
import LatchApp
import LatchModel
import Logging
import Testing

@Suite("Text logs")
struct TextLogHandlerTests {
    /// Counts how often its text is made.
    final class Counted: CustomStringConvertible, Sendable {
        let made = Locked(0)
        var description: String {
            made.withLock { $0 += 1 }
            return "r-7"
        }
    }

    @Test("StreamLogHandler's line form: time, level, label, sorted metadata, [source], message; the error as error.message and error.type")
    func format() throws {
        let captured = JSONLogHandlerTests.Lines()
        var handler = TextLogHandler(label: "latch.test", metadataProvider: nil) { line in captured.lines.withLock { $0.append(line) } }
        handler[metadataKey: "replica"] = "a"
        let logger = Logger(label: "latch.test", factory: { _ in handler })
        logger.info("signed in", metadata: ["user": "u-1", "hb.request.id": "r-1"])
        logger.debug("not written")
        struct Refusal: Error {}
        logger.warning("refused", error: Refusal())
        let lines = captured.lines.withLock { $0 }
        #expect(lines.count == 2)
        let first = try #require(lines.first)
        let pattern = #/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}[+-]\d{4} info latch\.test: hb\.request\.id=r-1 replica=a user=u-1 \[LatchAppTests\] signed in\n$/#
        #expect(first.wholeMatch(of: pattern) != nil, "\(first)")
        #expect(lines.last?.contains(" warning latch.test: error.message=Refusal() error.type=LatchAppTests.TextLogHandlerTests.") == true, "\(lines)")
        // No metadata: no blank before the source.
        let bare = TextLogHandler(label: "bare", metadataProvider: nil) { line in captured.lines.withLock { $0.append(line) } }
        Logger(label: "bare", factory: { _ in bare }).error("x")
        #expect(captured.lines.withLock { $0.last }?.hasSuffix(" error bare: [LatchAppTests] x\n") == true)
    }

    @Test("Metadata is rendered when a line is written, not when it is attached (every request attaches a request id)")
    func lazyMetadata() {
        let captured = JSONLogHandlerTests.Lines()
        let handler = TextLogHandler(label: "latch.test", metadataProvider: nil) { line in captured.lines.withLock { $0.append(line) } }
        let requestID = Counted()
        var logger = Logger(label: "latch.test", factory: { _ in handler })
        logger[metadataKey: "hb.request.id"] = .stringConvertible(requestID)
        logger.debug("below the level")
        #expect(requestID.made.withLock { $0 } == 0)
        logger.info("written")
        #expect(requestID.made.withLock { $0 } == 1)
        #expect(captured.lines.withLock { $0.last }?.contains("hb.request.id=r-7 ") == true)
    }
}
