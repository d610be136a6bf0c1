import Foundation
import Hummingbird
import LatchCore
import LatchModel
import LatchWeb

/// Apps, issuers, test keys, signing keys, custom registration providers, upstream identity providers; admins and
/// tokens.
extension ConsoleController {
    func addConfiguration(to console: RouterGroup<LatchRequestContext>) {
        console.get("apps") { request, context in
            await handle(request, context, route: "GET /admin/v1/clients") { session, _ in
                var view = try await appsPage(session)
                flash(&view, request)
                return .view(view)
            }
        }
        console.post("apps") { request, context in
            await handle(request, context, route: "POST /admin/v1/clients", page: appsPage) { _, form in
                _ = try await admin.addClient(AdminClientRequest(clientId: form["clientId"] ?? "", name: Self.optional(form["name"])))
                return .redirect("/console/apps?done=created-app")
            }
        }
        console.post("apps/:id") { request, context in
            await handle(request, context, route: "PATCH /admin/v1/clients/{id}", page: appsPage) { _, form in
                var patch = AdminClientPatch()
                patch.redirectUris = form["redirectUris"].map { Self.lines($0) }
                patch.postLogoutRedirectUris = form["postLogoutRedirectUris"].map { Self.lines($0) }
                if let dpop = form["dpop"], !dpop.isEmpty { patch.dpop = dpop }
                _ = try await admin.patchClient(id: try context.parameters.require("id"), patch)
                return .redirect("/console/apps?done=saved-app")
            }
        }
        console.get("issuers") { request, context in
            await handle(request, context, route: "GET /admin/v1/issuers") { session, _ in
                var view = try await issuersPage(session)
                flash(&view, request)
                return .view(view)
            }
        }
        console.post("issuers/:name/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/issuers/{name}", page: issuersPage) { _, form in
                try await admin.deleteIssuer(try context.parameters.require("name"), keyID: form["keyId"])
                return .redirect("/console/issuers?done=deleted-issuer")
            }
        }
        console.get("test-keys") { request, context in
            await handle(request, context, route: "GET /admin/v1/test-keys") { session, _ in
                var view = try await testKeysPage(session)
                flash(&view, request)
                return .view(view)
            }
        }
        console.post("test-keys") { request, context in
            await handle(request, context, route: "POST /admin/v1/test-keys", page: testKeysPage) { session, form in
                let created = try await admin.createTestKey(
                    AdminTestKeyRequest(keyId: Self.optional(form["keyId"]), algorithm: Self.optional(form["algorithm"])),
                    owner: session.caller.accountID)
                var view = try await testKeysPage(session)
                var section = Section("created-key", heading: "Test key \(created.keyId) created")
                section.secret = View.Secret(id: "test-key-private", label: "Private key (PKCS #8 PEM)", value: created.privateKey, filename: "\(created.keyId).pem")
                view.sections.insert(section, at: 0)
                return .view(view)
            }
        }
        console.post("test-keys/:keyId/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/test-keys/{keyId}", page: testKeysPage) { _, _ in
                try await admin.deleteTestKey(id: try context.parameters.require("keyId"))
                return .redirect("/console/test-keys?done=deleted-test-key")
            }
        }
        console.get("signing-keys") { request, context in
            await handle(request, context, route: "GET /admin/v1/client-config") { session, _ in
                var view = View("Signing keys", area: "signing-keys")
                flash(&view, request)
                let now = services.clock.seconds()
                var section = Section("signing-keys", intro: "Latch signs tokens with the active key; retired keys stay published in the JWKS until every token they signed has expired.")
                section.table = View.Table(
                    id: "signing-keys-table", columns: ["Key id", "Algorithm", "Created", "Age", "State"],
                    rows: try await admin.signingKeys().map {
                        View.Row(
                            id: "signing-key-\($0.keyID)",
                            cells: [
                                .code($0.keyID), .init(text: $0.algorithm), .init(text: View.time($0.createdAt)), .init(text: View.age(now - $0.createdAt)),
                                .init(text: $0.retiredAt.map { "retired \(View.time($0))" } ?? "active"),
                            ])
                    }, empty: "No signing keys.")
                if may(session, "POST /admin/v1/keys/rotate") {
                    section.forms = [
                        View.Form(
                            id: "rotate", action: "/console/signing-keys/rotate", submit: "Rotate now", danger: true,
                            fields: [View.Field(name: "back", label: "", kind: .hidden, value: "/console/signing-keys")])
                    ]
                }
                view.sections = [section]
                return .view(view)
            }
        }
        console.post("signing-keys/rotate") { request, context in
            await handle(request, context, route: "POST /admin/v1/keys/rotate", dangerous: true) { _, _ in
                _ = try await admin.rotateSigningKey()
                return .redirect("/console/signing-keys?done=rotated")
            }
        }
        console.get("custom-providers") { request, context in
            await handle(request, context, route: "GET /admin/v1/custom-providers") { session, _ in
                var view = try await customProvidersPage(session)
                flash(&view, request)
                return .view(view)
            }
        }
        console.post("custom-providers/:id/enabled") { request, context in
            await handle(request, context, route: "PATCH /admin/v1/custom-providers/{id}", page: customProvidersPage) { _, form in
                guard let custom = services.customRegistration else { throw LatchError.notFound("custom registration is not served here") }
                guard let enabled = form["enabled"].flatMap(Bool.init) else { throw LatchError.invalidInput("enabled must be true or false") }
                var patch = AdminCustomProviderPatch()
                patch.enabled = enabled
                _ = try await custom.updateProvider(id: try context.parameters.require("id"), patch)
                return .redirect("/console/custom-providers?done=saved-provider")
            }
        }
        console.post("custom-providers/:id/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/custom-providers/{id}", page: customProvidersPage) { _, _ in
                guard let custom = services.customRegistration else { throw LatchError.notFound("custom registration is not served here") }
                try await custom.deleteProvider(id: try context.parameters.require("id"))
                return .redirect("/console/custom-providers?done=deleted-provider")
            }
        }
        console.post("upstream-idps/:id/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/upstream-idps/{id}", page: upstreamIdPsPage) { _, _ in
                try await admin.deleteUpstreamIdP(id: try context.parameters.require("id"))
                return .redirect("/console/upstream-idps?done=deleted-idp")
            }
        }
        console.get("upstream-idps") { request, context in
            await handle(request, context, route: "GET /admin/v1/upstream-idps") { session, _ in
                var view = try await upstreamIdPsPage(session)
                flash(&view, request)
                return .view(view)
            }
        }
    }

    func issuersPage(_ session: ConsoleSession) async throws -> View {
        var view = View("Issuers", area: "issuers")
        var section = Section("issuers", intro: "Customer backends whose signed JWTs register and sign in users (custom federated sign-in).")
        let mayDelete = may(session, "DELETE /admin/v1/issuers/{name}")
        section.table = View.Table(
            id: "issuers-table", columns: ["Name", "Key id", "Algorithm", "Audience", "Allowed claims", "Added"],
            rows: try await admin.issuers().issuers.map { issuer in
                View.Row(
                    id: "issuer-\(issuer.name)-\(issuer.keyId)",
                    cells: [
                        .init(text: issuer.name), .code(issuer.keyId), .init(text: issuer.algorithm), .code(issuer.audience),
                        .init(text: issuer.allowedClaims.joined(separator: ", ")), .init(text: View.time(issuer.createdAt)),
                    ],
                    actions: mayDelete
                        ? [.init(id: "delete-issuer-\(issuer.keyId)", label: "Delete", action: "/console/issuers/\(Self.encoded(issuer.name))/delete", danger: true, fields: ["keyId": issuer.keyId])]
                        : [])
            }, empty: "No issuers yet.")
        view.sections = [section] + [addIssuerSection(session)].compactMap { $0 }
        return view
    }

    func customProvidersPage(_ session: ConsoleSession) async throws -> View {
        var view = View("Custom registration providers", area: "custom-providers")
        var section = Section("custom-providers", intro: "Operator services that decide one- and two-step registrations.")
        let providers = try await services.customRegistration?.providers().customProviders ?? []
        let mayChange = may(session, "PATCH /admin/v1/custom-providers/{id}")
        let mayDelete = may(session, "DELETE /admin/v1/custom-providers/{id}")
        section.table = View.Table(
            id: "custom-providers-table", columns: ["Id", "Name", "Flow", "Hook", "Timeout", "Allowed claims", "Enabled"],
            rows: providers.map {
                View.Row(
                    id: "provider-\($0.id)",
                    cells: [
                        .code($0.id), .init(text: $0.name), .init(text: $0.flow), .code($0.hookURL), .init(text: "\($0.timeout) s"),
                        .init(text: $0.allowedClaims.joined(separator: ", ")), .init(text: $0.enabled ? "yes" : "no"),
                    ],
                    actions: (mayChange
                        ? [.init(
                            id: "toggle-provider-\($0.id)", label: $0.enabled ? "Disable" : "Enable",
                            action: "/console/custom-providers/\(Self.encoded($0.id))/enabled", fields: ["enabled": $0.enabled ? "false" : "true"])]
                        : [])
                        + (mayDelete
                            ? [.init(id: "delete-provider-\($0.id)", label: "Delete", action: "/console/custom-providers/\(Self.encoded($0.id))/delete", danger: true)]
                            : []))
            }, empty: "No providers yet.")
        view.sections = [section] + [addCustomProviderSection(session)].compactMap { $0 }
        return view
    }

    func upstreamIdPsPage(_ session: ConsoleSession) async throws -> View {
        var view = View("Upstream identity providers", area: "upstream-idps")
        let mayDelete = may(session, "DELETE /admin/v1/upstream-idps/{id}")
        var section = Section("upstream-idps", intro: "OpenID providers users sign in through in the browser; register the callback URL at each.")
        let idps = services.authorization == nil ? [] : try await admin.upstreamIdPList(issuer: issuer).upstreamIdps
        section.table = View.Table(
            id: "upstream-idps-table", columns: ["Id", "Name", "Issuer", "Client", "Scopes", "Callback URL"],
            rows: idps.map {
                View.Row(
                    id: "idp-\($0.id)",
                    cells: [
                        .code($0.id), .init(text: $0.displayName), .code($0.issuer), .code($0.clientId), .init(text: $0.scopes.joined(separator: " ")),
                        .code($0.callbackURL),
                    ],
                    actions: mayDelete
                        ? [.init(id: "delete-idp-\($0.id)", label: "Delete", action: "/console/upstream-idps/\(Self.encoded($0.id))/delete", danger: true)] : [])
            }, empty: "No upstream identity providers yet.")
        view.sections = [section] + [addUpstreamIdPSection(session)].compactMap { $0 }
        return view
    }

    func appsPage(_ session: ConsoleSession) async throws -> View {
        var view = View("Apps", area: "apps")
        let mayEdit = may(session, "PATCH /admin/v1/clients/{id}")
        for client in try await admin.clientList().clients {
            var section = Section("app-\(client.clientId)", heading: client.name)
            section.facts = [
                .init(label: "Client id", value: client.clientId, id: "app-\(client.clientId)-id", code: true),
                .init(label: "Created", value: View.time(client.createdAt), id: "app-\(client.clientId)-created"),
                .init(label: "Callback URIs", value: (client.redirectUris ?? []).joined(separator: " "), id: "app-\(client.clientId)-redirects"),
                .init(label: "Logout URIs", value: (client.postLogoutRedirectUris ?? []).joined(separator: " "), id: "app-\(client.clientId)-logouts"),
                .init(label: "iOS apps", value: client.ios.map { "\($0.appIds.joined(separator: ", ")) (App Attest \($0.appAttestEnvironment ?? "production")\($0.deviceCheck == nil ? "" : ", DeviceCheck"))" } ?? "—", id: "app-\(client.clientId)-ios"),
                .init(label: "Android apps", value: client.android.map { "\($0.packageNames.joined(separator: ", "))\($0.playIntegrity == nil ? "" : " (Play Integrity)")" } ?? "—", id: "app-\(client.clientId)-android"),
                .init(label: "DPoP", value: client.dpop ?? "allowed", id: "app-\(client.clientId)-dpop"),
            ]
            if mayEdit {
                section.forms = [
                    View.Form(
                        id: "edit-\(client.clientId)", action: "/console/apps/" + Self.encoded(client.clientId), submit: "Save",
                        fields: [
                            View.Field(name: "redirectUris", label: "Callback URIs (one a line)", kind: .textarea, value: (client.redirectUris ?? []).joined(separator: "\n"), maxLength: 8_192),
                            View.Field(name: "postLogoutRedirectUris", label: "Logout URIs (one a line)", kind: .textarea, value: (client.postLogoutRedirectUris ?? []).joined(separator: "\n"), maxLength: 8_192),
                            View.Field(
                                name: "dpop", label: "DPoP (RFC 9449)", kind: .select([("off", "off"), ("allowed", "allowed"), ("required", "required")]),
                                value: client.dpop ?? "allowed"),
                        ])
                ]
            }
            view.sections.append(section)
            if mayEdit {
                var evidence = Section(
                    "evidence-section-\(client.clientId)", heading: "\(client.name): device evidence",
                    intro: "Which apps may register with App Attest, DeviceCheck, Android key attestation or Play Integrity.")
                evidence.forms = [evidenceForm(client)]
                view.sections.append(evidence)
            }
            if let certificates = try await signingCertificateSection(session, client) { view.sections.append(certificates) }
        }
        if may(session, "POST /admin/v1/clients") {
            var create = Section("new-app", heading: "Add an app")
            create.forms = [
                View.Form(
                    id: "create-app", action: "/console/apps", submit: "Add",
                    fields: [View.Field(name: "clientId", label: "Client id", required: true, maxLength: 128), View.Field(name: "name", label: "Name", maxLength: 128)])
            ]
            view.sections.append(create)
        }
        return view
    }

    func testKeysPage(_ session: ConsoleSession) async throws -> View {
        var view = View("Test registration keys", area: "test-keys")
        var section = Section("test-keys", intro: "Keys that register test users without device attestation (for CI and simulators). Each belongs to the admin account that created it.")
        let mayDelete = may(session, "DELETE /admin/v1/test-keys/{keyId}")
        section.table = View.Table(
            id: "test-keys-table", columns: ["Key id", "Algorithm", "Created"],
            rows: try await admin.testKeys().testKeys.map { key in
                View.Row(
                    id: "test-key-\(key.keyId)", cells: [.code(key.keyId), .init(text: key.algorithm), .init(text: View.time(key.createdAt))],
                    actions: mayDelete ? [.init(id: "delete-test-key-\(key.keyId)", label: "Delete", action: "/console/test-keys/\(Self.encoded(key.keyId))/delete", danger: true)] : [])
            }, empty: "No test keys.")
        if may(session, "POST /admin/v1/test-keys") {
            section.forms = [
                View.Form(
                    id: "create-test-key", action: "/console/test-keys", submit: "Generate a key",
                    fields: [
                        View.Field(name: "keyId", label: "Key id (optional)", maxLength: 128),
                        View.Field(name: "algorithm", label: "Algorithm", kind: .select([("RS256", "RS256"), ("ES256", "ES256"), ("ES384", "ES384")]), value: "RS256"),
                    ])
            ]
        }
        view.sections = [section]
        return view
    }

    // MARK: Admins and tokens

    func addAdmins(to console: RouterGroup<LatchRequestContext>) {
        console.get("admins") { request, context in
            // Every role manages its own tokens here (the API lets it); the accounts show to the roles that read them.
            await handle(request, context, route: "GET /admin/v1/tokens") { session, _ in
                var view = try await adminsPage(session)
                flash(&view, request)
                return .view(view)
            }
        }
        console.post("admins") { request, context in
            await handle(request, context, route: "POST /admin/v1/admins", dangerous: true, page: adminsPage) { session, form in
                guard let role = AdminRole(rawValue: form["role"] ?? "") else { throw LatchError.invalidInput("role must be owner, admin, support or auditor") }
                let account = try await admin.createAdminAccount(AdminAccountRequest(username: form["username"] ?? "", role: role), caller: session.caller)
                return .view(try await enrollmentView(session, accountID: account.id, created: true))
            }
        }
        console.post("admins/:id/enrollment") { request, context in
            await handle(request, context, route: "POST /admin/v1/admins/{id}/enrollment") { session, _ in
                .view(try await enrollmentView(session, accountID: try context.parameters.require("id"), created: false))
            }
        }
        console.post("admins/:id/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/admins/{id}", dangerous: true, page: adminsPage) { session, form in
                try await admin.deleteAdminAccount(
                    id: try context.parameters.require("id"), caller: session.caller, force: false, deleteOwned: form["deleteOwned"] == "true")
                return .redirect("/console/admins?done=deleted-admin")
            }
        }
        console.post("tokens") { request, context in
            await handle(request, context, route: "POST /admin/v1/tokens", dangerous: true, page: adminsPage) { session, form in
                guard let days = Int64(form["days"] ?? "90"), (1...366).contains(days) else { throw LatchError.invalidInput("the lifetime must be 1–366 days") }
                let role = try (form["role"].flatMap { $0.isEmpty ? nil : $0 }).map {
                    guard let role = AdminRole(rawValue: $0) else { throw LatchError.invalidInput("role must be owner, admin, support or auditor") }
                    return role
                }
                let created = try await admin.createAdminToken(AdminTokenRequest(name: form["name"] ?? "", role: role, expiresIn: days * 86_400), caller: session.caller)
                var view = try await adminsPage(session)
                var section = Section("created-token", heading: "Token \(created.name) created")
                section.facts = [
                    .init(label: "Id", value: created.id, id: "created-token-id", code: true), .init(label: "Role", value: created.role.rawValue, id: "created-token-role"),
                    .init(label: "Expires", value: View.time(created.expiresAt), id: "created-token-expires"),
                ]
                section.secret = View.Secret(id: "created-token-value", label: "Token (Authorization: Bearer …)", value: created.token)
                view.sections.insert(section, at: 0)
                return .view(view)
            }
        }
        console.post("tokens/:id/revoke") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/tokens/{id}", page: adminsPage) { session, _ in
                try await admin.revokeAdminToken(id: try context.parameters.require("id"), caller: session.caller, force: false)
                return .redirect("/console/admins?done=revoked-token")
            }
        }
    }

    func enrollmentView(_ session: ConsoleSession, accountID: String, created: Bool) async throws -> View {
        let link = try await signIn.enrollmentLink(accountID: accountID, issuer: issuer)
        var view = try await adminsPage(session)
        var section = Section("enrollment", heading: created ? "Admin \(link.username) created" : "Enrollment link for \(link.username)")
        section.intro = "Send this link to \(link.username) over a channel you trust: it enrolls a passkey for the account, once, until it expires."
        section.facts = [
            .init(label: "Link", value: link.url, id: "enrollment-link", code: true), .init(label: "Expires", value: View.time(link.expiresAt), id: "enrollment-expires"),
        ]
        view.sections.insert(section, at: 0)
        return view
    }

    func adminsPage(_ session: ConsoleSession) async throws -> View {
        var view = View("Admins and tokens", area: "admins")
        let owner = may(session, "POST /admin/v1/admins")
        var accounts = Section("accounts", heading: "Admin accounts")
        let accountList = may(session, "GET /admin/v1/admins") ? try await admin.adminAccounts().admins : []
        accounts.table = View.Table(
            id: "admins-table", columns: ["Username", "Id", "Role", "Created", "Created by"],
            rows: accountList.map { account in
                View.Row(
                    id: "admin-\(account.id)",
                    cells: [.init(text: account.username), .code(account.id), .init(text: account.role.rawValue), .init(text: View.time(account.createdAt)), .code(account.createdBy ?? "—")],
                    actions: owner
                        ? [
                            .init(id: "enroll-\(account.id)", label: "Enrollment link", action: "/console/admins/\(Self.encoded(account.id))/enrollment"),
                            .init(id: "delete-admin-\(account.id)", label: "Delete", action: "/console/admins/\(Self.encoded(account.id))/delete", danger: true, fields: ["back": "/console/admins"]),
                        ] : [])
            }, empty: "No accounts.")
        if owner {
            accounts.forms = [
                View.Form(
                    id: "create-admin", action: "/console/admins", submit: "Create the account",
                    fields: [
                        View.Field(name: "username", label: "Username", required: true, maxLength: 64),
                        View.Field(name: "role", label: "Role", kind: .select(AdminRole.allCases.sorted(by: >).map { ($0.rawValue, $0.rawValue) }), value: "admin"),
                        View.Field(name: "back", label: "", kind: .hidden, value: "/console/admins"),
                    ])
            ]
        }
        var passkeys = Section("passkeys", heading: "Your passkeys")
        passkeys.table = View.Table(
            id: "passkeys-table", columns: ["Name", "Id", "Created", "Last used"],
            rows: try await signIn.passkeys(accountID: session.caller.accountID).map {
                View.Row(id: "passkey-\($0.id)", cells: [.init(text: $0.name), .code($0.id), .init(text: View.time($0.createdAt)), .init(text: View.time($0.lastUsedAt))])
            }, empty: "None.")
        var tokens = Section("tokens", heading: "Admin tokens")
        let now = services.clock.seconds()
        tokens.table = View.Table(
            id: "tokens-table", columns: ["Name", "Id", "Account", "Role", "Created", "Expires"],
            rows: try await admin.adminTokens(caller: session.caller).tokens.map { token in
                View.Row(
                    id: "token-\(token.id)",
                    cells: [
                        .init(text: token.name), .code(token.id), .code(token.accountId), .init(text: token.role.rawValue), .init(text: View.time(token.createdAt)),
                        .init(text: token.expiresAt.map { $0 <= now ? "expired" : View.time($0) } ?? "never"),
                    ],
                    actions: token.id == session.caller.tokenID || !may(session, "DELETE /admin/v1/tokens/{id}")
                        ? [] : [.init(id: "revoke-\(token.id)", label: "Revoke", action: "/console/tokens/\(Self.encoded(token.id))/revoke", danger: true)])
            }, empty: "No tokens.")
        if may(session, "POST /admin/v1/tokens") {
            tokens.forms = [
                View.Form(
                    id: "create-token", action: "/console/tokens", submit: "Create a token",
                    fields: [
                        View.Field(name: "name", label: "Name", required: true, maxLength: 64),
                        View.Field(name: "role", label: "Role", kind: .select([("", "the account's")] + AdminRole.allCases.sorted(by: >).map { ($0.rawValue, $0.rawValue) })),
                        View.Field(name: "days", label: "Lifetime (days)", kind: .text(type: "number"), value: "90"),
                        View.Field(name: "back", label: "", kind: .hidden, value: "/console/admins"),
                    ])
            ]
        }
        view.sections = (may(session, "GET /admin/v1/admins") ? [accounts] : []) + [passkeys, tokens]
        return view
    }
}
