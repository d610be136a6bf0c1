import Foundation
@testable import LatchApp
import LatchCore
import LatchModel
import Logging
import Testing

@Suite("FIDO settings at start")
struct FidoSettingsLoadTests {
    /// The warnings `load` logs for `configuration`.
    static func warnings(_ configuration: LatchConfiguration) throws -> [String] {
        let lines = Locked<[String]>([])
        var logger = Logger(label: "latch.test", factory: { label in
            JSONLogHandler(label: label) { line in lines.withLock { $0.append(line) } }
        })
        logger.logLevel = .info
        _ = try FidoSettings.load(configuration, now: Date(), logger: logger)
        return lines.withLock { $0 }.filter { $0.contains(#""level":"warning""#) }
    }

    @Test("An issuer whose host is an IP address (IPv4, IPv6) gives a passkey relying party id browsers refuse: a warning at start; a host name none", arguments: [
        ("http://127.0.0.1:8080", true), ("https://[::1]:8443", true), ("https://10.0.0.7", true), ("https://id.example.com", false),
        ("http://localhost:8080", false), ("https://1.2.3.example", false),
    ])
    func ipAddressIssuer(issuer: String, warns: Bool) throws {
        var configuration = LatchConfiguration()
        configuration.issuer = issuer
        let warnings = try Self.warnings(configuration)
        #expect(warnings.contains { $0.contains("IP address") } == warns, "\(issuer): \(warnings)")
    }

    @Test("fido.rpId set to a host name silences the warning for an IP-address issuer")
    func configuredRPID() throws {
        var configuration = LatchConfiguration()
        configuration.issuer = "http://127.0.0.1:8080"
        configuration.fidoRPID = "id.example.com"
        #expect(try Self.warnings(configuration).isEmpty)
    }
}
