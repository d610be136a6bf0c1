import Foundation
import LatchJOSE
import LatchModel
import LatchTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Minimal HTTP for the live tests.
func http(_ method: String, _ url: String, form: [String: String]? = nil, bearer: String? = nil, headers: [String: String] = [:]) async throws
    -> (Int, JSONValue)
{
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = method
    if let bearer { request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization") }
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    if let form {
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        request.httpBody = Data(form.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&").utf8)
    }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as! HTTPURLResponse).statusCode, (try? JSONValue.parse(data)) ?? .null)
}

@Suite("Live server", .serialized)
struct LiveServerTests {
    static let adminToken = "live-test-admin-token-0123456789"

    @Test("The README walkthrough runs against `latch serve`; after kill -9 nothing acknowledged is lost")
    func walkthroughAndCrash() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.path + "/data"
        let work = directory.path + "/work"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let port = try freePort()
        let first = try LatchServer(dataDirectory: data, port: port, environment: ["LATCH_ADMIN_TOKEN": Self.adminToken])
        try await first.waitUntilListening()

        // 1. The walkthrough, exactly as the README gives it.
        let (status, output) = try await run(
            "/bin/bash", [packageRoot.appendingPathComponent("scripts/walkthrough.sh").path],
            environment: ["LATCH": first.base, "LATCH_ADMIN_TOKEN": Self.adminToken, "WORK": work])
        #expect(status == 0, "walkthrough failed:\n\(output)\nserver log:\n\(first.log)")
        #expect(output.contains("\"library\""), "the third-party verification did not run:\n\(output)")
        #expect(output.contains("after sign-out, userinfo answers 401"))

        // 2. Acknowledged state to check after the crash: a rotated family, live at its second token.
        let issuerKey = try PrivateKey(pem: try String(contentsOfFile: work + "/issuer.pem", encoding: .utf8))
        let assertion = try Assertions.federated(issuer: "acme", keyID: "acme-1", subject: "alice", now: Int64(Date().timeIntervalSince1970)).sign(with: issuerKey)
        let (signInStatus, signedIn) = try await http("POST", first.base + "/oauth2/token", form: ["grant_type": GrantType.jwtBearer, "assertion": assertion])
        #expect(signInStatus == 200)
        let refresh1 = try #require(signedIn["refresh_token"]?.stringValue)
        let (_, rotated) = try await http("POST", first.base + "/oauth2/token", form: ["grant_type": "refresh_token", "refresh_token": refresh1])
        let refresh2 = try #require(rotated["refresh_token"]?.stringValue)
        let jwksBefore = try await http("GET", first.base + "/.well-known/jwks.json").1

        // 3. Crash.
        await first.kill9()
        let second = try LatchServer(dataDirectory: data, port: port, environment: ["LATCH_ADMIN_TOKEN": Self.adminToken])
        try await second.waitUntilListening()
        let userID = try String(contentsOfFile: work + "/user_id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)

        // Users survive.
        #expect(try await http("GET", second.base + "/admin/v1/users/\(userID)", bearer: Self.adminToken).0 == 200)
        // Signing keys survive: same JWKS, and the old ID token verifies with the third-party library.
        #expect(try await http("GET", second.base + "/.well-known/jwks.json").1 == jwksBefore)
        let idToken = try String(contentsOfFile: work + "/id_token", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let verify = try await run("/usr/bin/env", ["python3", packageRoot.appendingPathComponent("scripts/verify_token.py").path, second.base, idToken, "default"])
        #expect(verify.0 == 0, "\(verify.1)")
        // Consumed jtis survive: the walkthrough's sign-in JWT cannot be replayed.
        let used = try String(contentsOfFile: work + "/sign-in.jwt", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let replay = try await http("POST", second.base + "/oauth2/token", form: ["grant_type": GrantType.jwtBearer, "assertion": used])
        #expect(replay.0 == 400 && replay.1["error"] == "invalid_grant")
        // Revocations survive: the signed-out refresh token stays dead.
        let revoked = try String(contentsOfFile: work + "/refresh_2", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await http("POST", second.base + "/oauth2/token", form: ["grant_type": "refresh_token", "refresh_token": revoked]).1["error"] == "invalid_grant")
        // Rotations survive: the live token works, and the rotated one counts as reuse.
        let (liveStatus, live) = try await http("POST", second.base + "/oauth2/token", form: ["grant_type": "refresh_token", "refresh_token": refresh2])
        #expect(liveStatus == 200)
        let reuse = try await http("POST", second.base + "/oauth2/token", form: ["grant_type": "refresh_token", "refresh_token": refresh1])
        #expect(reuse.1["error"] == "invalid_grant")
        #expect(try await http("GET", second.base + "/oauth2/userinfo", bearer: live["access_token"]?.stringValue).0 == 401)

        // 4. SIGTERM shuts down gracefully with status 0.
        #expect(try await second.terminate() == 0, "\(second.log)")
    }

    @Test("At trace level, a full flow logs no secret: admin token, key-encryption key, JWTs, access, refresh and ID tokens")
    func noSecretInTraceLog() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let work = directory.path + "/work"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let keyBytes = (0..<32).map { UInt8(200 + $0 % 50) }
        let keyEncryptionKey = Data(keyBytes).base64EncodedString()
        let server = try LatchServer(
            dataDirectory: directory.path + "/data", port: try freePort(),
            environment: ["LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH_KEYS_ENCRYPTION_KEY": keyEncryptionKey, "LATCH_LOG_LEVEL": "trace"])
        try await server.waitUntilListening()
        let (status, output) = try await run(
            "/bin/bash", [packageRoot.appendingPathComponent("scripts/walkthrough.sh").path],
            environment: ["LATCH": server.base, "LATCH_ADMIN_TOKEN": Self.adminToken, "WORK": work])
        #expect(status == 0, "walkthrough failed:\n\(output)\nserver log:\n\(server.log)")
        // Refused requests carry secrets too: a replayed refresh token, a wrong admin token, a replayed JWT.
        let token = { (name: String) in try String(contentsOfFile: work + "/" + name, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) }
        _ = try await http("POST", server.base + "/oauth2/token", form: ["grant_type": "refresh_token", "refresh_token": try token("refresh_1")])
        _ = try await http("POST", server.base + "/oauth2/token", form: ["grant_type": GrantType.jwtBearer, "assertion": try token("sign-in.jwt")])
        _ = try await http("GET", server.base + "/admin/v1/users", bearer: "wrong-admin-token-with-a-secret-1")
        #expect(try await server.terminate() == 0)
        let log = server.log
        #expect(log.contains("trace") || log.contains("debug"), "the server did not log at trace level:\n\(log)")
        var secrets = [
            "admin token": Self.adminToken, "wrong admin token": "wrong-admin-token-with-a-secret-1",
            "key-encryption key (base64)": keyEncryptionKey, "key-encryption key (bytes)": keyBytes[0..<8].map(String.init).joined(separator: ", "),
            "key-encryption key (hex)": keyBytes[0..<8].map { String($0, radix: 16) }.joined(),
        ]
        for name in ["registration.jwt", "sign-in.jwt", "refresh_1", "refresh_2", "access_token", "id_token"] {
            let value = try token(name)
            // The signature part of a JWT, or the secret part of an opaque token: no prefix of it may appear.
            secrets[name] = String(value.split(separator: ".").last.map(String.init)?.suffix(24) ?? "")
        }
        for (name, secret) in secrets {
            #expect(!secret.isEmpty && !log.contains(secret), "the log shows the \(name)")
        }
    }

    @Test("The README's device walkthrough (latch device on the SDK) runs against `latch serve`")
    func deviceWalkthrough() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let server = try LatchServer(dataDirectory: directory.path + "/data", port: try freePort(), environment: ["LATCH_ADMIN_TOKEN": Self.adminToken])
        try await server.waitUntilListening()
        let (status, output) = try await run(
            "/bin/bash", [packageRoot.appendingPathComponent("scripts/device-walkthrough.sh").path],
            environment: ["LATCH_SERVER": server.base, "LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH": try latchExecutable().path, "WORK": directory.path])
        #expect(status == 0, "device walkthrough failed:\n\(output)\nserver log:\n\(server.log)")
        #expect(output.contains("phone B's next refresh exits 5"))
        #expect(output.contains("after de-registration, sign-in exits 4"))
        _ = try await server.terminate()
    }

    @Test("The FIDO walkthrough: a PIN authenticator through latch device fido locks after five wrong PINs, an admin unlocks it; python-fido2 credentials over HTTP")
    func fidoWalkthrough() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let server = try LatchServer(
            dataDirectory: directory.path + "/data", port: try freePort(),
            environment: ["LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH_FIDO_PIN_COOL_DOWNS": "0", "LATCH_RATE_LIMIT_PER_MINUTE": "0"])
        try await server.waitUntilListening()
        let fido2 = await Peer.fido2.runsPart("step 7, python-fido2's credentials over HTTP")
        let (status, output) = try await run(
            "/bin/bash", [packageRoot.appendingPathComponent("scripts/fido-walkthrough.sh").path],
            environment: ["LATCH_SERVER": server.base, "LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH": try latchExecutable().path, "WORK": directory.path])
        #expect(status == 0, "fido walkthrough failed:\n\(output)\nserver log:\n\(server.log)")
        #expect(output.contains("the PIN authenticator is locked at the server"))
        #expect(output.contains("fido walkthrough done"))
        #expect(output.contains("signed up walker-new"))
        if fido2 { #expect(output.contains("ok: the new user signs in with the passkey") && !output.contains("skipped"), "\(output)") }
        _ = try await server.terminate()
    }

    @Test("The out-of-band walkthrough: a QR code read by zbarimg enrols a phone; approval, denial, device linking through latch device")
    func outOfBandWalkthrough() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let server = try LatchServer(
            dataDirectory: directory.path + "/data", port: try freePort(), environment: ["LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH_RATE_LIMIT_PER_MINUTE": "0"])
        try await server.waitUntilListening()
        let (status, output) = try await run(
            "/bin/bash", [packageRoot.appendingPathComponent("scripts/oob-walkthrough.sh").path],
            environment: ["LATCH_SERVER": server.base, "LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH": try latchExecutable().path, "WORK": directory.path])
        #expect(status == 0, "oob walkthrough failed:\n\(output)\nserver log:\n\(server.log)")
        #expect(output.contains("enrolled ") && output.contains("approved") && output.contains("denied"))
        #expect(output.contains("oob walkthrough done"))
        _ = try await server.terminate()
    }

    @Test("The issuer-login walkthrough: openssl-minted tokens of two issuers log in one session, introspection, add, logout-all")
    func issuerLoginWalkthrough() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let server = try LatchServer(dataDirectory: directory.path + "/data", port: try freePort(), environment: ["LATCH_ADMIN_TOKEN": Self.adminToken])
        try await server.waitUntilListening()
        let (status, output) = try await run(
            "/bin/bash", [packageRoot.appendingPathComponent("scripts/issuer-login-walkthrough.sh").path],
            environment: ["LATCH_SERVER": server.base, "LATCH_ADMIN_TOKEN": Self.adminToken, "WORK": directory.path])
        #expect(status == 0, "issuer-login walkthrough failed:\n\(output)\nserver log:\n\(server.log)")
        #expect(output.contains("\"consumers\""), "the ID token's consumers claim was not shown:\n\(output)")
        #expect(output.contains("after logout-all, /v1/me with access_token answers 401"))
        #expect(output.split(separator: "\n").last == "issuer-login walkthrough done", "\(output)")
        _ = try await server.terminate()
    }

    @Test("The custom-registration walkthrough: the example hooks (invitation code, SMS code) decide registrations through latch device")
    func customRegistrationWalkthrough() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        // The example hooks listen on loopback, which Latch refuses to call unless told otherwise.
        let server = try LatchServer(
            dataDirectory: directory.path + "/data", port: try freePort(),
            environment: ["LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH_HOOKS_ALLOW_PRIVATE_ADDRESSES": "true"])
        try await server.waitUntilListening()
        let latch = try latchExecutable()
        let (status, output) = try await run(
            "/bin/bash", [packageRoot.appendingPathComponent("scripts/custom-registration-walkthrough.sh").path],
            environment: [
                "LATCH_SERVER": server.base, "LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH": latch.path, "WORK": directory.path,
                "HOOKS": latch.deletingLastPathComponent().path,
            ])
        #expect(status == 0, "custom-registration walkthrough failed:\n\(output)\nserver log:\n\(server.log)")
        #expect(output.contains("registered alice (user id "))
        #expect(output.contains("registered +4930123456 (user id "))
        #expect(output.contains("sms: open 0, completed 1, cancelled 1, failed 1"))
        #expect(output.split(separator: "\n").last == "custom-registration walkthrough done", "\(output)")
        _ = try await server.terminate()
    }

    @Test("The README's attestation walkthrough: simulated App Attest, Android key and Play Integrity devices register and sign in")
    func attestationWalkthrough() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let latch = try latchExecutable().path
        let root = directory.path + "/test-root"
        let created = try await run(latch, ["admin", "attestation", "test-root", "create", "--out", root])
        #expect(created.0 == 0, "\(created.1)")
        // The private key and the Play Integrity keys are written for the owner only.
        let mode = try FileManager.default.attributesOfItem(atPath: root + "/root.key")[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(try await run(latch, ["admin", "attestation", "test-root", "create", "--out", root]).0 == 2, "an existing root is not overwritten")
        let server = try LatchServer(
            dataDirectory: directory.path + "/data", port: try freePort(),
            environment: ["LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH_ATTESTATION_TEST_ROOT": root + "/root.pem"])
        try await server.waitUntilListening()
        let (status, output) = try await run(
            "/bin/bash", [packageRoot.appendingPathComponent("scripts/attestation-walkthrough.sh").path],
            environment: [
                "LATCH_SERVER": server.base, "LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH": latch, "WORK": directory.path, "TEST_ROOT": root,
            ])
        #expect(status == 0, "attestation walkthrough failed:\n\(output)\nserver log:\n\(server.log)")
        #expect(output.contains("an unknown App ID exits 1"))
        #expect(server.log.contains("attestation.testRoot is trusted"))
        _ = try await server.terminate()
    }

    @Test("The README shows the compiled app example verbatim")
    func readmeSnippetIsCompiled() throws {
        let readme = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let example = try String(contentsOf: packageRoot.appendingPathComponent("Examples/AppExample/main.swift"), encoding: .utf8)
        #expect(readme.contains("```swift\n" + example + "```"))
    }

    @Test("Metrics: GET /metrics needs an admin token on the main port; metrics.port serves it without one, on loopback; log.format=json writes one JSON object per line")
    func metricsPortAndJSONLogs() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let metricsPort = try freePort()
        let server = try LatchServer(
            dataDirectory: directory.path + "/data", port: try freePort(),
            environment: ["LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH_METRICS_PORT": String(metricsPort), "LATCH_LOG_FORMAT": "json", "LATCH_LOG_LEVEL": "info"])
        try await server.waitUntilListening()
        _ = try await http("GET", server.base + "/.well-known/openid-configuration")
        let (unauthorized, _) = try await http("GET", server.base + "/metrics")
        #expect(unauthorized == 401)
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(metricsPort)/metrics")!)
        request.httpMethod = "GET"
        var text = ""
        for _ in 0..<100 {
            if let (data, response) = try? await URLSession.shared.data(for: request), (response as? HTTPURLResponse)?.statusCode == 200 {
                text = String(decoding: data, as: UTF8.self)
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(text.contains(#"latch_http_requests_total{route="/.well-known/openid-configuration",method="GET",status="200"} 1"#), "\(text.prefix(2000))")
        #expect(text.contains("process_resident_memory_bytes"))
        _ = try await server.terminate()
        // Every log line the server wrote is a JSON object (the start line for scripts goes to standard output).
        let lines = server.log.split(separator: "\n").filter { $0.hasPrefix("{") }
        #expect(lines.count >= 2, "\(server.log.prefix(2000))")
        for line in lines { #expect((try? JSONValue.parse(Data(line.utf8)))?.objectValue?["level"] != nil, "\(line)") }
    }

    @Test("The CLI admin commands work against a live server, with stable exit codes")
    func adminCLI() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let port = try freePort()
        let server = try LatchServer(dataDirectory: directory.path + "/data", port: port, environment: ["LATCH_ADMIN_TOKEN": Self.adminToken])
        try await server.waitUntilListening()
        let latch = try latchExecutable().path
        let environment = ["LATCH_SERVER": server.base, "LATCH_ADMIN_TOKEN": Self.adminToken]
        let keyFile = directory.path + "/test.pem"
        let created = try await run(latch, ["admin", "test-keys", "create", "--key-id", "register_key", "--out", keyFile], environment: environment)
        #expect(created.0 == 0 && created.1.contains("register_key"), "\(created.1)")
        let attributes = try FileManager.default.attributesOfItem(atPath: keyFile)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try PrivateKey(pem: String(contentsOfFile: keyFile, encoding: .utf8)).algorithm == .RS256)
        let listed = try await run(latch, ["admin", "test-keys", "list"], environment: environment)
        #expect(listed.0 == 0 && listed.1.contains("register_key") && !listed.1.contains("PRIVATE"))
        let missing = try await run(latch, ["admin", "users", "get", "nobody"], environment: environment)
        #expect(missing.0 == 1 && missing.1.contains("error: not_found"))
        let wrongToken = try await run(latch, ["admin", "users", "list"], environment: ["LATCH_SERVER": server.base, "LATCH_ADMIN_TOKEN": "nope-nope-nope-nope"])
        #expect(wrongToken.0 == 1 && wrongToken.1.contains("error: unauthorized"))
        let unreachable = try await run(latch, ["admin", "users", "list", "--server", "http://127.0.0.1:1"], environment: environment)
        #expect(unreachable.0 == 3)
        // Browser sign-in: an upstream identity provider and an app's redirect URIs.
        try "corp-secret\n".write(toFile: directory.path + "/corp.secret", atomically: true, encoding: .utf8)
        let upstream = try await run(
            latch,
            [
                "admin", "upstream-idps", "add", "--id", "corp", "--display-name", "Corp SSO", "--issuer", "https://login.example.com/realms/corp",
                "--client-id", "latch", "--client-secret-file", directory.path + "/corp.secret", "--kept-claim", "email",
            ], environment: environment)
        #expect(upstream.0 == 0 && upstream.1.contains("/oauth2/upstream/corp/callback") && !upstream.1.contains("corp-secret"), "\(upstream.1)")
        let insecure = try await run(
            latch, ["admin", "upstream-idps", "add", "--id", "plain", "--display-name", "P", "--issuer", "http://idp.example", "--client-id", "x"],
            environment: environment)
        #expect(insecure.0 == 1 && insecure.1.contains("error: invalid_input"), "\(insecure.1)")
        let browser = try await run(
            latch, ["admin", "clients", "browser-sign-in", "default", "--redirect-uri", "com.example.app:/cb", "--upstream-idp", "corp"],
            environment: environment)
        #expect(browser.0 == 0 && browser.1.contains("com.example.app:/cb"), "\(browser.1)")
        let unknownIdP = try await run(latch, ["admin", "clients", "browser-sign-in", "default", "--upstream-idp", "nobody"], environment: environment)
        #expect(unknownIdP.0 == 1 && unknownIdP.1.contains("error: invalid_input"), "\(unknownIdP.1)")
        #expect(try await run(latch, ["admin", "upstream-idps", "list"], environment: environment).1.contains("Corp SSO"))
        #expect(try await run(latch, ["admin", "upstream-idps", "delete", "corp"], environment: environment).0 == 0)
        #expect(try await run(latch, ["admin", "upstream-idps", "get", "corp"], environment: environment).0 == 1)
        // The audit log: what the commands above changed, exported, and its chain verified.
        let audit = try await run(latch, ["admin", "audit", "list", "--type", "admin.", "--limit", "10"], environment: environment)
        #expect(audit.0 == 0 && audit.1.contains("admin.upstream_idps.delete") && audit.1.contains("admin.test_keys.create"), "\(audit.1)")
        let export = try await run(latch, ["admin", "audit", "export"], environment: environment)
        let lines = export.1.split(separator: "\n").filter { $0.hasPrefix("{") }
        #expect(export.0 == 0 && lines.count == 4 && lines.allSatisfy { (try? JSONValue.parse(Data($0.utf8)))?["mac"] != nil }, "\(export.1)")
        let verified = try await run(latch, ["admin", "audit", "verify"], environment: environment)
        #expect(verified.0 == 0 && verified.1.contains("\"verified\" : true"), "\(verified.1)")
        _ = try await server.terminate()

        // A record changed in the database behind Latch's back: the next start's verification fails (exit 12).
        let edit = try await run(
            "/usr/bin/env",
            [
                "python3", "-c",
                "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute(\"UPDATE audit_log SET detail = 'nothing happened' WHERE seq = 2\"); db.commit()",
                directory.path + "/data/latch.sqlite",
            ])
        #expect(edit.0 == 0, "\(edit.1)")
        let again = try LatchServer(dataDirectory: directory.path + "/data", port: port, environment: ["LATCH_ADMIN_TOKEN": Self.adminToken])
        try await again.waitUntilListening()
        let broken = try await run(latch, ["admin", "audit", "verify"], environment: environment)
        #expect(broken.0 == 12 && broken.1.contains("record 2 of the chain does not match its MAC"), "\(broken.1)")
        _ = try await again.terminate()

        // Offline key rotation on the data folder, seen by the next start.
        let rotated = try await run(latch, ["keys", "rotate", "--data-dir", directory.path + "/data"])
        #expect(rotated.0 == 0, "\(rotated.1)")
        let keys = try await run(latch, ["keys", "list", "--data-dir", directory.path + "/data"])
        #expect(keys.1.split(separator: "\n").count == 2 && keys.1.contains("retired=-"))
    }

    @Test("An authenticator model denied after registration stops signing in (invalid_grant, exit 6) once the deployment restarts with the policy")
    func deniedAfterRegistration() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.path + "/data"
        let port = try freePort()
        let latch = try latchExecutable().path
        let first = try LatchServer(dataDirectory: data, port: port, environment: ["LATCH_ADMIN_TOKEN": Self.adminToken])
        try await first.waitUntilListening()
        let environment = ["LATCH_SERVER": first.base, "LATCH_ADMIN_TOKEN": Self.adminToken]
        let state = ["--state-dir", directory.path + "/phone"]
        for arguments in [
            ["admin", "test-keys", "create", "--key-id", "k1", "--out", directory.path + "/tk.pem"],
            ["device", "register", "--test-key", directory.path + "/tk.pem", "--key-id", "k1", "--name", "denied"] + state,
            ["device", "sign-in"] + state, ["device", "fido", "register"] + state, ["device", "fido", "sign-in"] + state,
        ] {
            let (status, output) = try await run(latch, arguments, environment: environment)
            #expect(status == 0, "\(arguments): \(output)")
        }
        #expect(try await first.terminate() == 0)
        let second = try LatchServer(
            dataDirectory: data, port: port,
            environment: ["LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH_FIDO_DENIED_AAGUIDS": LatchAuthenticatorModel.software.rawValue])
        try await second.waitUntilListening()
        let (status, output) = try await run(latch, ["device", "fido", "sign-in"] + state, environment: environment)
        #expect(status == 6, "\(output)")
        #expect(output.contains("not authorized"))
        _ = try await second.terminate()
    }

    @Test("A revoked LATCH_ADMIN_TOKEN stays revoked after a restart with the same value; a new value works")
    func revokedEnvironmentToken() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let data = directory.path + "/data"
        let port = try freePort()
        let first = try LatchServer(dataDirectory: data, port: port, environment: ["LATCH_ADMIN_TOKEN": Self.adminToken])
        try await first.waitUntilListening()
        let (created, body) = try await http("POST", first.base + "/admin/v1/tokens", bearer: Self.adminToken)
        #expect(created == 201)
        let other = try #require(body["token"]?.stringValue)
        #expect(try await http("DELETE", first.base + "/admin/v1/tokens/env", bearer: other).0 == 204)
        #expect(try await http("GET", first.base + "/admin/v1/users", bearer: Self.adminToken).0 == 401)
        #expect(try await first.terminate() == 0)

        let second = try LatchServer(dataDirectory: data, port: port, environment: ["LATCH_ADMIN_TOKEN": Self.adminToken])
        try await second.waitUntilListening()
        #expect(try await http("GET", second.base + "/admin/v1/users", bearer: Self.adminToken).0 == 401)
        #expect(try await http("GET", second.base + "/admin/v1/users", bearer: other).0 == 200)
        #expect(second.log.contains("LATCH_ADMIN_TOKEN holds a revoked token"), "\(second.log)")
        #expect(try await second.terminate() == 0)

        let renewed = "renewed-admin-token-0123456789ab"
        let third = try LatchServer(dataDirectory: data, port: port, environment: ["LATCH_ADMIN_TOKEN": renewed])
        try await third.waitUntilListening()
        #expect(try await http("GET", third.base + "/admin/v1/users", bearer: renewed).0 == 200)
        #expect(try await third.terminate() == 0)
    }

    @Test("A first start with no admin token configured prints a generated one, once")
    func bootstrapToken() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let port = try freePort()
        let first = try LatchServer(dataDirectory: directory.path + "/data", port: port, environment: ["LATCH_ADMIN_TOKEN": ""])
        try await first.waitUntilListening()
        let line = try #require(first.log.split(separator: "\n").first { $0.contains("LATCH_ADMIN_TOKEN=") })
        let token = String(line.split(separator: "=").last!)
        #expect(try await http("GET", first.base + "/admin/v1/users", bearer: token).0 == 200)
        // It names its data folder, and the next step runs as printed: a console enrollment link for this issuer.
        let folder = URL(fileURLWithPath: directory.path + "/data").standardizedFileURL.path
        #expect(first.log.contains("data: SQLite in \(folder)"), "\(first.log)")
        let next = try #require(first.log.split(separator: "\n").first { $0.contains("Next: `latch admin bootstrap") })
        let command = try #require(next.split(separator: "`").dropFirst().first).split(separator: " ").map(String.init)
        #expect(command.first == "latch" && command.contains("--issuer"))
        let (status, output) = try await run(try latchExecutable().path, Array(command.dropFirst()), environment: ["LATCH_ADMIN_TOKEN": ""])
        #expect(status == 0 && output.contains("/console/enroll"), "\(output)")
        _ = try await first.terminate()
        let second = try LatchServer(dataDirectory: directory.path + "/data", port: port, environment: ["LATCH_ADMIN_TOKEN": ""])
        try await second.waitUntilListening()
        #expect(!second.log.contains("LATCH_ADMIN_TOKEN="))
        #expect(try await http("GET", second.base + "/admin/v1/users", bearer: token).0 == 200)
        // The token itself is never stored, only its hash.
        for file in ["latch.sqlite", "latch.sqlite-wal"] {
            let bytes = (try? Data(contentsOf: URL(fileURLWithPath: directory.path + "/data/" + file))) ?? Data()
            #expect(bytes.range(of: Data(token.utf8)) == nil, "\(file) holds the admin token")
        }
        _ = try await second.terminate()
    }
}
