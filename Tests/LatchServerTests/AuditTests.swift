import Foundation
import HTTPTypes
import Hummingbird
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
@testable import LatchSQLite
@testable import LatchServer
import LatchTesting
import Testing

@Suite("Audit log")
struct AuditTests {
    /// The newest audit records, newest first, through the admin API.
    static func records(_ client: Client, _ query: String = "") async throws -> [AuditRecordView] {
        try await client.admin(.get, "/admin/v1/audit?limit=500" + query).decode(AuditPage.self).records
    }

    /// One mutating admin call and the record it must write.
    struct Change: Sendable {
        let method: HTTPRequest.Method
        let path: String
        let body: String?
        let type: String
        /// A word the record's detail must hold.
        let detail: String
        init(_ method: HTTPRequest.Method, _ path: String, _ body: String? = nil, _ type: String, _ detail: String) {
            self.method = method
            self.path = path
            self.body = body
            self.type = type
            self.detail = detail
        }
    }

    /// Admin routes that change state whose records are asserted where their fixtures are built: FidoFlowTests
    /// ("Wrong PINs count down…": unlock, delete one, delete all — `authenticator.unlocked` / `.deleted`) and
    /// OutOfBandFlowTests ("Bad tokens…": an enrollment creating its user — `user.registered` and `oob.requested`).
    /// ConsoleTests ("A user's sessions and devices…": one session revoked — `admin.sessions.revoke`) too.
    static let coveredElsewhere: Set<String> = [
        "DELETE /admin/v1/users/{id}/sessions/{sessionId}",
        "DELETE /admin/v1/users/{id}/authenticators", "DELETE /admin/v1/users/{id}/authenticators/{authenticator}",
        "POST /admin/v1/users/{id}/authenticators/{authenticator}/unlock", "POST /admin/v1/users/{id}/enrollments",
    ]

    @Test("Every mutating admin route writes exactly one audit record, with the acting admin, in the unit of its change; refused calls write none")
    func adminChanges() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            try await client.addIssuer()
            let user = try await client.registerFederated(subject: "zoe").userId
            let certificate = String(repeating: "ab", count: 32)
            let issuerKey = TestKeys.p256.publicKey.pemRepresentation.replacingOccurrences(of: "\n", with: "\\n")
            let table: [Change] = [
                Change(.post, "/admin/v1/issuers", #"{"name":"beta","keyId":"b1","publicKey":"\#(issuerKey)"}"#, "admin.issuers.create", "beta"),
                Change(.delete, "/admin/v1/issuers/beta", nil, "admin.issuers.delete", "every key"),
                Change(.post, "/admin/v1/test-keys", #"{"keyId":"tk1"}"#, "admin.test_keys.create", "tk1"),
                Change(.delete, "/admin/v1/test-keys/tk1", nil, "admin.test_keys.delete", "tk1"),
                Change(.post, "/admin/v1/clients", #"{"clientId":"app2"}"#, "admin.clients.create", "app2"),
                Change(.patch, "/admin/v1/clients/app2", #"{"dpop":"required"}"#, "admin.clients.update", "dpop: allowed → required"),
                Change(.post, "/admin/v1/clients/app2/signing-certificates", #"{"sha256":"\#(certificate)"}"#, "admin.signing_certificates.create", certificate),
                Change(.delete, "/admin/v1/clients/app2/signing-certificates/\(certificate)", nil, "admin.signing_certificates.delete", certificate),
                Change(.delete, "/admin/v1/clients/app2", nil, "admin.clients.delete", "app2"),
                Change(.post, "/admin/v1/tokens", #"{"name":"ci"}"#, "admin.tokens.create", "ci"),
                Change(.post, "/admin/v1/keys/rotate", nil, "admin.signing_keys.rotate", "→"),
                Change(
                    .post, "/admin/v1/upstream-idps", #"{"id":"corp","displayName":"Corp","issuer":"https://idp.example.com","clientId":"latch","clientSecret":"s3cret-value"}"#,
                    "admin.upstream_idps.create", "secret set"),
                Change(.delete, "/admin/v1/upstream-idps/corp", nil, "admin.upstream_idps.delete", "corp"),
                Change(
                    .post, "/admin/v1/login-issuers",
                    #"{"issuerId":"bank","audience":"https://latch.test/bank","keys":[{"kid":"b1","algorithm":"ES256","publicKey":"\#(issuerKey)"}]}"#,
                    "admin.login_issuers.create", "bank"),
                Change(.post, "/admin/v1/login-issuers/bank/consumers/c1/logout-all", nil, "user.sessions_revoked", "consumer c1"),
                Change(.delete, "/admin/v1/login-issuers/bank", nil, "admin.login_issuers.delete", "bank"),
                Change(.post, "/admin/v1/resource-servers", #"{"name":"api"}"#, "admin.resource_servers.create", "api"),
                Change(
                    .post, "/admin/v1/custom-providers",
                    #"{"id":"crm","name":"CRM","flow":"one_step","hookURL":"https://hooks.example.com/latch","hookSecret":"a-very-secret-hook-key"}"#,
                    "admin.custom_providers.create", "hooks.example.com"),
                Change(.patch, "/admin/v1/custom-providers/crm", #"{"hookSecret":"another-secret-hook-key"}"#, "admin.custom_providers.update", "hook secret replaced"),
                Change(.delete, "/admin/v1/custom-providers/crm", nil, "admin.custom_providers.delete", "crm"),
                Change(.post, "/admin/v1/admins", #"{"username":"mia","role":"support"}"#, "admin.admins.create", "mia"),
                Change(.post, "/admin/v1/admins/adm_root/enrollment", nil, "admin.admins.enrollment_link", "adm_root"),
                Change(.post, "/admin/v1/users/\(user)/sign-out", nil, "user.sessions_revoked", ""),
                Change(.delete, "/admin/v1/users/\(user)", nil, "user.deleted", ""),
            ]
            var covered: Set<String> = []
            for change in table {
                let before = try await Self.records(client)
                var headers: HTTPFields = [.authorization: "Bearer \(Deployment.adminToken)", .userAgent: "audit-table/1.0"]
                if change.body != nil { headers[.contentType] = "application/json" }
                var reply = try await client.send(change.method, change.path, headers: headers, body: change.body)
                // The resource server's id is generated: delete it through the id the answer gives.
                #expect(reply.status.code < 300, "\(change.method) \(change.path): \(reply.status) \(String(decoding: reply.body, as: UTF8.self))")
                var new = try await Self.records(client).filter { record in !before.contains { $0.seq == record.seq } }
                #expect(new.count == 1, "\(change.method) \(change.path) wrote \(new.map(\.type))")
                let record = new.first
                #expect(record?.type == change.type, "\(change.path)")
                // Sealed with its unit's commit (SQLite seals a group commit's records as it inserts them).
                #expect(record?.actor == "admin:adm_root/env" && record?.userAgent == "audit-table/1.0" && record?.position != nil && record?.mac != nil)
                #expect(change.detail.isEmpty || record?.detail?.contains(change.detail) == true, "\(change.path): \(record?.detail ?? "-")")
                #expect(!(record?.detail ?? "").contains("secret-hook-key") && !(record?.detail ?? "").contains("s3cret"))
                covered.insert("\(change.method) " + Self.template(change.path))
                if change.path == "/admin/v1/resource-servers" {
                    let id = reply.json["clientId"]?.stringValue ?? ""
                    reply = try await client.admin(.delete, "/admin/v1/resource-servers/\(id)")
                    #expect(reply.status == .noContent)
                    new = try await Self.records(client, "&type=admin.resource_servers.delete")
                    #expect(new.count == 1 && new.first?.detail?.contains(id) == true)
                    covered.insert("DELETE /admin/v1/resource-servers/{clientId}")
                }
                if change.path == "/admin/v1/admins" {
                    let id = reply.json["id"]?.stringValue ?? ""
                    #expect(try await client.admin(.delete, "/admin/v1/admins/\(id)").status == .noContent)
                    #expect(try await Self.records(client, "&type=admin.admins.delete").first?.detail?.contains("\"mia\" role support") == true)
                    covered.insert("DELETE /admin/v1/admins/{id}")
                }
                if change.path == "/admin/v1/tokens" {
                    let id = reply.json["id"]?.stringValue ?? ""
                    #expect(try await client.admin(.delete, "/admin/v1/tokens/\(id)").status == .noContent)
                    #expect(try await Self.records(client, "&type=admin.tokens.delete").first?.detail?.contains(id) == true)
                    covered.insert("DELETE /admin/v1/tokens/{id}")
                }
            }
            // Refused admin calls change nothing and write nothing.
            let count = try await Self.records(client).count
            #expect(try await client.admin(.delete, "/admin/v1/clients/ghost").status == .notFound)
            #expect(try await client.adminRaw(.post, "/admin/v1/clients", #"{"clientId":""}"#).status == .badRequest)
            #expect(try await client.admin(.delete, "/admin/v1/issuers/ghost").status == .notFound)
            #expect(try await client.admin(.delete, "/admin/v1/login-issuers/ghost").status == .notFound)
            #expect(try await Self.records(client).count == count)
            // Every state-changing admin route is in the table (or named as covered elsewhere).
            let routes = buildRouter(deployment.services).routes
                .filter { $0.path.description.hasPrefix("/admin/v1") && $0.method != .get && $0.method != .head }
                .map { "\($0.method) \($0.path.description)" }
            let missing = Set(routes).subtracting(covered).subtracting(Self.coveredElsewhere)
            #expect(missing.isEmpty, "admin routes without an audit check: \(missing.sorted())")
            #expect(try await client.admin(.get, "/admin/v1/audit/verify").decode(AuditVerificationView.self).verified)
        }
    }

    /// `/admin/v1/clients/app2` → `/admin/v1/clients/{id}`, as the router names its routes.
    static func template(_ path: String) -> String {
        let path = String(path.prefix { $0 != "?" })
        let parts = path.split(separator: "/").map(String.init)
        let names: [String: String] = [
            "issuers": "{name}", "test-keys": "{keyId}", "clients": "{id}", "signing-certificates": "{sha256}", "tokens": "{id}",
            "upstream-idps": "{id}", "login-issuers": "{issuerId}", "consumers": "{consumerId}", "custom-providers": "{id}", "users": "{id}",
            "admins": "{id}",
        ]
        var result: [String] = []
        for (index, part) in parts.enumerated() {
            if index > 0, let name = names[parts[index - 1]], index >= 3 { result.append(name) } else { result.append(part) }
        }
        return "/" + result.joined(separator: "/")
    }

    @Test("Security events: sign-in success and failure, registration refusals, refresh reuse, sign-out, global sign-out, de-registration — one record each, with address, user agent and request")
    func securityEvents() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            try await client.addIssuer()
            let registered = try await client.registerFederated(subject: "amy")
            let tokens = try await client.signInFederated(subject: "amy")
            // A refused sign-in: the assertion's jti was spent.
            let assertion = try client.federatedAssertion(subject: "amy")
            #expect(try await client.token(assertion: assertion).status == .ok)
            let replay = try await client.token(assertion: assertion)
            #expect(replay.code == "invalid_grant")
            // A refused registration.
            #expect(try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: "not-a-jwt")).status == .badRequest)
            // Refresh reuse: the first token again after rotation.
            let first = try await client.refresh(tokens.refreshToken)
            #expect(first.status == .ok)
            deployment.clock.advance(by: 120)
            #expect(try await client.refresh(tokens.refreshToken).code == "invalid_grant")
            let third = try await client.signInFederated(subject: "amy")
            #expect(try await client.postForm("/oauth2/revoke", [("token", third.refreshToken), ("client_id", "default")]).status == .ok)
            let fourth = try await client.signInFederated(subject: "amy")
            #expect(try await client.send(.post, "/v1/me/global-sign-out", headers: [.authorization: "Bearer \(fourth.accessToken)"]).status == .ok)
            let fifth = try await client.signInFederated(subject: "amy")
            #expect(try await client.send(.delete, "/v1/me", headers: [.authorization: "Bearer \(fifth.accessToken)"]).status == .noContent)

            let chain = try await Self.records(client).reversed().map(\.type)
            #expect(
                chain == [
                    "admin.issuers.create", "user.registered", "signin.succeeded", "signin.succeeded", "signin.failed", "registration.failed", "token.reuse_detected",
                    "signin.succeeded", "session.logged_out", "signin.succeeded", "user.sessions_revoked", "signin.succeeded", "user.deleted",
                ], "\(chain)")
            let failed = try await Self.records(client, "&type=signin.failed").first
            #expect(failed?.detail == "grant=\(GrantType.jwtBearer) error=invalid_grant" && failed?.actor == "anonymous" && failed?.client == "default")
            #expect(try await Self.records(client, "&type=registration.failed").first?.detail == "proof=FSSO error=invalid_proof")
            let reuse = try await Self.records(client, "&type=token.reuse_detected").first
            #expect(reuse?.subject == registered.userId && reuse?.session != nil)
            // Sealed as their units committed: the sealer finds nothing left.
            #expect(try await deployment.services.audit.sealPending() ?? 0 == 0)
            let all = try await Self.records(client)
            #expect(all.allSatisfy { $0.address != nil && $0.mac != nil && $0.position != nil })
            #expect(try await client.admin(.get, "/admin/v1/audit/verify").decode(AuditVerificationView.self).checked == all.count)
        }
    }

    @Test("Query: filters, prefixes, time bounds and cursor paging; bad parameters are invalid_input; export is the chain as JSON lines")
    func query() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            try await client.addIssuer()
            for index in 0..<5 {
                _ = try await client.registerFederated(subject: "user\(index)")
                deployment.clock.advance(by: 10)
            }
            _ = try await client.admin(.post, "/admin/v1/clients", AdminClientRequest(clientId: "app2"))
            let written = try await Self.records(client)
            #expect(written.count == 7 && written.allSatisfy { $0.position != nil && $0.mac != nil })
            #expect(try await deployment.services.audit.sealPending() ?? 0 == 0)
            let all = try await Self.records(client)
            #expect(all.map(\.type) == ["admin.clients.create"] + Array(repeating: "user.registered", count: 5) + ["admin.issuers.create"])
            #expect(try await Self.records(client, "&type=admin.").count == 2)
            #expect(try await Self.records(client, "&type=user.registered,admin.clients.create").count == 6)
            #expect(try await Self.records(client, "&actor=admin:adm_root/env").count == 2)
            let subject = all[1].subject ?? ""
            #expect(try await Self.records(client, "&subject=\(subject)").map(\.seq) == [all[1].seq])
            let start = all.last!.at
            #expect(try await Self.records(client, "&since=\(start + 10)&until=\(start + 30)").count == 2)
            let iso = ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval(start + 10)))
            #expect(try await Self.records(client, "&since=\(iso)&until=\(start + 30)").count == 2)
            // Paging: 3 + 3 + 1, newest first, no record twice.
            var seen: [Int64] = []
            var cursor: String?
            repeat {
                let page = try await client.admin(.get, "/admin/v1/audit?limit=3" + (cursor.map { "&cursor=\($0)" } ?? "")).decode(AuditPage.self)
                seen += page.records.map(\.seq)
                cursor = page.nextCursor
            } while cursor != nil
            #expect(seen == all.map(\.seq))
            for bad in ["limit=0", "limit=501", "limit=x", "cursor=-1", "cursor=abc", "since=yesterday", "type=Bad!", "type=" + String(repeating: "a,", count: 21),
                "actor=" + String(repeating: "a", count: 300)]
            {
                let reply = try await client.admin(.get, "/admin/v1/audit?\(bad)")
                #expect(reply.status == .badRequest && reply.code == "invalid_input", "\(bad)")
            }
            #expect(try await client.get("/admin/v1/audit").status == .unauthorized)
            // Export: every record, oldest first, one JSON object per line.
            let export = try await client.admin(.get, "/admin/v1/audit/export")
            #expect(export.headers[.contentType] == "application/x-ndjson")
            let lines = String(decoding: export.body, as: UTF8.self).split(separator: "\n")
            let exported = try lines.map { try JSONDecoder().decode(AuditRecordView.self, from: Data($0.utf8)) }
            #expect(exported == all.reversed())
            let since = try await client.admin(.get, "/admin/v1/audit/export?since=\(start + 30)")
            #expect(String(decoding: since.body, as: UTF8.self).split(separator: "\n").count == 3)
            #expect(try await client.admin(.get, "/admin/v1/audit/export?until=never").code == "invalid_input")
        }
    }

    @Test("Tamper evidence: a changed, removed or reordered record, a truncated tail, or a row inserted without the key breaks verification at that record")
    func tamper() async throws {
        let forged = "INSERT INTO audit_log (id, at, kind, actor, user_id) VALUES ('forged', 1, 'user.deleted', 'admin:adm_root/env', 'u-victim')"
        for attack in ["UPDATE audit_log SET detail = 'nothing to see' WHERE position = 3", "DELETE FROM audit_log WHERE position = 3",
            "UPDATE audit_log SET at = at + 1 WHERE position = 3", "DELETE FROM audit_log WHERE position = 6",
            "UPDATE audit_log SET position = 100 WHERE position = 3; UPDATE audit_log SET position = 3 WHERE position = 4; UPDATE audit_log SET position = 4 WHERE position = 100",
            forged]
        {
            let deployment = try await Deployment.make()
            try await deployment.run { client in
                try await client.addIssuer()
                for index in 0..<5 { _ = try await client.registerFederated(subject: "user\(index)") }
                #expect(try await client.admin(.get, "/admin/v1/audit/verify").decode(AuditVerificationView.self).verified)
                try await deployment.store.job { db in try db.execute(attack) }
                let result = try await client.admin(.get, "/admin/v1/audit/verify").decode(AuditVerificationView.self)
                #expect(!result.verified && result.problem != nil, "\(attack)")
                #expect(result.brokenAt == (attack.contains("position = 6") ? 6 : attack == forged ? 7 : 3), "\(attack): \(result)")
                if attack == forged { #expect(result.problem?.contains("not written by this deployment") == true, "\(result)") }
            }
        }
    }

    @Test("A user sees their own security events, newest first, admins not named; retention purges old records and the chain still verifies")
    func mineAndRetention() async throws {
        let deployment = try await Deployment.make { $0.auditRetentionDays = 1 }
        try await deployment.run { client in
            try await client.addIssuer()
            _ = try await client.registerFederated(subject: "ann")
            _ = try await client.registerFederated(subject: "bob")
            let bob = try await client.signInFederated(subject: "bob")
            let ann = try await client.signInFederated(subject: "ann")
            _ = try await client.admin(.post, "/admin/v1/users/\(try await client.registerFederated(subject: "cid").userId)/sign-out")
            let mine = try await client.get("/v1/me/security-events", bearer: ann.accessToken).decode(MySecurityEvents.self)
            #expect(mine.events.map(\.type) == ["signin.succeeded", "user.registered"])
            let page = try await client.get("/v1/me/security-events?limit=1", bearer: bob.accessToken).decode(MySecurityEvents.self)
            #expect(page.events.count == 1 && page.nextCursor != nil)
            #expect(try await client.get("/v1/me/security-events?limit=1000", bearer: bob.accessToken).status == .badRequest)
            #expect(try await client.get("/v1/me/security-events?limit=101", bearer: bob.accessToken).code == "invalid_input")
            #expect(try await client.get("/v1/me/security-events").status == .unauthorized)

            let total = try await Self.records(client).count
            deployment.clock.advance(by: 2 * 86_400)
            _ = try await client.signInFederated(subject: "ann")
            let purged = try await deployment.services.audit.purgeExpired()
            #expect(purged == total)
            let left = try await Self.records(client)
            #expect(left.map(\.type) == ["audit.purged", "signin.succeeded"])
            let verified = try await client.admin(.get, "/admin/v1/audit/verify").decode(AuditVerificationView.self)
            #expect(verified.verified && verified.anchorSeq == Int64(total) && verified.checked == 2)
            #expect(try await deployment.services.audit.purgeExpired() == 0)
        }
    }
}
