import Foundation
import Logging

/// Loggers for in-process deployments in tests: warnings and worse, so a whole test run prints what matters
/// (it printed about 2,000 info lines — migrations, keys, registrations — from in-process servers alone).
/// `LATCH_TEST_LOG_LEVEL` (`trace` … `critical`) turns them up when a failure needs the detail.
public enum TestLogger {
    public static let level: Logger.Level =
        ProcessInfo.processInfo.environment["LATCH_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning

    public static func make(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = level
        return logger
    }
}
