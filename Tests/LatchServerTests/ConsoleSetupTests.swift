import Crypto
import Foundation
import HTTPTypes
import LatchCore
import LatchJOSE
import LatchModel
@testable import LatchServer
import LatchTesting
import Testing

/// The console's forms that add issuers, upstream identity providers and custom providers, and edit an app's device
/// evidence and signing certificates — each posted as the page renders it, checked through the API.
extension ConsoleTests {
    /// The fields form `id` on `html` would post as rendered (hidden and text inputs, checked boxes, textareas,
    /// selected options), with `changes` applied.
    static func rendered(_ html: String, form id: String, _ changes: [String: String] = [:]) throws -> [(String, String)] {
        let start = try #require(html.range(of: #"id="\#(id)" class="stacked">"#), "no form \(id)")
        let end = try #require(html.range(of: "</form>", range: start.upperBound..<html.endIndex))
        let body = String(html[start.upperBound..<end.lowerBound])
        func unescaped(_ text: Substring) -> String {
            text.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&quot;", with: "\"")
                .replacingOccurrences(of: "&#39;", with: "'").replacingOccurrences(of: "&amp;", with: "&")
        }
        var fields: [(String, String)] = []
        for match in body.matches(of: try Regex(#"<input type="([a-z]+)"(?: id="[^"]*")? name="([^"]*)" value="([^"]*)"([^>]*)>"#)) {
            let type = match.output[1].substring ?? ""
            if type == "checkbox", !(match.output[4].substring ?? "").contains("checked") { continue }
            fields.append((String(match.output[2].substring ?? ""), unescaped(match.output[3].substring ?? "")))
        }
        for match in body.matches(of: try Regex(#"<textarea id="[^"]*" name="([^"]*)"[^>]*>([^<]*)</textarea>"#)) {
            fields.append((String(match.output[1].substring ?? ""), unescaped(match.output[2].substring ?? "")))
        }
        for match in body.matches(of: try Regex(#"<select id="[^"]*" name="([^"]*)">(.*?)</select>"#)) {
            let options = match.output[2].substring ?? ""
            let selected = try options.firstMatch(of: try Regex(#"<option value="([^"]*)" selected>"#)) ?? options.firstMatch(of: try Regex(#"<option value="([^"]*)""#))
            fields.append((String(match.output[1].substring ?? ""), unescaped(selected?.output[1].substring ?? "")))
        }
        var seen = Set<String>()
        fields = fields.map { name, value in
            seen.insert(name)
            return (name, changes[name] ?? value)
        }
        for (name, value) in changes where !seen.contains(name) { fields.append((name, value)) }
        return fields
    }

    @Test("Console setup forms, posted as rendered: an issuer key (then used to register), an upstream IdP, a custom provider, app device evidence (secrets write-only, kept when left empty), signing certificates; bad values refused, nothing written; roles without the route see no form")
    func setupForms() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            let owner = try await Self.enroll(client, username: "olivia", role: .owner)

            // An issuer key: the console adds it; a JWT it signs registers a user.
            let issuerKey = try PrivateKey.generate(.ES256)
            let issuers = try await Self.page(client, "/console/issuers", cookie: owner.cookie).text
            let added = try await Self.post(
                client, "/console/issuers", cookie: owner.cookie,
                try Self.rendered(
                    issuers, form: "add-issuer",
                    ["name": "console-co", "keyId": "c1", "publicKey": issuerKey.publicKey.pemRepresentation, "allowedClaims": "custom:tier, custom:region"]))
            #expect(added.status == .seeOther && added.headers[.location] == "/console/issuers?done=added-issuer", "\(added.text.prefix(400))")
            let stored = try await client.admin(.get, "/admin/v1/issuers").decode(AdminSignOnIssuerList.self).issuers.first { $0.name == "console-co" }
            #expect(stored?.algorithm == "ES256" && stored?.allowedClaims == ["custom:tier", "custom:region"])
            let assertion = try client.federatedAssertion(subject: "carol", issuer: "console-co", keyID: "c1", key: issuerKey, extra: ["custom:tier": "gold"])
            #expect(try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: assertion)).status == .created)
            #expect(try await Self.records(client, "admin.issuers.create").first?.actor.hasPrefix("admin:\(owner.accountID)/cs_") == true)
            #expect(try await Self.page(client, "/console/issuers?done=added-issuer", cookie: owner.cookie).text.contains("issuer-console-co-c1"))

            // An upstream IdP: listed with its callback URL; its secret never shown.
            let idps = try await Self.page(client, "/console/upstream-idps", cookie: owner.cookie).text
            let idp = try await Self.post(
                client, "/console/upstream-idps", cookie: owner.cookie,
                try Self.rendered(
                    idps, form: "add-idp",
                    ["id": "corp", "displayName": "Corp SSO", "issuer": "https://idp.example.com", "clientId": "latch", "clientSecret": "upstream-s3cret",
                     "scopes": "openid email", "allowedEmailDomains": "example.com", "useUserinfo": "true"]))
            #expect(idp.status == .seeOther, "\(idp.text.prefix(400))")
            let corp = try await client.admin(.get, "/admin/v1/upstream-idps/corp").decode(AdminUpstreamIdP.self)
            #expect(corp.displayName == "Corp SSO" && corp.scopes == ["openid", "email"] && corp.allowedEmailDomains == ["example.com"] && corp.useUserinfo)
            #expect(corp.hasClientSecret && corp.clientAuthentication == "client_secret_basic")
            let listed = try await Self.page(client, "/console/upstream-idps", cookie: owner.cookie).text
            #expect(listed.contains(corp.callbackURL) && !listed.contains("upstream-s3cret"))

            // A custom provider.
            let providers = try await Self.page(client, "/console/custom-providers", cookie: owner.cookie).text
            let provider = try await Self.post(
                client, "/console/custom-providers", cookie: owner.cookie,
                try Self.rendered(
                    providers, form: "add-provider",
                    ["id": "crm", "name": "CRM", "flow": "two_step", "hookURL": "https://hooks.example.com/latch", "hookSecret": "a-very-secret-hook-key",
                     "timeout": "7"]))
            #expect(provider.status == .seeOther, "\(provider.text.prefix(400))")
            let crm = try await client.admin(.get, "/admin/v1/custom-providers/crm").json
            #expect(crm["flow"] == "two_step" && crm["timeout"] == .int(7) && crm["enabled"] == .bool(true))
            #expect(!(try await Self.page(client, "/console/custom-providers", cookie: owner.cookie).text.contains("a-very-secret-hook-key")))

            // Device evidence: both platforms with their secrets; the secrets are not shown, and kept when the rendered
            // form is saved again with their fields empty.
            let deviceCheckKey = P256.Signing.PrivateKey().pemRepresentation
            let decryptionKey = Data((0..<32).map { UInt8($0) }).base64EncodedString()
            let verificationKey = P256.Signing.PrivateKey().publicKey.derRepresentation.base64EncodedString()
            let apps = try await Self.page(client, "/console/apps", cookie: owner.cookie).text
            let evidence = try await Self.post(
                client, "/console/apps/default/evidence", cookie: owner.cookie,
                try Self.rendered(
                    apps, form: "evidence-default",
                    ["appIds": "ABCDE12345.com.example.app", "appAttestEnvironment": "development", "deviceCheckTeamId": "ABCDE12345",
                     "deviceCheckKeyId": "KEY1234567", "deviceCheckPrivateKey": deviceCheckKey, "packageNames": "com.example.app",
                     "playIntegrityVerificationKey": verificationKey, "playIntegrityDecryptionKey": decryptionKey]))
            #expect(evidence.status == .seeOther && evidence.headers[.location] == "/console/apps?done=saved-evidence", "\(evidence.text.prefix(400))")
            func app() async throws -> AdminClient? {
                try await client.admin(.get, "/admin/v1/clients").decode(AdminClientList.self).clients.first { $0.clientId == "default" }
            }
            let saved = try await app()
            #expect(saved?.ios?.appIds == ["ABCDE12345.com.example.app"] && saved?.ios?.appAttestEnvironment == "development")
            #expect(saved?.ios?.deviceCheck?.teamId == "ABCDE12345" && saved?.ios?.deviceCheck?.hasPrivateKey == true)
            #expect(saved?.android?.packageNames == ["com.example.app"] && saved?.android?.playIntegrity?.hasDecryptionKey == true)
            let again = try await Self.page(client, "/console/apps", cookie: owner.cookie).text
            #expect(!again.contains("PRIVATE KEY") && !again.contains(decryptionKey) && again.contains("A key is stored"))
            let resaved = try await Self.post(client, "/console/apps/default/evidence", cookie: owner.cookie, try Self.rendered(again, form: "evidence-default"))
            #expect(resaved.status == .seeOther, "\(resaved.text.prefix(400))")
            #expect(try await app() == saved)
            let updates = try await Self.records(client, "admin.clients.update")
            #expect(updates.count == 2)

            // Signing certificates: added (owned by the console's admin account), listed, deleted.
            let sha = String(repeating: "ab", count: 32)
            let certificate = try await Self.post(
                client, "/console/apps/default/signing-certificates", cookie: owner.cookie,
                try Self.rendered(again, form: "add-certificate-default", ["sha256": sha.uppercased()]))
            #expect(certificate.status == .seeOther, "\(certificate.text.prefix(400))")
            let certificates = try await client.admin(.get, "/admin/v1/clients/default/signing-certificates").decode(AdminSigningCertificateList.self)
            #expect(certificates.signingCertificates.map(\.sha256) == [sha] && certificates.signingCertificates.first?.owner == owner.accountID)
            #expect(try await Self.page(client, "/console/apps", cookie: owner.cookie).text.contains("certificate-default-\(sha)"))
            let deleted = try await Self.post(client, "/console/apps/default/signing-certificates/\(sha)/delete", cookie: owner.cookie, [("csrf", owner.csrf)])
            #expect(deleted.status == .seeOther)
            #expect(try await client.admin(.get, "/admin/v1/clients/default/signing-certificates").decode(AdminSigningCertificateList.self).signingCertificates.isEmpty)

            // Bad values: refused with the API's code, nothing written.
            let before = try await client.admin(.get, "/admin/v1/audit?limit=500").decode(AuditPage.self).records.count
            let bad: [(String, [(String, String)], String)] = [
                ("/console/issuers", [("name", "x"), ("keyId", "k"), ("publicKey", "not a key")], "invalid_public_key"),
                ("/console/issuers", [("name", "x"), ("keyId", "k"), ("publicKey", issuerKey.publicKey.pemRepresentation), ("maxLifetime", "soon")], "invalid_input"),
                ("/console/upstream-idps", [("id", "Bad Id"), ("displayName", "x"), ("issuer", "https://idp.example.com"), ("clientId", "c")], "invalid_input"),
                ("/console/upstream-idps", [("id", "plain"), ("displayName", "x"), ("issuer", "http://idp.example.com"), ("clientId", "c")], "invalid_input"),
                ("/console/custom-providers", [("id", "short"), ("name", "x"), ("flow", "one_step"), ("hookURL", "https://h.example.com"), ("hookSecret", "short")], "invalid_input"),
                ("/console/custom-providers", [("id", "crm"), ("name", "x"), ("flow", "one_step"), ("hookURL", "https://h.example.com"), ("hookSecret", "a-very-secret-hook-key")], "conflict"),
                ("/console/apps/default/evidence", [("appIds", "not-an-app-id"), ("packageNames", "")], "invalid_input"),
                ("/console/apps/default/evidence", [("appIds", ""), ("packageNames", "com.example.app"), ("playIntegrityDecryptionKey", "c2hvcnQ=")], "invalid_input"),
                ("/console/apps/default/signing-certificates", [("sha256", "abc")], "invalid_input"),
            ]
            for (path, fields, code) in bad {
                let reply = try await Self.post(client, path, cookie: owner.cookie, [("csrf", owner.csrf)] + fields)
                #expect((400..<500).contains(Int(reply.status.code)) && reply.text.contains(code), "\(path) \(fields): \(reply.status) \(reply.text.prefix(300))")
            }
            #expect(try await client.admin(.get, "/admin/v1/audit?limit=500").decode(AuditPage.self).records.count == before)
            #expect(try await app() == saved)
            // A refused form answers its own page with the error and what was typed — but not the secret.
            let refilled = try await Self.post(
                client, "/console/upstream-idps", cookie: owner.cookie,
                [("csrf", owner.csrf), ("id", "Bad Id"), ("displayName", "Refilled <b>SSO</b>"), ("issuer", "https://idp.example.com"), ("clientId", "c"),
                 ("clientSecret", "typed-secret-123"), ("useUserinfo", "true")])
            #expect(refilled.status == .badRequest && refilled.text.contains("<title>Upstream identity providers"), "\(refilled.text.prefix(300))")
            #expect(refilled.text.contains(#"id="error-code">invalid_input"#) && refilled.text.contains("Nothing was changed."))
            let fields = try Self.rendered(refilled.text, form: "add-idp")
            #expect(fields.contains { $0 == ("id", "Bad Id") } && fields.contains { $0 == ("displayName", "Refilled <b>SSO</b>") })
            #expect(fields.contains { $0 == ("useUserinfo", "true") } && fields.contains { $0 == ("clientSecret", "") })
            #expect(!refilled.text.contains("typed-secret-123") && !refilled.text.contains("<b>SSO</b>"))

            // A support admin is offered none of these forms, and posting them is refused (403, audited).
            let support = try await Self.enroll(client, username: "sam", role: .support)
            for (path, form) in [("/console/issuers", "add-issuer"), ("/console/upstream-idps", "add-idp"), ("/console/custom-providers", "add-provider")] {
                let page = try await Self.page(client, path, cookie: support.cookie)
                #expect(page.status == .forbidden || !page.text.contains(#"id="\#(form)""#), "\(path)")
            }
            let refused = try await Self.post(
                client, "/console/apps/default/evidence", cookie: support.cookie, [("csrf", support.csrf), ("appIds", ""), ("packageNames", "")])
            #expect(refused.status == .forbidden)
            #expect(try await app() == saved)
        }
    }

    @Test("Login issuers in the console: one added with a static key (as rendered) and used to log in; a consumer logged out everywhere; a resource server's secret shown once; deletions; refusals refill the form")
    func loginIssuers() async throws {
        let deployment = try await Deployment.make()
        try await deployment.run { client in
            let owner = try await Self.enroll(client, username: "olivia", role: .owner)
            let page = try await Self.page(client, "/console/login-issuers", cookie: owner.cookie)
            #expect(page.status == .ok && page.text.contains("No login issuers yet."))
            let added = try await Self.post(
                client, "/console/login-issuers", cookie: owner.cookie,
                try Self.rendered(
                    page.text, form: "add-login-issuer",
                    ["issuerId": "bank", "audience": IssuerLoginFlowTests.bankAudience, "kid": "b1",
                     "publicKey": IssuerLoginFlowTests.bankKey.publicKey.pemRepresentation, "allowedScopes": "payments"]))
            #expect(added.status == .seeOther && added.headers[.location] == "/console/login-issuers?done=added-login-issuer", "\(added.text.prefix(400))")
            let issuers = try await client.admin(.get, "/admin/v1/login-issuers").decode(AdminLoginIssuerList.self).loginIssuers
            #expect(issuers.map(\.issuerId) == ["bank"] && issuers.first?.keys.first?.algorithm == "ES256" && issuers.first?.allowedScopes == ["payments"])
            // Its token logs consumer c-1 in; the console logs c-1 out of bank everywhere.
            let login = try await client.postForm(
                "/oauth2/token", [("grant_type", GrantType.issuerLogin), ("issuer_token", try IssuerLoginFlowTests.bankToken(client, ["c-1"]))])
            #expect(login.status == .ok, "\(login.text.prefix(300))")
            let listed = try await Self.page(client, "/console/login-issuers", cookie: owner.cookie).text
            #expect(listed.contains("login-issuer-bank") && listed.contains("b1 (ES256)"))
            let empty = try await Self.post(client, "/console/login-issuers/bank/logout-all", cookie: owner.cookie, [("csrf", owner.csrf), ("consumerId", "")])
            #expect(empty.status == .badRequest && empty.text.contains("consumerId is required") && empty.text.contains("<title>Login issuers"))
            let loggedOut = try await Self.post(
                client, "/console/login-issuers/bank/logout-all", cookie: owner.cookie, try Self.rendered(listed, form: "logout-all-bank", ["consumerId": "c-1"]))
            #expect(loggedOut.status == .seeOther && loggedOut.headers[.location] == "/console/login-issuers?done=consumer-logged-out")
            let refreshToken = try login.decode(TokenResponse.self).refreshToken
            #expect(try await client.refresh(refreshToken).code == "invalid_grant")

            // A resource server: its secret shown once.
            let created = try await Self.post(client, "/console/resource-servers", cookie: owner.cookie, [("csrf", owner.csrf), ("name", "Payments API")])
            let secret = try #require(
                created.text.range(of: #"<pre id="created-resource-server-secret">"#).map { String(created.text[$0.upperBound...].prefix { $0 != "<" }) })
            #expect(!secret.isEmpty && created.text.contains("Resource server Payments API created"))
            let again = try await Self.page(client, "/console/login-issuers", cookie: owner.cookie).text
            #expect(again.contains("Payments API") && !again.contains(secret))
            let servers = try await client.admin(.get, "/admin/v1/resource-servers").decode(AdminResourceServerList.self).resourceServers
            #expect(servers.count == 1)
            for type in ["admin.login_issuers.create", "admin.resource_servers.create"] {
                #expect(try await Self.records(client, type).first?.actor.hasPrefix("admin:\(owner.accountID)/cs_") == true, "\(type)")
            }

            // A refused add refills the form (not the key's absence of a secret: there is none here).
            let refused = try await Self.post(
                client, "/console/login-issuers", cookie: owner.cookie, [("csrf", owner.csrf), ("issuerId", "card"), ("audience", "not a url")])
            #expect((400..<500).contains(Int(refused.status.code)) && refused.text.contains("Nothing was changed."))
            #expect(try Self.rendered(refused.text, form: "add-login-issuer").contains { $0 == ("issuerId", "card") })

            // Deletions; an auditor reads the page but is offered no change.
            let auditor = try await Self.enroll(client, username: "ada", role: .auditor)
            let read = try await Self.page(client, "/console/login-issuers", cookie: auditor.cookie)
            #expect(read.status == .ok && read.text.contains("login-issuer-bank"))
            #expect(!read.text.contains("add-login-issuer") && !read.text.contains("delete-login-issuer-bank") && !read.text.contains("logout-all-bank"))
            #expect(try await Self.post(client, "/console/login-issuers/bank/delete", cookie: auditor.cookie, [("csrf", auditor.csrf)]).status == .forbidden)
            let server = try #require(servers.first)
            #expect(try await Self.post(client, "/console/resource-servers/\(server.clientId)/delete", cookie: owner.cookie, [("csrf", owner.csrf)]).status == .seeOther)
            #expect(try await Self.post(client, "/console/login-issuers/bank/delete", cookie: owner.cookie, [("csrf", owner.csrf)]).status == .seeOther)
            #expect(try await client.admin(.get, "/admin/v1/login-issuers").decode(AdminLoginIssuerList.self).loginIssuers.isEmpty)
            #expect(try await client.admin(.get, "/admin/v1/resource-servers").decode(AdminResourceServerList.self).resourceServers.isEmpty)
        }
    }
}
