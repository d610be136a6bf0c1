import Foundation
import LatchModel
import LatchTesting
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The Dockerfile's runtime stage, built and run with Debian's podman and runc as CI runs it.
///
/// No registry serves images here, so the runtime base (the Dockerfile's `RUNTIME_BASE`, Debian bookworm slim) is
/// made with `debootstrap --variant=minbase bookworm` and `podman import` under that name, once (later runs reuse it),
/// and the Swift build stage — which needs the Swift toolchain image — is replaced by the binary built here
/// (`--build-arg BINARY_FROM=context`): the debug `latch`, with the Swift runtime libraries `ldd` finds for it in
/// the toolchain beside it in `dist/lib/`. runc, not crun; ulimits explicit (podman's default of 1048576 open files
/// exceeds some hosts' hard limit); `--format=docker`, as the OCI format has no HEALTHCHECK.
///
/// It checks that discovery answers through a published port, that nothing in the container runs as root, that the
/// image's health check (`latch health`) passes, that the admin token given as a podman secret works
/// (`LATCH_ADMIN_TOKEN_FILE`), that the data lands in the volume, owned by the image's user, and that `podman stop`
/// ends latch cleanly. Cold (debootstrap, apt-get in the build) it takes minutes; warm, the base
/// and the package layer are reused.
@Suite("Container image", .serialized)
struct ContainerImageTests {
    static let podman = "/usr/bin/podman"
    static let debootstrap = "/usr/sbin/debootstrap"
    /// The tag the test builds; the previous build under it is removed after a new one, and the layers below the
    /// binary stay cached for the next run.
    static let imageTag = "localhost/latch-image-test:latest"

    // Skipped where podman, runc or debootstrap is missing or the tests do not run as root (a developer's machine);
    // .ci/run installs them, and with LATCH_CI=1 the test runs and fails on the missing tool instead.
    @Test(
        "The runtime stage builds from the host's latch; discovery answers through a published port, nothing runs as root, the health check passes",
        .requires(.containerTools), .timeLimit(.minutes(20)))
    func runtimeImage() async throws {
        try await Peer.containerTools.require()
        let started = Date()
        let directory = TemporaryDirectory(prefix: "latch-image")
        defer { directory.remove() }
        let dockerfile = packageRoot.appendingPathComponent("Dockerfile").path

        // 1. The runtime base, under the name the Dockerfile uses.
        let base = try Self.runtimeBase(dockerfile: dockerfile)
        if try await Self.podman(["image", "exists", base], timeout: 60).status != 0 {
            try await Self.makeBase(base, in: directory.path)
        }
        let baseReady = Date()

        // 2. The build context: dist/latch and the toolchain's libraries it loads.
        let context = directory.path + "/context"
        try await Self.prepareContext(context)

        // 3. The runtime stage alone, from that binary.
        let ulimits = Self.ulimits
        let previous = try? await Self.podman(["image", "inspect", "--format", "{{.Id}}", Self.imageTag], timeout: 60)
        let imageIDFile = directory.path + "/image-id"
        let (built, buildOutput) = try await Self.podman(
            ["build", "--format=docker", "--target", "runtime", "--build-arg", "BINARY_FROM=context"] + ulimits
                + ["--iidfile", imageIDFile, "--file", dockerfile, "--tag", Self.imageTag, context],
            timeout: 900)
        try #require(built == 0, "podman build: \(buildOutput.suffix(4000))")
        let image = try String(contentsOfFile: imageIDFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            .replacingOccurrences(of: "sha256:", with: "")
        if let previous, previous.status == 0 {
            // The build this one replaces under the tag: removed, so that runs do not pile up images.
            let old = Self.lastLine(previous.output)
            if !old.isEmpty, old != image { _ = try? await Self.podman(["rmi", old], timeout: 120) }
        }
        // The binary stage's untagged image (the Dockerfile labels it): the next build makes its own.
        let (_, stages) = try await Self.podman(["images", "--quiet", "--filter", "dangling=true", "--filter", "label=latch.build-stage=binary"], timeout: 60)
        for stage in stages.split(separator: "\n").map(String.init) where stage.allSatisfy(\.isHexDigit) {
            _ = try? await Self.podman(["rmi", stage], timeout: 120)
        }
        let imageBuilt = Date()

        // The image's own settings: the user, the port, the volume, the health check.
        let (_, configuration) = try await Self.podman(
            ["image", "inspect", "--format", "{{.Config.User}}|{{json .Config.ExposedPorts}}|{{json .Config.Volumes}}|{{json .Config.Healthcheck.Test}}", image],
            timeout: 60)
        let fields = Self.lastLine(configuration).split(separator: "|").map(String.init)
        try #require(fields.count == 4, "podman image inspect: \(configuration)")
        #expect(fields[0] == "10001:10001")
        #expect(fields[1].contains("\"8080/tcp\""))
        #expect(fields[2].contains("\"/var/lib/latch\""))
        #expect(fields[3] == #"["CMD","latch","health","--timeout","5"]"#)

        // 4. Run it: the data in a volume, port 8080 published on loopback.
        let name = "latch-image-test-\(UUID().uuidString.prefix(8).lowercased())"
        let port = try freePort()
        let issuer = "http://127.0.0.1:\(port)"
        let adminToken = "container-admin-token-0123456789"
        let (created, volumeOutput) = try await Self.podman(["volume", "create", name], timeout: 60)
        try #require(created == 0, "podman volume create: \(volumeOutput)")
        // The admin token as a podman secret, a file in /run/secrets that LATCH_ADMIN_TOKEN_FILE names (docs/deploy.md).
        let tokenFile = directory.path + "/admin-token"
        try Data((adminToken + "\n").utf8).write(to: URL(fileURLWithPath: tokenFile))
        let (secret, secretOutput) = try await Self.podman(["secret", "create", name, tokenFile], timeout: 60)
        try #require(secret == 0, "podman secret create: \(secretOutput)")
        do {
            let (ran, runOutput) = try await Self.podman(
                ["run", "--detach", "--name", name] + ulimits + [
                    "--publish", "127.0.0.1:\(port):8080", "--volume", "\(name):/var/lib/latch", "--secret", name,
                    "--env", "LATCH_ISSUER=\(issuer)", "--env", "LATCH_ADMIN_TOKEN_FILE=/run/secrets/\(name)", image,
                ],
                timeout: 120)
            try #require(ran == 0, "podman run: \(runOutput)")
            try await Self.checkRunning(name: name, issuer: issuer, adminToken: adminToken)
            // 5. A clean stop: SIGTERM, a graceful shutdown, exit 0.
            let (stopped, stopOutput) = try await Self.podman(["stop", "--time", "30", name], timeout: 90)
            #expect(stopped == 0, "podman stop: \(stopOutput)")
            let (_, exitCode) = try await Self.podman(["inspect", "--format", "{{.State.ExitCode}}", name], timeout: 60)
            #expect(Self.lastLine(exitCode) == "0", "exit code \(exitCode)")
        } catch {
            let (_, logs) = (try? await Self.podman(["logs", name], timeout: 60)) ?? (0, "")
            Issue.record("container logs: \(logs.suffix(3000))")
            await Self.remove(name)
            throw error
        }
        await Self.remove(name)
        let finished = Date()
        print(
            "Container image: \(Int(finished.timeIntervalSince(started))) s in all — base \(Int(baseReady.timeIntervalSince(started))) s, "
                + "build \(Int(imageBuilt.timeIntervalSince(baseReady))) s, run and checks \(Int(finished.timeIntervalSince(imageBuilt))) s")
    }

    /// Discovery through the published port, no process as root, the health check, the data folder in the volume.
    static func checkRunning(name: String, issuer: String, adminToken: String) async throws {
        let deadline = Date().addingTimeInterval(90)
        var discovery: JSONValue?
        while Date() < deadline {
            if let (status, body) = try? await http("GET", issuer + "/.well-known/openid-configuration"), status == 200 {
                discovery = body
                break
            }
            let (_, state) = try await podman(["inspect", "--format", "{{.State.Status}}", name], timeout: 60)
            guard state.contains("running") else { throw ProcessFailure("the container stopped: \(state)") }
            try await Task.sleep(for: .milliseconds(250))
        }
        let document = try #require(discovery, "discovery did not answer through the published port within 90 s")
        #expect(document["issuer"]?.stringValue == issuer)
        #expect(document["jwks_uri"]?.stringValue == issuer + "/.well-known/jwks.json")
        let (jwksStatus, jwks) = try await http("GET", issuer + "/.well-known/jwks.json")
        #expect(jwksStatus == 200 && jwks["keys"]?.arrayValue?.isEmpty == false)
        let (adminStatus, _) = try await http("GET", issuer + "/admin/v1/tokens", bearer: adminToken)
        #expect(adminStatus == 200)

        // Nothing as root: every process of the container, as the host sees it and as the container names it.
        let (_, processes) = try await podman(["top", name, "huser", "user", "args"], timeout: 60)
        let rows = processes.split(separator: "\n").filter { !$0.contains("level=") }.dropFirst()
            .map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
        #expect(!rows.isEmpty, "\(processes)")
        for row in rows {
            #expect(row.count >= 3 && row[0] == "10001" && row[1] == "latch", "a process not run by latch (10001): \(row)")
        }
        #expect(rows.contains { $0.dropFirst(2).joined(separator: " ").hasPrefix("latch serve") }, "\(processes)")

        // The image's HEALTHCHECK (latch health), run now rather than at its interval.
        let (healthy, healthOutput) = try await podman(["healthcheck", "run", name], timeout: 60)
        #expect(healthy == 0, "podman healthcheck run: \(healthOutput)")
        let (_, health) = try await podman(["inspect", "--format", "{{.State.Health.Status}}", name], timeout: 60)
        #expect(lastLine(health) == "healthy", "\(health)")
        // ... and it can fail: nothing listens on port 9 in the container.
        let (unreachable, unreachableOutput) = try await podman(["exec", name, "latch", "health", "--url", "http://127.0.0.1:9"], timeout: 60)
        #expect(unreachable == 3, "\(unreachableOutput)")

        // The deployment is in the volume, the user's alone.
        let (_, files) = try await podman(
            ["exec", name, "stat", "-c", "%n %u %a", "/var/lib/latch", "/var/lib/latch/latch.sqlite", "/var/lib/latch/master.key"], timeout: 60)
        let modes = files.split(separator: "\n").filter { $0.hasPrefix("/var/lib/latch") }.map(String.init)
        #expect(modes == ["/var/lib/latch 10001 700", "/var/lib/latch/latch.sqlite 10001 600", "/var/lib/latch/master.key 10001 600"], "\(files)")
    }

    /// `ARG RUNTIME_BASE=…` in the Dockerfile: the name the imported base must have.
    static func runtimeBase(dockerfile: String) throws -> String {
        let text = try String(contentsOfFile: dockerfile, encoding: .utf8)
        let line = try #require(text.split(separator: "\n").first { $0.hasPrefix("ARG RUNTIME_BASE=") }, "the Dockerfile has no ARG RUNTIME_BASE=")
        return String(line.dropFirst("ARG RUNTIME_BASE=".count)).trimmingCharacters(in: .whitespaces)
    }

    /// Debian bookworm, minimal, from the Debian mirror, imported as `name`.
    static func makeBase(_ name: String, in directory: String) async throws {
        let rootfs = directory + "/rootfs"
        let (bootstrapped, output) = try await run(debootstrap, ["--variant=minbase", "bookworm", rootfs], timeout: 900)
        try #require(bootstrapped == 0, "debootstrap: \(output.suffix(3000))")
        let (imported, importOutput) = try await run(
            "/bin/sh", ["-c", #"tar -C "$1" -c . | "$2" import - "$3""#, "sh", rootfs, podman, name], timeout: 600)
        try #require(imported == 0, "podman import: \(importOutput.suffix(3000))")
        try? FileManager.default.removeItem(atPath: rootfs)
    }

    /// `context/dist/latch` (stripped: the debug symbols would triple the layer) and `context/dist/lib/`: the
    /// libraries `ldd` resolves outside the system's library folders, i.e. the Swift runtime from the toolchain.
    static func prepareContext(_ context: String) async throws {
        let files = FileManager.default
        try files.createDirectory(atPath: context + "/dist/lib", withIntermediateDirectories: true)
        let latch = try latchExecutable().path
        if files.isExecutableFile(atPath: "/usr/bin/strip") {
            let (stripped, output) = try await run("/usr/bin/strip", ["-o", context + "/dist/latch", latch], timeout: 300)
            try #require(stripped == 0, "strip: \(output)")
        } else {
            try files.copyItem(atPath: latch, toPath: context + "/dist/latch")
        }
        let (listed, libraries) = try await run("/usr/bin/ldd", [latch], timeout: 60)
        try #require(listed == 0, "ldd: \(libraries)")
        let system = ["/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/"]
        var copied = 0
        for line in libraries.split(separator: "\n") {
            let parts = line.split(separator: " ", omittingEmptySubsequences: true)
            guard parts.count >= 3, parts[1] == "=>", parts[2].hasPrefix("/"), !system.contains(where: { parts[2].hasPrefix($0) }) else { continue }
            let path = String(parts[2])
            try files.copyItem(atPath: path, toPath: context + "/dist/lib/" + (path as NSString).lastPathComponent)
            copied += 1
        }
        #expect(!libraries.contains("not found"), "ldd: \(libraries)")
        // A toolchain-linked debug build loads the Swift runtime from the toolchain; a --static-swift-stdlib build does not.
        #expect(copied > 0 || !libraries.contains("libswiftCore"), "\(libraries)")
    }

    /// `--ulimit` values the host allows: podman's default open-file limit (1048576) is above some hosts' hard limit.
    static var ulimits: [String] {
        var files = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &files)
        let nofile = min(UInt64(files.rlim_max), 65536)
        var processes = rlimit()
        getrlimit(Int32(__RLIMIT_NPROC.rawValue), &processes)  // RLIMIT_NPROC, a macro Swift does not import
        let nproc = min(UInt64(processes.rlim_max), 4096)
        return ["--ulimit", "nofile=\(nofile):\(nofile)", "--ulimit", "nproc=\(nproc):\(nproc)"]
    }

    /// The last line of a command's output: podman's answer, after any warnings it logs on stderr (without systemd
    /// it logs that it cannot schedule the health check's timer).
    static func lastLine(_ output: String) -> String {
        output.split(separator: "\n").last.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
    }

    /// podman with runc as its runtime, bounded in time.
    static func podman(_ arguments: [String], timeout: Double) async throws -> (status: Int32, output: String) {
        try await run(podman, ["--runtime", "runc"] + arguments, timeout: timeout)
    }

    /// Removes the container, its volume and its secret (bounded; a failure is reported, not thrown).
    static func remove(_ name: String) async {
        let removed = try? await podman(["rm", "--force", "--time", "10", name], timeout: 60)
        if removed?.status != 0 { Issue.record("podman rm \(name): \(removed?.output ?? "timed out")") }
        let volume = try? await podman(["volume", "rm", "--force", name], timeout: 60)
        if volume?.status != 0 { Issue.record("podman volume rm \(name): \(volume?.output ?? "timed out")") }
        let secret = try? await podman(["secret", "rm", name], timeout: 60)
        if secret?.status != 0 { Issue.record("podman secret rm \(name): \(secret?.output ?? "timed out")") }
    }
}
