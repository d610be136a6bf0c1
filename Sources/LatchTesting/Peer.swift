import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A real program or Python package some tests drive as the other side of a protocol (an upstream OpenID provider
/// on Authlib, a headless Chromium, a third-party validator), looked up once per test run.
///
/// A test that needs one takes the ``Testing/Trait/requires(_:)`` trait: where the peer is missing it is reported
/// *skipped*, with the install command as the reason, never passed. CI sets `LATCH_CI=1`, which runs the test anyway,
/// so a missing peer fails it there (``require(sourceLocation:)`` says which) instead of skipping it.
public struct Peer: Sendable {
    /// What the tests need, in words.
    public let name: String
    /// How to install it (Debian and pip).
    public let install: String
    private let probe: Task<Bool, Never>

    /// A peer found by `probe`, which runs at most once per process.
    public init(name: String, install: String, probe: @escaping @Sendable () async -> Bool) {
        self.name = name
        self.install = install
        self.probe = Task { await probe() }
    }

    /// Whether the peer is installed here.
    public var available: Bool { get async { await probe.value } }

    /// Whether CI requires every peer test to run (`LATCH_CI=1`): there a missing peer fails a test instead of skipping it.
    public static var requiredByCI: Bool { ProcessInfo.processInfo.environment["LATCH_CI"] == "1" }

    /// Whether a test that needs the peer runs: the peer is installed, or CI requires it.
    public var runnable: Bool { get async { await available || Self.requiredByCI } }

    /// Why a test that needs the peer is skipped.
    public var reason: Comment { Comment(rawValue: "\(name) not installed (\(install)); CI (LATCH_CI=1) runs this test and fails it instead") }

    /// For a *part* of a running test that needs the peer (a check beside others): true where the peer is installed.
    /// Where it is missing, the part is left out and the test gets a warning saying so (``partNotRun(_:because:)``).
    public func runsPart(_ part: String, sourceLocation: SourceLocation = #_sourceLocation) async -> Bool {
        if await available { return true }
        partNotRun(part, because: "\(name) is not installed (\(install))", sourceLocation: sourceLocation)
        return false
    }

    /// Fails the running test when the peer is missing: reached only where CI requires every peer.
    public func require(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try #require(await available, Comment(rawValue: "CI must run this: \(install)"), sourceLocation: sourceLocation)
    }
}

/// Records that `part` of the running test was left out, and why: a warning, which the run's summary shows (the test
/// "passed with 1 warning", never silently green); under `LATCH_CI=1` an error, as CI runs every part.
public func partNotRun(_ part: String, because reason: String, sourceLocation: SourceLocation = #_sourceLocation) {
    Issue.record(
        Comment(rawValue: "not run: \(part) — \(reason)"), severity: Peer.requiredByCI ? .error : .warning, sourceLocation: sourceLocation)
}

extension Trait where Self == ConditionTrait {
    /// Runs the test where `peer` is installed, and always under `LATCH_CI=1`; elsewhere reports it skipped, saying
    /// how to install the peer.
    public static func requires(_ peer: Peer, sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(peer.reason, sourceLocation: sourceLocation) { await peer.runnable }
    }
}

// MARK: - The peers

extension Peer {
    /// Authlib and Flask: the upstream OpenID provider of the federation tests (``UpstreamProviderProcess``).
    public static let upstreamProvider = Peer(
        name: "Authlib and Flask (the upstream OpenID provider)", install: "python3 -m pip install authlib flask",
        probe: { await pythonImports("authlib, flask") })

    /// Authlib with RP-Initiated Logout and RFC 9207: a third-party relying party's reading of the discovery metadata.
    public static let authlib = Peer(
        name: "Authlib (with authlib.oidc.rpinitiated and authlib.oauth2.rfc9207)", install: "python3 -m pip install --upgrade authlib",
        probe: { await pythonImports("authlib.oidc.discovery, authlib.oidc.rpinitiated, authlib.oauth2.rfc8414, authlib.oauth2.rfc9207") })

    /// joserfc: DPoP proofs made by another JOSE library.
    public static let joserfc = Peer(name: "joserfc", install: "python3 -m pip install joserfc", probe: { await pythonImports("joserfc") })

    /// jsonschema (draft 2020-12): checks recorded answers against their schemas in docs/openapi.json
    /// (scripts/check_answers.py).
    public static let jsonschema = Peer(
        name: "jsonschema", install: "python3 -m pip install jsonschema", probe: { await pythonImports("jsonschema") })

    /// Yubico's python-fido2: credentials made by another FIDO library, registered and used over HTTP.
    public static let fido2 = Peer(name: "python-fido2", install: "python3 -m pip install fido2", probe: { await pythonImports("fido2") })

    /// openapi-spec-validator: checks docs/openapi.json against the OpenAPI 3.1 schema.
    public static let openAPISpecValidator = Peer(
        name: "openapi-spec-validator", install: "python3 -m pip install openapi-spec-validator",
        probe: { await pythonImports("openapi_spec_validator") })

    /// Headless Chromium driven by Selenium, with the upstream provider: the browser sign-in walkthrough.
    public static let browser = Peer(
        name: "Chromium, chromedriver, Selenium, Authlib and Flask",
        install: "apt-get install chromium chromium-driver; python3 -m pip install selenium authlib flask",
        probe: { executables(["/usr/bin/chromium", "/usr/bin/chromedriver"]) ? await pythonImports("selenium, authlib, flask") : false })

    /// Headless Chromium driven by Selenium, and zbarimg for the console's QR codes: the console walkthrough.
    public static let consoleBrowser = Peer(
        name: "Chromium, chromedriver, zbarimg and Selenium",
        install: "apt-get install chromium chromium-driver zbar-tools; python3 -m pip install selenium",
        probe: { executables(["/usr/bin/chromium", "/usr/bin/chromedriver", "/usr/bin/zbarimg"]) ? await pythonImports("selenium") : false })

    /// podman, runc and debootstrap, run as root (debootstrap, and podman's rootful storage and networking): the
    /// container image build.
    public static let containerTools = Peer(
        name: "podman, runc and debootstrap as root", install: "apt-get install -y podman runc debootstrap, and run the tests as root",
        probe: {
            executables(["/usr/bin/podman", "/usr/sbin/debootstrap"])
                && ["/usr/sbin/runc", "/usr/bin/runc"].contains { FileManager.default.isExecutableFile(atPath: $0) } && getuid() == 0
        })

    /// Whether `python3` (on PATH) imports `modules` (a comma-separated list).
    ///
    /// Its output goes nowhere, not to a temporary file: a probe starts with the first use of its peer and a test
    /// process that ends before the probe does (a filtered run) would leave that file behind.
    static func pythonImports(_ modules: String) async -> Bool {
        guard
            let child = try? ChildProcess(
                executable: "/usr/bin/env", arguments: ["python3", "-c", "import \(modules)"],
                environment: ProcessInfo.processInfo.environment, outputPath: "/dev/null")
        else { return false }
        guard let status = await child.waitForExit(timeout: 60) else {
            child.signal(SIGKILL)
            return false
        }
        return status == 0
    }

    static func executables(_ paths: [String]) -> Bool {
        paths.allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
