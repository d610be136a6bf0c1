import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The real upstream OpenID provider of the federation tests (`Tests/Peers/upstream_oidc_provider.py`, Authlib on
/// Flask) as a child process on 127.0.0.1: the customer's identity provider Latch signs users in through.
public final class UpstreamProviderProcess: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public let process: ChildProcess
    public let port: Int
    public let output: String
    /// `http://127.0.0.1:<port>` (no trailing slash).
    public var issuer: String { "http://127.0.0.1:\(port)" }

    /// Starts the provider for one client; waits (≤ 120 s) for its `listening on port N` line.
    public init(
        clientID: String, clientSecret: String, redirectURIs: [String], users: [String] = ["alice:password:alice@example.com:Alice Liddell"],
        algorithm: String = "RS256", clientJWKSURI: String? = nil, output: String
    ) async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        var arguments = [
            "python3", root.appendingPathComponent("Tests/Peers/upstream_oidc_provider.py").path, "--port", "0", "--issuer-host", "127.0.0.1",
            "--client-id", clientID, "--client-secret", clientSecret, "--alg", algorithm,
        ]
        for uri in redirectURIs { arguments += ["--redirect-uri", uri] }
        for user in users { arguments += ["--user", user] }
        if let clientJWKSURI { arguments += ["--client-jwks-uri", clientJWKSURI] }
        self.output = output
        let child = try ChildProcess(
            executable: "/usr/bin/env", arguments: arguments, environment: ["PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"],
            outputPath: output)
        let deadline = Date().addingTimeInterval(120)
        var port: Int?
        while Date() < deadline, port == nil {
            let log = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            for line in log.split(separator: "\n") where line.hasPrefix("listening on port ") {
                port = Int(line.dropFirst("listening on port ".count))
            }
            if port == nil {
                guard child.isRunning else { throw Failure(description: "the upstream provider exited: \(log.prefix(3000))") }
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        guard let port else { throw Failure(description: "the upstream provider did not start within 120 s") }
        self.port = port
        process = child
    }

    /// SIGTERM, then (bounded) SIGKILL.
    public func stop() async {
        process.signal(SIGTERM)
        if await process.waitForExit(timeout: 15) != nil { return }
        process.signal(SIGKILL)
        _ = await process.waitForExit(timeout: 5)
    }
}
