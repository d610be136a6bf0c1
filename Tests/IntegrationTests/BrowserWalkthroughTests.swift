import Foundation
import LatchModel
import LatchTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Browser sign-in in a real browser: `latch serve` federating to the real upstream provider
/// (`Tests/Peers/upstream_oidc_provider.py`), walked through by headless Chromium under Selenium
/// (`Tests/Peers/browser_walkthrough.py`), which saves and checks a screenshot of each hosted page.
///
/// `LATCH_UPDATE_SCREENSHOTS=1` also copies the SQLite run's screenshots to `docs/images/hosted-pages/`.
@Suite("Browser walkthrough", .serialized, .requires(.browser))
struct BrowserWalkthroughTests {
    static let adminToken = "browser-walkthrough-admin-token-0123"
    static let keyEncryptionKey = Data((0..<32).map { UInt8(100 + $0) }).base64EncodedString()
    static let upstreamClientID = "latch-browser"
    static let upstreamSecret = "upstream-secret-for-the-browser-walkthrough"
    /// The upstream providers the client allows, in chooser order; both are the same provider process.
    static let idps = [("corp", "Corp SSO"), ("corp2", "Partner SSO")]
    static let screenshots = ["01-chooser.png", "02-upstream-login.png", "03-confirm-sign-out.png", "04-signed-out.png", "05-error.png", "06-chooser-de.png"]

    @Test("Headless Chromium walks through browser sign-in on SQLite: chooser, upstream login, single sign-on, sign-out, error and German pages")
    func sqlite() async throws {
        try await walkthrough(database: nil)
    }

    @Test(
        "The same browser walkthrough with `latch serve` on PostgreSQL",
        .enabled(if: TestPostgres.isConfigured, "LATCH_TEST_POSTGRES_URL is not set: the PostgreSQL browser walkthrough is skipped"))
    func postgres() async throws {
        try await walkthrough(database: try await TestPostgres.freshDatabase())
    }

    func walkthrough(database: String?) async throws {
        // Skipped by the suite's trait without Chromium, chromedriver, Selenium, Authlib and Flask; CI (.ci/run installs them) fails here.
        try await Peer.browser.require()
        let directory = TemporaryDirectory(prefix: "latch-browser")
        defer { directory.remove() }
        let port = try freePort()
        let issuer = "http://127.0.0.1:\(port)"

        // The upstream first: it must know Latch's callback and signed-out URLs, which only need Latch's port.
        let provider = try await UpstreamProviderProcess(
            clientID: Self.upstreamClientID, clientSecret: Self.upstreamSecret,
            redirectURIs: Self.idps.flatMap { ["\(issuer)/oauth2/upstream/\($0.0)/callback", "\(issuer)/oauth2/upstream/\($0.0)/signed-out"] },
            output: directory.path + "/upstream.log")
        var environment = ["LATCH_ADMIN_TOKEN": Self.adminToken, "LATCH_ISSUER": issuer, "LATCH_LOG_LEVEL": "info"]
        if let database {
            environment["LATCH_DATABASE_URL"] = database
            // Four connections are plenty for one browser; the cluster is shared with every PostgreSQL suite.
            environment["LATCH_DATABASE_POOL_SIZE"] = "4"
            environment["LATCH_KEYS_ENCRYPTION_KEY"] = Self.keyEncryptionKey
        }
        let server: LatchServer
        do {
            server = try LatchServer(dataDirectory: directory.path + "/data", port: port, environment: environment)
            try await server.waitUntilListening()
        } catch {
            await provider.stop()
            throw error
        }
        do {
            try await walk(server: server, provider: provider, directory: directory, updateDocs: database == nil)
        } catch {
            await provider.stop()
            _ = try? await server.terminate()
            throw error
        }
        await provider.stop()
        #expect(try await server.terminate() == 0, "\(server.log.suffix(3000))")
    }

    func walk(server: LatchServer, provider: UpstreamProviderProcess, directory: TemporaryDirectory, updateDocs: Bool) async throws {
        // The app is the script's own loopback server, on a port chosen here so that its URIs can be registered first.
        let appPort = try freePort()
        for (id, name) in Self.idps {
            let added = try await admin(
                "POST", server.base + "/admin/v1/upstream-idps",
                AdminUpstreamIdPRequest(
                    id: id, displayName: name, issuer: provider.issuer, clientId: Self.upstreamClientID, clientSecret: Self.upstreamSecret,
                    scopes: ["openid", "profile", "email"], usernameClaim: "preferred_username", keptClaims: ["email", "name"]))
            try #require(added.0 == 201, "adding upstream \(id): \(added.1)")
        }
        let patched = try await admin(
            "PATCH", server.base + "/admin/v1/clients/default",
            AdminClientPatch(
                redirectUris: ["http://127.0.0.1:\(appPort)/cb"], postLogoutRedirectUris: ["http://127.0.0.1:\(appPort)/signed-out"],
                upstreamIdps: Self.idps.map(\.0)))
        try #require(patched.0 == 200, "patching the default client: \(patched.1)")

        let out = directory.path + "/screenshots"
        let started = Date()
        let (status, output) = try await ChildProcess.run(
            "/usr/bin/env",
            [
                "python3", packageRoot.appendingPathComponent("Tests/Peers/browser_walkthrough.py").path, "--issuer", server.base,
                "--upstream-issuer", provider.issuer, "--app-port", "\(appPort)", "--out", out,
            ] + Self.idps.flatMap { ["--idp", "\($0.0):\($0.1)"] },
            environment: ProcessInfo.processInfo.environment, timeout: 180)
        let context = "walkthrough output:\n\(output.suffix(6000))\nlatch log:\n\(server.log.suffix(3000))"
        let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("{\"walkthrough\"") }, "no result line; \(context)")
        let result = try JSONValue.parse(Data(line.utf8))
        let failures = (result["failures"]?.arrayValue ?? []).compactMap(\.stringValue)
        for failure in failures { Issue.record("\(failure)") }
        let names = Set((result["screenshots"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue })
        #expect(status == 0, "exit status \(status); \(context)")
        #expect((result["checks"]?.intValue ?? 0) >= 70, "\(context)")
        for name in Self.screenshots {
            #expect(names.contains(name), "\(name) was not taken")
            let attributes = try? FileManager.default.attributesOfItem(atPath: out + "/" + name)
            #expect(((attributes?[.size] as? NSNumber)?.intValue ?? 0) > 8000, "\(name) is missing or tiny in \(out)")
        }
        print("browser walkthrough: \(result["checks"]?.intValue ?? 0) checks in \(Int(Date().timeIntervalSince(started))) s")

        if updateDocs, ProcessInfo.processInfo.environment["LATCH_UPDATE_SCREENSHOTS"] == "1" {
            let docs = packageRoot.appendingPathComponent("docs/images/hosted-pages")
            try FileManager.default.createDirectory(at: docs, withIntermediateDirectories: true)
            for name in Self.screenshots where FileManager.default.fileExists(atPath: out + "/" + name) {
                let target = docs.appendingPathComponent(name)
                try? FileManager.default.removeItem(at: target)
                try FileManager.default.copyItem(at: URL(fileURLWithPath: out + "/" + name), to: target)
            }
        }
    }

    /// An admin API call with a JSON body: the status and the answer's text.
    func admin(_ method: String, _ url: String, _ body: some Encodable) async throws -> (Int, String) {
        var request = URLRequest(url: URL(string: url)!)
        request.httpMethod = method
        request.setValue("Bearer \(Self.adminToken)", forHTTPHeaderField: "Authorization")
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONEncoder().encode(body)
        request.timeoutInterval = 30
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }
}
