import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LatchApp
import LatchCore
import LatchModel
@testable import LatchPostgres
@testable import LatchServer
import LatchTesting
import PostgresNIO
import Testing

/// The role × route table, on SQLite and on PostgreSQL: every admin route the router has, called with a token of
/// every role, answers as ``AdminPolicy`` says — and a refused call writes nothing.
@Suite("Admin roles")
struct AdminRoleTests {
    /// An in-process deployment over some store: its router's client, the store, and the clock.
    struct Harness: Sendable {
        let client: any TestClientProtocol
        let store: any LatchStore
        let clock: TestClock
        let routes: [String]

        func call(_ method: HTTPRequest.Method, _ path: String, token: String, json: String? = nil) async throws -> Reply {
            var headers: HTTPFields = [.authorization: "Bearer \(token)"]
            if json != nil { headers[.contentType] = "application/json" }
            return try await client.execute(uri: path, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) }) { response in
                Reply(status: response.status, headers: response.headers, body: Data(response.body.readableBytesView))
            }
        }

        func owner(_ method: HTTPRequest.Method, _ path: String, _ json: String? = nil) async throws -> Reply {
            try await call(method, path, token: Deployment.adminToken, json: json)
        }

        /// A token of `role` on the built-in owner's account, created through the API.
        func token(_ role: AdminRole, expiresIn: Int64? = nil, account: String? = nil) async throws -> AdminTokenCreated {
            let body = String(decoding: try JSONEncoder().encode(AdminTokenRequest(name: role.rawValue, role: role, expiresIn: expiresIn, accountId: account)), as: UTF8.self)
            let reply = try await owner(.post, "/admin/v1/tokens", body)
            #expect(reply.status == .created, "\(String(decoding: reply.body, as: UTF8.self))")
            return try reply.decode(AdminTokenCreated.self)
        }
    }

    static let postgresURL = ProcessInfo.processInfo.environment["LATCH_TEST_POSTGRES_URL"]

    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    /// Runs `body` against a fresh deployment on `backend` (PostgreSQL: a throwaway database on the cluster of
    /// `LATCH_TEST_POSTGRES_URL`; without it the PostgreSQL case is skipped, as every PostgreSQL suite is).
    static func withHarness(_ backend: Backend, _ body: @Sendable (Harness) async throws -> Void) async throws {
        switch backend {
        case .sqlite:
            let deployment = try await Deployment.make()
            try await deployment.run { client in
                try await body(
                    Harness(client: client.raw, store: deployment.store, clock: deployment.clock, routes: Self.routes(deployment.services)))
            }
        case .postgres:
            guard let admin = postgresURL else {
                // As every PostgreSQL suite: not run without a cluster, a failure where CI requires one. This argument
                // only, so a warning on the test case (a cancelled case is listed as passed by Swift Testing 6.3.1).
                let required = ProcessInfo.processInfo.environment["LATCH_REQUIRE_POSTGRES"] == "1"
                Issue.record(
                    "not run: the PostgreSQL case — LATCH_TEST_POSTGRES_URL is not set (scripts/with-postgres.sh starts a cluster)",
                    severity: required ? .error : .warning)
                return
            }
            let name = "latch_roles_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
            try await adminQuery(admin, "CREATE DATABASE \(name)")
            var components = URLComponents(string: admin)!
            components.path = "/" + name
            let url = components.string!
            do {
                try await PostgresStore.withRunning(url: url, poolSize: 4, operationTimeout: .seconds(30)) { store in
                    var configuration = LatchConfiguration()
                    configuration.issuer = "https://latch.test"
                    configuration.adminToken = Redacted(Deployment.adminToken)
                    let clock = TestClock()
                    let deployment = try await LatchDeployment.assemble(
                        configuration: configuration, store: store, keyEncryptionKey: [UInt8](repeating: 7, count: 32), clock: clock.clock,
                        logger: .init(label: "test"))
                    let app = Application(router: buildRouter(deployment.services))
                    try await app.test(.router) { client in
                        try await body(Harness(client: client, store: store, clock: clock, routes: Self.routes(deployment.services)))
                    }
                }
                try await adminQuery(admin, "DROP DATABASE \(name) WITH (FORCE)")
            } catch {
                try? await adminQuery(admin, "DROP DATABASE \(name) WITH (FORCE)")
                throw error
            }
        }
    }

    static func adminQuery(_ url: String, _ sql: String) async throws {
        let client = PostgresClient(configuration: try PostgresStore.configuration(url: url, poolSize: 1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            try await client.query(PostgresQuery(unsafeSQL: sql))
            group.cancelAll()
        }
    }

    /// Every admin route of the router (`METHOD /template`): `/admin/v1/…` and `/metrics`.
    static func routes(_ services: LatchServices) -> [String] {
        buildRouter(services).routes
            .filter { $0.path.description.hasPrefix("/admin/v1") || $0.path.description == "/metrics" }
            .map { "\($0.method.rawValue) \($0.path.description)" }
            .sorted()
    }

    /// What the store holds, read through its protocols (the same on every backend): a refused call must leave it
    /// as it was.
    static func snapshot(_ store: any LatchStore) async throws -> [String] {
        [
            "\(try await store.users(after: nil, limit: 1000).map(\.id))",
            "\(try await store.session(id: "s-role").map { ($0.id, $0.revokedAt ?? 0) } as Any)",
            "\(try await store.adminTokens().map { ($0.id, $0.role, $0.accountID, $0.expiresAt ?? 0) })",
            "\(try await store.adminAccounts())",
            "\(try await store.testRegistrationKeys().map { ($0.keyID, $0.owner ?? "") })",
            "\(try await store.clients())",
            "\(try await store.signingCertificates())",
            "\(try await store.issuerKeys().map(\.keyID))",
            "\(try await store.signingKeys().map { ($0.keyID, $0.retiredAt ?? 0) })",
            "\(try await store.loginIssuers().map(\.id))",
            "\(try await store.resourceServers().map(\.id))",
            "\(try await store.customProviders().map(\.id))",
            "\(try await store.upstreamIdPs().map(\.id))",
            "\(try await store.authenticators(userID: "u-alice").map(\.id))",
        ]
    }

    /// A concrete path for a route template: `{id}` is the test user (so that a refused delete would have
    /// deleted someone), any other parameter a name nothing has.
    static func path(_ template: String) -> String {
        template.split(separator: "/", omittingEmptySubsequences: false).map { segment in
            guard segment.hasPrefix("{") else { return String(segment) }
            return segment == "{id}" ? "u-alice" : "nothing"
        }.joined(separator: "/")
    }

    /// A body that passes decoding where one is needed (validation may still refuse it: only roles matter here).
    static func body(_ method: HTTPRequest.Method) -> String? { method == .post || method == .patch ? "{}" : nil }

    @Test("Every admin route has a policy entry, and every policy entry is a route")
    func everyRouteHasAnEntry() async throws {
        try await Self.withHarness(.sqlite) { harness in
            #expect(harness.routes.count > 40)
            for route in harness.routes { #expect(AdminPolicy.table[route] != nil, "no policy entry for \(route)") }
            let unrouted = Set(AdminPolicy.table.keys).subtracting(harness.routes)
            #expect(unrouted.isEmpty)
        }
    }

    @Test("Role × route: each role's token is let through or refused (403 forbidden, nothing written) as the policy says", arguments: Backend.allCases)
    func roleTable(_ backend: Backend) async throws {
        try await Self.withHarness(backend) { harness in
            let alice = StoreConformance.user("alice")
            try await StoreConformance.register(harness.store, alice)
            try await StoreConformance.start(harness.store, StoreConformance.session("s-role", user: alice, now: harness.clock.seconds, client: "default"))
            var tokens: [AdminRole: String] = [:]
            for role in AdminRole.allCases { tokens[role] = try await harness.token(role).token }
            var checked = 0
            for route in harness.routes {
                let parts = route.split(separator: " ", maxSplits: 1)
                let method = HTTPRequest.Method(String(parts[0]))!
                let template = String(parts[1])
                let allowed = AdminPolicy.allowedRoles(method: method.rawValue, template: template)
                for role in AdminRole.allCases {
                    let before = try await Self.snapshot(harness.store)
                    let reply = try await harness.call(method, Self.path(template), token: tokens[role]!, json: Self.body(method))
                    if allowed.contains(role) {
                        #expect(reply.status != .unauthorized && reply.code != "forbidden", "\(role) on \(route): \(reply.status) \(reply.code ?? "")")
                    } else {
                        #expect(reply.status == .forbidden && reply.code == "forbidden", "\(role) on \(route): \(reply.status) \(reply.code ?? "")")
                        let description = reply.json["error_description"]?.stringValue ?? ""
                        #expect(description.contains(AdminPolicy.describe(allowed)), "\(description)")
                        #expect(try await Self.snapshot(harness.store) == before, "\(role) on \(route) wrote something")
                        // ... but its audit record.
                        let record = try await harness.store.auditRecords(matching: AuditQuery(limit: 1)).first?.event
                        #expect(
                            record?.kind == .admin("access", "forbidden") && record?.detail?.hasPrefix("role \(role.rawValue) refused \(route)") == true,
                            "\(role) on \(route): \(record?.detail ?? "no record")")
                    }
                    checked += 1
                }
            }
            #expect(checked == harness.routes.count * AdminRole.allCases.count)
            // HEAD is checked as GET.
            let head = try await harness.call(.head, "/admin/v1/clients", token: tokens[.support]!)
            #expect(head.status == .forbidden)
            #expect(try await harness.call(.head, "/admin/v1/users", token: tokens[.support]!).status == .ok)
        }
    }

    @Test("Escalation is refused: support asking for an owner token, an admin creating an admin account, an auditor deleting a user", arguments: Backend.allCases)
    func escalation(_ backend: Backend) async throws {
        try await Self.withHarness(backend) { harness in
            try await StoreConformance.register(harness.store, StoreConformance.user("alice"))
            let support = try await harness.token(.support)
            let admin = try await harness.token(.admin)
            let auditor = try await harness.token(.auditor)
            let before = try await Self.snapshot(harness.store)

            let ownerToken = try await harness.call(.post, "/admin/v1/tokens", token: support.token, json: #"{"name":"x","role":"owner"}"#)
            #expect(ownerToken.status == .forbidden && ownerToken.code == "forbidden")
            #expect(ownerToken.json["error_description"]?.stringValue?.contains("owner") == true)
            let adminToken = try await harness.call(.post, "/admin/v1/tokens", token: admin.token, json: #"{"role":"owner"}"#)
            #expect(adminToken.code == "forbidden")
            let account = try await harness.call(.post, "/admin/v1/admins", token: admin.token, json: #"{"username":"eve","role":"admin"}"#)
            #expect(account.status == .forbidden && account.code == "forbidden")
            #expect(account.json["error_description"]?.stringValue?.contains("owner") == true)
            let deleted = try await harness.call(.delete, "/admin/v1/users/u-alice", token: auditor.token)
            #expect(deleted.status == .forbidden && deleted.code == "forbidden")
            // Each attempt is audited, the engine's refusals (escalations) too.
            let refused = try await harness.store.auditRecords(matching: AuditQuery(kinds: ["admin.access.forbidden"])).map { $0.event.detail ?? "" }
            #expect(refused.count == 4, "\(refused)")
            #expect(refused.last?.hasPrefix("role support refused POST /admin/v1/tokens") == true)
            // An admin may not revoke an owner's token; support may not even see one.
            #expect(try await harness.call(.delete, "/admin/v1/tokens/env", token: admin.token).code == "forbidden")
            #expect(try await harness.call(.delete, "/admin/v1/tokens/env", token: support.token).code == "not_found")
            let listed = try await harness.call(.get, "/admin/v1/tokens", token: support.token).decode(AdminTokenList.self)
            #expect(listed.tokens.isEmpty == false && listed.tokens.allSatisfy { $0.accountId == AdminAccount.rootID && $0.role <= .support })
            #expect(try await Self.snapshot(harness.store) == before)
            #expect(try await harness.store.user(id: "u-alice") != nil)

            // Within its role, a token may create lower ones; the default is its own role.
            let lower = try await harness.call(.post, "/admin/v1/tokens", token: admin.token, json: #"{"name":"ro","role":"auditor"}"#)
            #expect(lower.status == .created && lower.json["role"]?.stringValue == "auditor")
            let same = try await harness.call(.post, "/admin/v1/tokens", token: support.token, json: "{}")
            #expect(same.status == .created && same.json["role"]?.stringValue == "support")
        }
    }

    @Test("Token expiry: 90 days by default, 60 s to 366 days, refused with 401 from its expiry on", arguments: Backend.allCases)
    func expiry(_ backend: Backend) async throws {
        try await Self.withHarness(backend) { harness in
            let now = harness.clock.seconds
            let standard = try await harness.token(.auditor)
            #expect(standard.expiresAt == now + 90 * 86_400)
            let short = try await harness.token(.auditor, expiresIn: 60)
            #expect(short.expiresAt == now + 60 && short.accountId == AdminAccount.rootID)
            for bad in ["59", "31622401", "-1", "\"soon\"", "1.5"] {
                let reply = try await harness.owner(.post, "/admin/v1/tokens", #"{"expiresIn":\#(bad)}"#)
                #expect(reply.status == .badRequest, "\(bad)")
                #expect(["invalid_input", "invalid_json"].contains(reply.code ?? ""), "\(bad): \(reply.code ?? "")")
            }
            // As in every body, a null is refused: leaving the field out asks for the default.
            #expect(try await harness.owner(.post, "/admin/v1/tokens", #"{"expiresIn":null}"#).code == "invalid_json")
            #expect(try await harness.owner(.post, "/admin/v1/tokens", #"{"role":"king"}"#).code == "invalid_json")
            let listed = try await harness.owner(.get, "/admin/v1/tokens").decode(AdminTokenList.self)
            #expect(listed.tokens.first { $0.id == short.id }?.expiresAt == now + 60)
            #expect(listed.tokens.first { $0.id == "env" }?.expiresAt == nil)
            #expect(!String(decoding: try await harness.owner(.get, "/admin/v1/tokens").body, as: UTF8.self).contains("hash"))

            #expect(try await harness.call(.get, "/admin/v1/users", token: short.token).status == .ok)
            harness.clock.advance(by: 59)
            #expect(try await harness.call(.get, "/admin/v1/users", token: short.token).status == .ok)
            harness.clock.advance(by: 1)
            let expired = try await harness.call(.get, "/admin/v1/users", token: short.token)
            #expect(expired.status == .unauthorized && expired.code == "unauthorized")
            #expect(try await harness.call(.get, "/metrics", token: short.token).status == .unauthorized)
            #expect(try await harness.call(.get, "/admin/v1/users", token: standard.token).status == .ok)
            #expect(try await harness.owner(.get, "/admin/v1/users").status == .ok)
        }
    }

    @Test("Admin accounts: created by owners, usernames unique ignoring case, listed; deleting one lists what it owns, then deletes it with its tokens", arguments: Backend.allCases)
    func accounts(_ backend: Backend) async throws {
        try await Self.withHarness(backend) { harness in
            let created = try await harness.owner(.post, "/admin/v1/admins", #"{"username":"Dana","role":"admin"}"#)
            #expect(created.status == .created, "\(String(decoding: created.body, as: UTF8.self))")
            let dana = try created.decode(AdminAccountInfo.self)
            #expect(dana.id.hasPrefix("adm_") && dana.role == .admin && dana.createdBy == AdminAccount.rootID && dana.createdAt == harness.clock.seconds)
            for duplicate in [#"{"username":"dana","role":"auditor"}"#, #"{"username":"ROOT","role":"auditor"}"#] {
                #expect(try await harness.owner(.post, "/admin/v1/admins", duplicate).code == "conflict")
            }
            for bad in [#"{"username":"","role":"admin"}"#, #"{"username":" x","role":"admin"}"#, #"{"username":"a\u0007b","role":"admin"}"#,
                #"{"username":"\#(String(repeating: "x", count: 65))","role":"admin"}"#]
            {
                #expect(try await harness.owner(.post, "/admin/v1/admins", bad).code == "invalid_input", "\(bad)")
            }
            #expect(try await harness.owner(.post, "/admin/v1/admins", #"{"username":"x","role":"emperor"}"#).code == "invalid_json")
            let listed = try await harness.owner(.get, "/admin/v1/admins").decode(AdminAccountList.self)
            #expect(Set(listed.admins.map(\.username)) == ["root", "Dana"])

            // Dana's token (an owner issues it) creates a test key and a signing certificate: hers.
            let token = try await harness.token(.admin, account: dana.id)
            #expect(token.accountId == dana.id)
            #expect(try await harness.owner(.post, "/admin/v1/tokens", #"{"role":"owner","accountId":"\#(dana.id)"}"#).code == "forbidden")
            #expect(try await harness.owner(.post, "/admin/v1/tokens", #"{"accountId":"adm_nobody"}"#).code == "not_found")
            #expect(try await harness.call(.post, "/admin/v1/tokens", token: token.token, json: #"{"accountId":"adm_root"}"#).code == "forbidden")
            let key = try await harness.call(.post, "/admin/v1/test-keys", token: token.token, json: #"{"keyId":"dana-key"}"#)
            #expect(key.status == .created)
            let sha = String(repeating: "cd", count: 32)
            let certificate = try await harness.call(.post, "/admin/v1/clients/default/signing-certificates", token: token.token, json: #"{"sha256":"\#(sha)"}"#)
            #expect(certificate.status == .created && certificate.json["owner"]?.stringValue == dana.id)
            #expect(try await harness.store.testRegistrationKey(id: "dana-key")?.owner == dana.id)

            let before = try await Self.snapshot(harness.store)
            let listing = try await harness.owner(.delete, "/admin/v1/admins/\(dana.id)")
            #expect(listing.status == .conflict && listing.code == "conflict")
            let description = listing.json["error_description"]?.stringValue ?? ""
            #expect(description.contains("dana-key") && description.contains(sha) && description.contains("deleteOwned=true"))
            #expect(try await Self.snapshot(harness.store) == before)
            #expect(try await harness.owner(.delete, "/admin/v1/admins/\(dana.id)?deleteOwned=maybe").code == "invalid_input")

            #expect(try await harness.owner(.delete, "/admin/v1/admins/\(dana.id)?deleteOwned=true").status == .noContent)
            #expect(try await harness.store.testRegistrationKey(id: "dana-key") == nil)
            #expect(try await harness.store.signingCertificates().contains { $0.sha256 == sha } == false)
            #expect(try await harness.store.adminTokens().contains { $0.accountID == dana.id } == false)
            #expect(try await harness.call(.get, "/admin/v1/users", token: token.token).code == "unauthorized")
            #expect(try await harness.owner(.delete, "/admin/v1/admins/\(dana.id)").code == "not_found")
        }
    }

    @Test("The last owner cannot be deleted; deleting your own account needs force=true", arguments: Backend.allCases)
    func lastOwner(_ backend: Backend) async throws {
        try await Self.withHarness(backend) { harness in
            let refused = try await harness.owner(.delete, "/admin/v1/admins/adm_root?force=true")
            #expect(refused.status == .conflict && refused.json["error_description"]?.stringValue?.contains("last owner") == true)
            let olga = try await harness.owner(.post, "/admin/v1/admins", #"{"username":"olga","role":"owner"}"#).decode(AdminAccountInfo.self)
            let olgaToken = try await harness.token(.owner, account: olga.id)
            // Her own account: only with force.
            let own = try await harness.call(.delete, "/admin/v1/admins/\(olga.id)", token: olgaToken.token)
            #expect(own.code == "conflict" && own.json["error_description"]?.stringValue?.contains("force=true") == true)
            // Root, deleted by Olga: root's tokens stop working.
            #expect(try await harness.call(.delete, "/admin/v1/admins/adm_root", token: olgaToken.token).status == .noContent)
            #expect(try await harness.owner(.get, "/admin/v1/users").code == "unauthorized")
            let last = try await harness.call(.delete, "/admin/v1/admins/\(olga.id)?force=true", token: olgaToken.token)
            #expect(last.code == "conflict")
            #expect(try await harness.call(.get, "/admin/v1/admins", token: olgaToken.token).decode(AdminAccountList.self).admins.map(\.id) == [olga.id])
        }
    }

    /// The role table of docs/operations.md, as the policy says it should read.
    static func renderedTable() -> String {
        let order = ["GET": 0, "POST": 1, "PATCH": 2, "DELETE": 3]
        let rows = AdminPolicy.table.map { key, roles -> (path: String, method: String, roles: Set<AdminRole>) in
            let parts = key.split(separator: " ", maxSplits: 1)
            return (String(parts[1]), String(parts[0]), roles)
        }.sorted { ($0.path, order[$0.method] ?? 9) < ($1.path, order[$1.method] ?? 9) }
        let columns: [AdminRole] = [.owner, .admin, .support, .auditor]
        return (["| method | route | owner | admin | support | auditor |", "|---|---|---|---|---|---|"]
            + rows.map { row in
                "| \(row.method) | `\(row.path)` | " + columns.map { row.roles.contains($0) ? "✓" : "—" }.joined(separator: " | ") + " |"
            }).joined(separator: "\n")
    }

    @Test("docs/operations.md's role table is the policy's")
    func documentedTable() throws {
        let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/operations.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let start = try #require(text.range(of: "<!-- role table: generated from AdminPolicy.table, checked by AdminRoleTests -->\n"))
        let end = try #require(text.range(of: "\n<!-- /role table -->"))
        #expect(String(text[start.upperBound..<end.lowerBound]) == Self.renderedTable(), "expected:\n\(Self.renderedTable())")
    }
}
