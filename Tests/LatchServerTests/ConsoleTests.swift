import Foundation
import HTTPTypes
import Hummingbird
import LatchApp
import LatchCore
import LatchJOSE
import LatchModel
@testable import LatchServer
import LatchTesting
import LatchWeb
import Testing

/// The web console in process: passkey enrollment and sign-in (a software authenticator), sessions and their
/// timeouts, role checks, CSRF, forged cookies, oversized forms, escaping and headers — each refusal audited. The
/// same console in a real browser: IntegrationTests.ConsoleWalkthroughTests.
@Suite("Console")
struct ConsoleTests {
    static let origin = "https://latch.test"
    static let cookieName = "__Host-latch_console"

    /// An admin signed in to the console: its cookie, CSRF token, passkey and account.
    struct Admin {
        var cookie: String
        var csrf: String
        let authenticator: TestWebAuthnAuthenticator
        let accountID: String
    }

    /// Creates admin account `username` with `role` through the API, enrolls a passkey through its link, and signs
    /// in (enrollment signs in).
    static func enroll(_ client: Client, username: String, role: AdminRole) async throws -> Admin {
        let created = try await client.admin(.post, "/admin/v1/admins", AdminAccountRequest(username: username, role: role))
        #expect(created.status == .created, "\(String(decoding: created.body, as: UTF8.self))")
        let accountID = try created.decode(AdminAccountInfo.self).id
        let link = try await client.admin(.post, "/admin/v1/admins/\(accountID)/enrollment").decode(AdminEnrollmentLink.self)
        #expect(link.url.hasPrefix("https://latch.test/console/enroll?ticket="))
        let ticket = String(link.url.split(separator: "=", maxSplits: 1)[1])
        let authenticator = TestWebAuthnAuthenticator(rpID: "latch.test", origin: origin)
        let reply = try await enroll(client, ticket: ticket, authenticator: authenticator)
        #expect(reply.status == .ok, "\(String(decoding: reply.body, as: UTF8.self))")
        let cookie = try #require(Self.cookie(reply))
        return Admin(cookie: cookie, csrf: try await csrf(client, cookie: cookie), authenticator: authenticator, accountID: accountID)
    }

    static func enroll(_ client: Client, ticket: String, authenticator: TestWebAuthnAuthenticator) async throws -> Reply {
        let options = try await json(client, "/console/enroll/options", .object(["ticket": .string(ticket)]))
        #expect(options.status == .ok, "\(String(decoding: options.body, as: UTF8.self))")
        let challenge = options.json["publicKey"]?["challenge"]?.stringValue ?? ""
        return try await json(
            client, "/console/enroll",
            .object([
                "ticket": .string(ticket), "ceremonyId": options.json["ceremonyId"] ?? .null, "credential": authenticator.register(challenge: challenge),
            ]))
    }

    /// A passkey sign-in (or, with `admin`, a re-authentication) by `authenticator`.
    static func signIn(_ client: Client, _ authenticator: TestWebAuthnAuthenticator, accountID: String, reauthenticating admin: Admin? = nil)
        async throws -> Reply
    {
        let base = admin == nil ? "/console/sign-in" : "/console/reauth"
        var headers: HTTPFields = [:]
        if let admin {
            headers[.cookie] = "\(cookieName)=\(admin.cookie)"
            headers[.csrfToken] = admin.csrf
        }
        let options = try await json(client, base + "/options", .object([:]), headers: headers)
        #expect(options.status == .ok, "\(String(decoding: options.body, as: UTF8.self))")
        let challenge = options.json["publicKey"]?["challenge"]?.stringValue ?? ""
        let credential = try authenticator.assertion(challenge: challenge, userHandle: Base64URL.encode(Data(accountID.utf8)))
        return try await json(client, base, .object(["ceremonyId": options.json["ceremonyId"] ?? .null, "credential": credential]), headers: headers)
    }

    static func json(_ client: Client, _ path: String, _ body: JSONValue, headers extra: HTTPFields = [:]) async throws -> Reply {
        var headers: HTTPFields = [.contentType: "application/json", .origin: origin]
        headers.append(contentsOf: extra)
        return try await client.send(.post, path, headers: headers, body: String(decoding: body.serialized(), as: UTF8.self))
    }

    /// The console cookie an answer sets.
    static func cookie(_ reply: Reply) -> String? {
        for header in reply.headers[values: .setCookie] where header.hasPrefix(cookieName + "=") {
            let value = header.dropFirst(cookieName.count + 1).prefix { $0 != ";" }
            return value.isEmpty ? nil : String(value)
        }
        return nil
    }

    static func page(_ client: Client, _ path: String, cookie: String?) async throws -> Reply {
        try await client.send(.get, path, headers: cookie.map { [.cookie: "\(cookieName)=\($0)"] } ?? [:])
    }

    static func post(_ client: Client, _ path: String, cookie: String, _ form: [(String, String)], origin: String? = origin) async throws -> Reply {
        var headers: HTTPFields = [.cookie: "\(cookieName)=\(cookie)", .contentType: "application/x-www-form-urlencoded"]
        if let origin { headers[.origin] = origin }
        return try await client.send(.post, path, headers: headers, body: form.map { "\($0.0.formEscaped)=\($0.1.formEscaped)" }.joined(separator: "&"))
    }

    /// The CSRF token the console's pages carry for this session.
    static func csrf(_ client: Client, cookie: String) async throws -> String {
        let html = try await page(client, "/console/admins", cookie: cookie).text
        guard let range = html.range(of: #"name="csrf" value=""#) else { return "" }
        return String(html[range.upperBound...].prefix { $0 != "\"" })
    }

    static func records(_ client: Client, _ type: String) async throws -> [AuditRecordView] {
        try await client.admin(.get, "/admin/v1/audit?limit=500&type=\(type)").decode(AuditPage.self).records
    }

    @Test("An enrollment link enrolls a passkey once and signs in; the passkey signs in again, each assertion once; sign-out ends the session — all audited")
    func enrollAndSignIn() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            let owner = try await Self.enroll(client, username: "olivia", role: .owner)
            let overview = try await Self.page(client, "/console", cookie: owner.cookie)
            #expect(overview.status == .ok && overview.text.contains("<h1 id=\"title\">Overview</h1>") && overview.text.contains("olivia"))
            // The link again: spent. A second link for the account works (a second passkey).
            let link = try await client.admin(.post, "/admin/v1/admins/\(owner.accountID)/enrollment").decode(AdminEnrollmentLink.self)
            let ticket = String(link.url.split(separator: "=", maxSplits: 1)[1])
            let second = TestWebAuthnAuthenticator(rpID: "latch.test", origin: Self.origin)
            #expect(try await Self.enroll(client, ticket: ticket, authenticator: second).status == .ok)
            // A ceremony begun before the link was spent is refused when it completes (the unit that stores a passkey decides).
            let third = TestWebAuthnAuthenticator(rpID: "latch.test", origin: Self.origin)
            let link3 = try await client.admin(.post, "/admin/v1/admins/\(owner.accountID)/enrollment").decode(AdminEnrollmentLink.self)
            let ticket3 = String(link3.url.split(separator: "=", maxSplits: 1)[1])
            let early = try await Self.json(client, "/console/enroll/options", .object(["ticket": .string(ticket3)]))
            #expect(try await Self.enroll(client, ticket: ticket3, authenticator: TestWebAuthnAuthenticator(rpID: "latch.test", origin: Self.origin)).status == .ok)
            let late = try await Self.json(
                client, "/console/enroll",
                .object([
                    "ticket": .string(ticket3), "ceremonyId": early.json["ceremonyId"] ?? .null,
                    "credential": third.register(challenge: early.json["publicKey"]?["challenge"]?.stringValue ?? ""),
                ]))
            #expect(late.status == .badRequest && late.json["error_description"]?.stringValue?.contains("used before") == true, "\(late.json)")
            #expect(try await deployment.count("admin_passkeys") == 3)
            // A spent link says so before the authenticator makes a credential: on its page and at its options.
            let spent = try await Self.page(client, "/console/enroll?ticket=\(ticket)", cookie: nil)
            #expect(spent.status == .badRequest && spent.text.contains("used before") && !spent.text.contains("data-passkey"))
            #expect(try await Self.json(client, "/console/enroll/options", .object(["ticket": .string(ticket)])).code == "invalid_input")
            // A forged or truncated ticket.
            #expect(try await Self.json(client, "/console/enroll/options", .object(["ticket": "forged"])).code == "invalid_input")
            #expect(try await Self.page(client, "/console/enroll?ticket=\(ticket.dropLast(4))", cookie: nil).status == .badRequest)
            // Sign in with the first passkey; the same assertion twice signs in once.
            let signedIn = try await Self.signIn(client, owner.authenticator, accountID: owner.accountID)
            #expect(signedIn.status == .ok && signedIn.json["redirect"]?.stringValue == "/console")
            let cookie = try #require(Self.cookie(signedIn))
            #expect(try await Self.page(client, "/console/users", cookie: cookie).status == .ok)
            let options = try await Self.json(client, "/console/sign-in/options", .object([:]))
            let challenge = options.json["publicKey"]?["challenge"]?.stringValue ?? ""
            let assertion = try owner.authenticator.assertion(challenge: challenge, userHandle: Base64URL.encode(Data(owner.accountID.utf8)))
            let body: JSONValue = .object(["ceremonyId": options.json["ceremonyId"] ?? .null, "credential": assertion])
            #expect(try await Self.json(client, "/console/sign-in", body).status == .ok)
            #expect(try await Self.json(client, "/console/sign-in", body).code == "unauthorized")
            // A passkey of no account, and another account's user handle.
            let stranger = TestWebAuthnAuthenticator(rpID: "latch.test", origin: Self.origin)
            #expect(try await Self.signIn(client, stranger, accountID: owner.accountID).code == "unauthorized")
            #expect(try await Self.signIn(client, second, accountID: "adm_root").code == "unauthorized")
            // Another origin's assertion.
            let phishing = TestWebAuthnAuthenticator(rpID: "latch.test", origin: "https://latch.test.evil.example")
            #expect(try await Self.signIn(client, phishing, accountID: owner.accountID).code == "unauthorized")
            // Sign-out revokes the session's token: the cookie no longer works.
            let csrf = try await Self.csrf(client, cookie: cookie)
            let out = try await Self.post(client, "/console/sign-out", cookie: cookie, [("csrf", csrf)])
            #expect(out.status == .seeOther && out.headers[.location] == "/console/sign-in?reason=signed-out")
            let after = try await Self.page(client, "/console", cookie: cookie)
            #expect(after.status == .seeOther && after.headers[.location] == "/console/sign-in?reason=ended")
            // The records.
            #expect(try await Self.records(client, "admin.admins.enrollment_link").count == 3)
            #expect(try await Self.records(client, "admin.passkeys.create").count == 3)
            let signIns = try await Self.records(client, "admin.console.signin")
            #expect(signIns.count == 5 && signIns.allSatisfy { $0.actor.hasPrefix("admin:\(owner.accountID)/cs_") })
            #expect(try await Self.records(client, "admin.console.signin_failed").count == 4)
            #expect(try await Self.records(client, "admin.console.signout").count == 1)
            #expect(try await client.admin(.get, "/admin/v1/audit/verify").decode(AuditVerificationView.self).verified)
        }
    }

    @Test("Refused and audited, nothing changed: no CSRF token, a wrong one, another origin, a forged cookie, an oversized form; a role below the route's")
    func refusals() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            let owner = try await Self.enroll(client, username: "olivia", role: .owner)
            try await client.addIssuer()
            let user = try await client.registerFederated(subject: "zoe").userId
            _ = try await client.signInFederated(subject: "zoe")
            let path = "/console/users/\(user)/sign-out"
            // No token, a wrong one, a right one from another origin.
            for (form, origin) in [([("x", "1")], Self.origin), ([("csrf", "wrong")], Self.origin), ([("csrf", owner.csrf)], "https://evil.example")] {
                let reply = try await Self.post(client, path, cookie: owner.cookie, form, origin: origin)
                #expect(reply.status == .forbidden && reply.text.contains("invalid_csrf_token"), "\(form) \(origin)")
            }
            #expect(try await Self.records(client, "admin.console.csrf_refused").count == 3)
            #expect(try await Self.records(client, "user.sessions_revoked").isEmpty)
            // Oversized.
            let big = try await Self.post(client, path, cookie: owner.cookie, [("csrf", owner.csrf), ("pad", String(repeating: "a", count: 20_000))])
            #expect(big.status.code == 413 && big.text.contains("request_too_large"))
            #expect(try await Self.records(client, "admin.console.form_refused").count == 1)
            // A forged cookie: to the sign-in page, the cookie cleared, audited.
            for forged in ["not-a-cookie", String(owner.cookie.reversed()), String(owner.cookie.dropLast(3)) + "AAA"] {
                let reply = try await Self.page(client, "/console/users", cookie: forged)
                #expect(reply.status == .seeOther && reply.headers[.location] == "/console/sign-in?reason=invalid")
                #expect(reply.headers[values: .setCookie].contains { $0.hasPrefix(Self.cookieName + "=;") && $0.contains("Max-Age=0") })
            }
            #expect(try await Self.records(client, "admin.console.session_refused").count == 3)
            // A cookie-less action: to sign-in.
            let none = try await client.send(.post, path, headers: [.contentType: "application/x-www-form-urlencoded"], body: "csrf=x")
            #expect(none.status == .seeOther && none.headers[.location] == "/console/sign-in")
            #expect(try await Self.records(client, "user.sessions_revoked").isEmpty)
            // The right form works.
            let ok = try await Self.post(client, path, cookie: owner.cookie, [("csrf", owner.csrf)])
            #expect(ok.status == .seeOther && ok.headers[.location] == "/console/users/\(user)?done=signed-out-user")
            let revoked = try await Self.records(client, "user.sessions_revoked")
            #expect(revoked.count == 1 && revoked.first?.actor.hasPrefix("admin:\(owner.accountID)/cs_") == true)

            // Roles: support reads users and revokes sessions, nothing else; auditor reads, never writes.
            let support = try await Self.enroll(client, username: "sam", role: .support)
            #expect(try await Self.page(client, "/console/users/\(user)", cookie: support.cookie).status == .ok)
            for page in ["/console/apps", "/console/test-keys", "/console/audit", "/console/signing-keys", "/console/issuers"] {
                let reply = try await Self.page(client, page, cookie: support.cookie)
                #expect(reply.status == .forbidden && reply.text.contains("forbidden"), "support on \(page)")
            }
            let keys = try await Self.post(client, "/console/test-keys", cookie: support.cookie, [("csrf", support.csrf)])
            #expect(keys.status == .forbidden)
            #expect(try await Self.post(client, path, cookie: support.cookie, [("csrf", support.csrf)]).status == .seeOther)
            let auditor = try await Self.enroll(client, username: "ava", role: .auditor)
            #expect(try await Self.page(client, "/console/audit", cookie: auditor.cookie).status == .ok)
            #expect(try await Self.post(client, path, cookie: auditor.cookie, [("csrf", auditor.csrf)]).status == .forbidden)
            #expect(try await Self.post(client, "/console/signing-keys/rotate", cookie: auditor.cookie, [("csrf", auditor.csrf)]).status == .forbidden)
            let forbidden = try await Self.records(client, "admin.access.forbidden")
            #expect(forbidden.count == 8 && forbidden.allSatisfy { $0.detail?.hasPrefix("console: role") == true })
            // The navigation shows a role the areas it may open; support manages its own tokens on the Admins page.
            let supportPage = try await Self.page(client, "/console/users", cookie: support.cookie).text
            #expect(supportPage.contains("id=\"nav-users\"") && supportPage.contains("id=\"nav-admins\"") && !supportPage.contains("id=\"nav-apps\"") && !supportPage.contains("id=\"nav-audit\""))
            let supportAdmins = try await Self.page(client, "/console/admins", cookie: support.cookie)
            #expect(supportAdmins.status == .ok && supportAdmins.text.contains("id=\"create-token\"") && !supportAdmins.text.contains("id=\"admins-table\""))
            // Pages leave out what the role cannot do.
            #expect(!(try await Self.page(client, "/console/users/\(user)", cookie: support.cookie).text.contains("id=\"delete-user\"")))
            #expect(try await Self.page(client, "/console/users/\(user)", cookie: owner.cookie).text.contains("id=\"delete-user\""))
            // A CSRF token is the session's: another session's is refused.
            #expect(try await Self.post(client, path, cookie: support.cookie, [("csrf", owner.csrf)]).status == .forbidden)
        }
    }

    @Test("A user's sessions and devices: listed by the API and on the console's user page; one session revoked from either, recorded; refusals write nothing")
    func sessionsAndDevices() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            let owner = try await Self.enroll(client, username: "olivia", role: .owner)
            let deviceKey = try PrivateKey.generate(.ES256)
            let user = try await client.registerWithTestKey(username: "dora", deviceKey: deviceKey).userId
            for _ in 0..<2 { #expect(try await client.signInWithKey(username: "dora", deviceKey: deviceKey).status == .ok) }
            let sessions = try await client.admin(.get, "/admin/v1/users/\(user)/sessions").decode(AdminUserSessionList.self).sessions
            #expect(sessions.count == 2 && sessions.allSatisfy { $0.clientId == "default" && !$0.dpopBound })
            let devices = try await client.admin(.get, "/admin/v1/users/\(user)/devices").decode(AdminUserDeviceList.self).devices
            #expect(devices.map(\.keyId) == ["device-1"] && devices.first?.algorithm == "ES256" && devices.first?.attestation == nil)
            #expect(try await client.admin(.get, "/admin/v1/users/nobody/sessions").status == .notFound)
            // The console page shows both; revoke the newest from it.
            let page = try await Self.page(client, "/console/users/\(user)", cookie: owner.cookie).text
            #expect(page.contains("id=\"session-\(sessions[0].id)\"") && page.contains("id=\"device-device-1\""))
            let revoked = try await Self.post(client, "/console/users/\(user)/sessions/\(sessions[0].id)/revoke", cookie: owner.cookie, [("csrf", owner.csrf)])
            #expect(revoked.status == .seeOther && revoked.headers[.location] == "/console/users/\(user)?done=revoked-session")
            let records = try await Self.records(client, "admin.sessions.revoke")
            #expect(records.count == 1 && records.first?.subject == user && records.first?.detail?.contains(sessions[0].id) == true)
            // Again, or another user's session id: not found, nothing written. The API revokes the other.
            #expect(try await client.admin(.delete, "/admin/v1/users/\(user)/sessions/\(sessions[0].id)").status == .notFound)
            #expect(try await client.admin(.delete, "/admin/v1/users/someone-else/sessions/\(sessions[1].id)").status == .notFound)
            #expect(try await Self.records(client, "admin.sessions.revoke").count == 1)
            #expect(try await client.admin(.delete, "/admin/v1/users/\(user)/sessions/\(sessions[1].id)").status == .noContent)
            #expect(try await client.admin(.get, "/admin/v1/users/\(user)/sessions").decode(AdminUserSessionList.self).sessions.isEmpty)
            #expect(try await Self.records(client, "admin.sessions.revoke").count == 2)
        }
    }

    @Test("Sign-in and enrollment calls are rate-limited per address like every unauthenticated endpoint that writes")
    func rateLimited() async throws {
        // 18 a minute: bursts of 3 (a sixth), the frozen test clock refills nothing.
        let deployment = try await Deployment.make { $0.rateLimitPerMinute = 18 }
        try await deployment.run { client in
            var statuses: [Int] = []
            for _ in 0..<4 { statuses.append(Int(try await Self.json(client, "/console/sign-in/options", .object([:])).status.code)) }
            #expect(statuses == [200, 200, 200, 429])
            #expect(try await Self.json(client, "/console/enroll/options", .object(["ticket": "x"])).status.code == 429)
            // Pages of signed-in admins are not counted against it.
            #expect(try await client.get("/console/assets/console.css").status == .ok)
        }
    }

    @Test("Sessions end after 30 idle minutes, 12 hours whatever happens, and with their account; dangerous actions need a passkey check in the last 5 minutes")
    func timeouts() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            var owner = try await Self.enroll(client, username: "olivia", role: .owner)
            try await client.addIssuer()
            let user = try await client.registerFederated(subject: "zoe").userId
            // Idle: 29 minutes is fine (and slides the window), 31 more is not.
            deployment.clock.advance(by: 29 * 60)
            let active = try await Self.page(client, "/console", cookie: owner.cookie)
            #expect(active.status == .ok)
            owner.cookie = Self.cookie(active) ?? owner.cookie
            // Dangerous: the passkey check is 29 minutes old.
            let delete = try await Self.post(client, "/console/users/\(user)/delete", cookie: owner.cookie, [("csrf", owner.csrf), ("back", "/console/users/\(user)")])
            #expect(delete.status == .unauthorized && delete.text.contains("Confirm it is you") && delete.text.contains("data-next=\"/console/users/\(user)\""))
            #expect(try await client.admin(.get, "/admin/v1/users/\(user)").status == .ok)
            // Re-authentication: another account's passkey is refused; the session's own works, without a CSRF token not.
            let noToken = try await Self.json(client, "/console/reauth/options", .object([:]), headers: [.cookie: "\(Self.cookieName)=\(owner.cookie)", .csrfToken: "wrong"])
            #expect(noToken.code == "invalid_csrf_token")
            let other = try await Self.enroll(client, username: "oscar2", role: .owner)
            let borrowed = try await Self.signIn(client, other.authenticator, accountID: other.accountID, reauthenticating: owner)
            #expect(borrowed.code == "unauthorized" && borrowed.json["error_description"]?.stringValue?.contains("signed-in account") == true)
            let reauthenticated = try await Self.signIn(client, owner.authenticator, accountID: owner.accountID, reauthenticating: owner)
            #expect(reauthenticated.status == .ok, "\(reauthenticated.json)")
            owner.cookie = try #require(Self.cookie(reauthenticated))
            let deleted = try await Self.post(client, "/console/users/\(user)/delete", cookie: owner.cookie, [("csrf", owner.csrf)])
            #expect(deleted.status == .seeOther && deleted.headers[.location] == "/console/users?done=deleted-user")
            #expect(try await client.admin(.get, "/admin/v1/users/\(user)").status == .notFound)
            #expect(try await Self.records(client, "admin.console.reauthenticated").count == 1)
            // Idle too long.
            deployment.clock.advance(by: 31 * 60)
            let idle = try await Self.page(client, "/console", cookie: owner.cookie)
            #expect(idle.status == .seeOther && idle.headers[.location] == "/console/sign-in?reason=idle")
            // Absolute: active every 20 minutes, the session still ends 12 hours after sign-in.
            let signedIn = try await Self.signIn(client, owner.authenticator, accountID: owner.accountID)
            var cookie = try #require(Self.cookie(signedIn))
            var lastOK = 0
            for step in 1...40 {
                deployment.clock.advance(by: 20 * 60)
                let reply = try await Self.page(client, "/console", cookie: cookie)
                guard reply.status == .ok else {
                    #expect(reply.headers[.location] == "/console/sign-in?reason=ended")
                    break
                }
                lastOK = step
                cookie = Self.cookie(reply) ?? cookie
            }
            #expect(lastOK == 35, "the session lasted \(lastOK * 20) minutes")
            // Deleting the account ends its sessions at once.
            let second = try await Self.enroll(client, username: "oscar", role: .admin)
            #expect(try await Self.page(client, "/console", cookie: second.cookie).status == .ok)
            #expect(try await client.admin(.delete, "/admin/v1/admins/\(second.accountID)").status == .noContent)
            #expect(try await Self.page(client, "/console", cookie: second.cookie).headers[.location] == "/console/sign-in?reason=ended")
            #expect(try await deployment.count("admin_passkeys") == 2, "olivia's and oscar2's; oscar's went with the account")
        }
    }

    @Test("Every page renders for an owner with strict headers, values escaped (XSS probes), the cookie HttpOnly, Secure, SameSite=Strict, __Host-")
    func pagesAndHeaders() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            let probe = "<img src=x onerror=alert(1)>"
            _ = try await client.admin(.post, "/admin/v1/clients", AdminClientRequest(clientId: "xss", name: "<script>alert(2)</script>"))
            _ = try await client.admin(.post, "/admin/v1/admins", AdminAccountRequest(username: probe, role: .auditor))
            let owner = try await Self.enroll(client, username: "olivia", role: .owner)
            try await client.addIssuer()
            // Probes in a claim value, an upstream IdP's name and a custom provider's name.
            let assertion = try client.federatedAssertion(subject: "zoe", extra: ["custom:entitlementsSet": .string("<svg onload=alert(3)>")])
            let registered = try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: assertion))
            #expect(registered.status == .created, "\(String(decoding: registered.body, as: UTF8.self))")
            let user = try registered.decode(RegistrationResponse.self).userId
            let idp = try await client.adminRaw(
                .post, "/admin/v1/upstream-idps",
                #"{"id":"corp","displayName":"<iframe src=//evil.example>","issuer":"https://idp.example.com","clientId":"latch","clientSecret":"s3cret-value"}"#)
            #expect(idp.status == .created, "\(String(decoding: idp.body, as: UTF8.self))")
            let provider = try await client.adminRaw(
                .post, "/admin/v1/custom-providers",
                #"{"id":"crm","name":"<b onmouseover=alert(4)>CRM</b>","flow":"one_step","hookURL":"https://hooks.example.com/latch","hookSecret":"a-very-secret-hook-key"}"#)
            #expect(provider.status == .created, "\(String(decoding: provider.body, as: UTF8.self))")
            for path in ConsoleView.navigation.map(\.href) + ["/console/users/\(user)", "/console/audit?type=admin."] {
                let reply = try await Self.page(client, path, cookie: owner.cookie)
                #expect(reply.status == .ok, "\(path): \(reply.status) \(reply.text.prefix(400))")
                let csp = reply.headers[.contentSecurityPolicy] ?? ""
                #expect(csp.contains("frame-ancestors 'none'") && csp.contains("script-src 'self'") && !csp.contains("unsafe"), "\(path)")
                #expect(reply.headers[.xFrameOptions] == "DENY" && reply.headers[.cacheControl] == "no-store" && reply.headers[.xContentTypeOptions] == "nosniff")
                for raw in ["<script>alert", probe, "<svg onload", "<iframe src=//evil", "<b onmouseover"] {
                    #expect(!reply.text.contains(raw), "\(path) echoes \(raw)")
                }
            }
            #expect(try await Self.page(client, "/console/apps", cookie: owner.cookie).text.contains("&lt;script&gt;alert(2)&lt;/script&gt;"))
            #expect(try await Self.page(client, "/console/admins", cookie: owner.cookie).text.contains("&lt;img src=x onerror=alert(1)&gt;"))
            #expect(try await Self.page(client, "/console/users/\(user)", cookie: owner.cookie).text.contains("&lt;svg onload=alert(3)&gt;"))
            #expect(try await Self.page(client, "/console/upstream-idps", cookie: owner.cookie).text.contains("&lt;iframe src=//evil.example&gt;"))
            // A provider disabled, then deleted; the upstream IdP deleted: each recorded as the API's change would be.
            let disabled = try await Self.post(client, "/console/custom-providers/crm/enabled", cookie: owner.cookie, [("csrf", owner.csrf), ("enabled", "false")])
            #expect(disabled.status == .seeOther && disabled.headers[.location] == "/console/custom-providers?done=saved-provider")
            #expect(try await client.admin(.get, "/admin/v1/custom-providers/crm").json["enabled"] == .bool(false))
            #expect(try await Self.post(client, "/console/custom-providers/crm/delete", cookie: owner.cookie, [("csrf", owner.csrf)]).status == .seeOther)
            #expect(try await Self.post(client, "/console/upstream-idps/corp/delete", cookie: owner.cookie, [("csrf", owner.csrf)]).status == .seeOther)
            #expect(try await client.admin(.get, "/admin/v1/upstream-idps/corp").status == .notFound)
            for type in ["admin.custom_providers.update", "admin.custom_providers.delete", "admin.upstream_idps.delete"] {
                #expect(try await Self.records(client, type).first?.actor.hasPrefix("admin:\(owner.accountID)/cs_") == true, "\(type)")
            }
            // The cookie's attributes.
            let signedIn = try await Self.signIn(client, owner.authenticator, accountID: owner.accountID)
            let header = try #require(signedIn.headers[values: .setCookie].first { $0.hasPrefix(Self.cookieName) })
            for attribute in ["Path=/", "HttpOnly", "SameSite=Strict", "Secure", "Max-Age=43200"] { #expect(header.contains(attribute), "\(header)") }
            // Static assets, and the sign-in page without a session.
            #expect(try await client.get("/console/assets/console.js").headers[.contentType]?.hasPrefix("text/javascript") == true)
            let signIn = try await Self.page(client, "/console/sign-in", cookie: nil)
            #expect(signIn.status == .ok && signIn.text.contains("data-passkey=\"sign-in\""))
            #expect(try await Self.page(client, "/console/sign-in", cookie: owner.cookie).headers[.location] == "/console")
            // Flash messages come from a fixed set: a link cannot write on the console.
            let flash = try await Self.page(client, "/console/users?done=Your%20account%20is%20locked", cookie: owner.cookie)
            #expect(!flash.text.contains("Your account is locked") && !flash.text.contains("id=\"flash\""))
            // The one-time secrets: a generated test key and an admin token are shown once, then never again.
            let created = try await Self.post(client, "/console/test-keys", cookie: owner.cookie, [("csrf", owner.csrf), ("keyId", "ci-key")])
            #expect(created.status == .ok && created.text.contains("BEGIN PRIVATE KEY") && created.text.contains("download=\"ci-key.pem\""))
            #expect(!(try await Self.page(client, "/console/test-keys", cookie: owner.cookie).text.contains("BEGIN PRIVATE KEY")))
            let token = try await Self.post(client, "/console/tokens", cookie: owner.cookie, [("csrf", owner.csrf), ("name", "ci"), ("days", "7")])
            let secret = try #require(token.text.range(of: #"<pre id="created-token-value">"#).map { String(token.text[$0.upperBound...].prefix { $0 != "<" }) })
            #expect(try await client.send(.get, "/admin/v1/tokens", headers: [.authorization: "Bearer \(secret)"]).status == .ok)
            // Bad values are refused with their code, nothing written.
            let bad = try await Self.post(client, "/console/tokens", cookie: owner.cookie, [("csrf", owner.csrf), ("name", "x"), ("days", "999")])
            #expect(bad.status == .badRequest && bad.text.contains("invalid_input"))
            // The app form as the page renders it (its DPoP value the app's) saves.
            let apps = try await Self.page(client, "/console/apps", cookie: owner.cookie).text
            #expect(apps.contains(#"<option value="allowed" selected>"#), "the DPoP select shows the app's value")
            let saved = try await Self.post(
                client, "/console/apps/default", cookie: owner.cookie,
                [("csrf", owner.csrf), ("redirectUris", "https://app.example.com/cb\nhttps://app.example.com/cb2"), ("postLogoutRedirectUris", ""), ("dpop", "allowed")])
            #expect(saved.status == .seeOther && saved.headers[.location] == "/console/apps?done=saved-app", "\(saved.text.prefix(400))")
            let clients = try await client.admin(.get, "/admin/v1/clients").decode(AdminClientList.self).clients
            #expect(clients.first { $0.clientId == "default" }?.redirectUris == ["https://app.example.com/cb", "https://app.example.com/cb2"])
            let badApp = try await Self.post(client, "/console/apps/default", cookie: owner.cookie, [("csrf", owner.csrf), ("redirectUris", "javascript:alert(1)")])
            #expect(badApp.status == .badRequest, "\(badApp.text.prefix(300))")
            #expect(try await Self.page(client, "/console/nope", cookie: owner.cookie).status == .notFound)
        }
    }
}

extension Reply {
    var text: String { String(decoding: body, as: UTF8.self) }
}
