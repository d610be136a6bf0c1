import Foundation
import Hummingbird
import LatchCore
import LatchModel
import LatchWeb

/// The routes of apps, issuers, test keys, signing keys, custom registration providers, upstream identity
/// providers; admins and tokens.
extension ConsoleController {
    func addConfiguration(to console: RouterGroup<LatchRequestContext>) {
        addPage(console, "apps", route: "GET /admin/v1/clients", ConsolePages.apps)
        console.post("apps") { request, context in
            await handle(request, context, route: "POST /admin/v1/clients", page: pages(request).apps) { _, form in
                _ = try await admin.addClient(AdminClientRequest(clientId: form["clientId"] ?? "", name: Self.optional(form["name"])))
                return .redirect("/console/apps?done=created-app")
            }
        }
        console.post("apps/:id") { request, context in
            await handle(request, context, route: "PATCH /admin/v1/clients/{id}", page: pages(request).apps) { _, form in
                var patch = AdminClientPatch()
                patch.redirectUris = form["redirectUris"].map { Self.lines($0) }
                patch.postLogoutRedirectUris = form["postLogoutRedirectUris"].map { Self.lines($0) }
                if let dpop = form["dpop"], !dpop.isEmpty { patch.dpop = dpop }
                _ = try await admin.patchClient(id: try context.parameters.require("id"), patch)
                return .redirect("/console/apps?done=saved-app")
            }
        }
        addPage(console, "issuers", route: "GET /admin/v1/issuers", ConsolePages.issuers)
        console.post("issuers/:name/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/issuers/{name}", page: pages(request).issuers) { _, form in
                try await admin.deleteIssuer(try context.parameters.require("name"), keyID: form["keyId"])
                return .redirect("/console/issuers?done=deleted-issuer")
            }
        }
        addPage(console, "test-keys", route: "GET /admin/v1/test-keys", ConsolePages.testKeys)
        console.post("test-keys") { request, context in
            await handle(request, context, route: "POST /admin/v1/test-keys", page: pages(request).testKeys) { session, form in
                let created = try await admin.createTestKey(
                    AdminTestKeyRequest(keyId: Self.optional(form["keyId"]), algorithm: Self.optional(form["algorithm"])),
                    owner: session.caller.accountID)
                return .view(try await pages(request).testKeyCreated(session, created))
            }
        }
        console.post("test-keys/:keyId/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/test-keys/{keyId}", page: pages(request).testKeys) { _, _ in
                try await admin.deleteTestKey(id: try context.parameters.require("keyId"))
                return .redirect("/console/test-keys?done=deleted-test-key")
            }
        }
        addPage(console, "signing-keys", route: "GET /admin/v1/client-config", ConsolePages.signingKeys)
        console.post("signing-keys/rotate") { request, context in
            await handle(request, context, route: "POST /admin/v1/keys/rotate", dangerous: true) { _, _ in
                _ = try await admin.rotateSigningKey()
                return .redirect("/console/signing-keys?done=rotated")
            }
        }
        addPage(console, "custom-providers", route: "GET /admin/v1/custom-providers", ConsolePages.customProviders)
        console.post("custom-providers/:id/enabled") { request, context in
            await handle(request, context, route: "PATCH /admin/v1/custom-providers/{id}", page: pages(request).customProviders) { _, form in
                let custom = services.customRegistration
                guard let enabled = form["enabled"].flatMap(Bool.init) else { throw LatchError.invalidInput(pages(request).w(.enabledMustBe)) }
                var patch = AdminCustomProviderPatch()
                patch.enabled = enabled
                _ = try await custom.updateProvider(id: try context.parameters.require("id"), patch)
                return .redirect("/console/custom-providers?done=saved-provider")
            }
        }
        console.post("custom-providers/:id/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/custom-providers/{id}", page: pages(request).customProviders) { _, _ in
                let custom = services.customRegistration
                try await custom.deleteProvider(id: try context.parameters.require("id"))
                return .redirect("/console/custom-providers?done=deleted-provider")
            }
        }
        console.post("upstream-idps/:id/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/upstream-idps/{id}", page: pages(request).upstreamIdPs) { _, _ in
                try await admin.deleteUpstreamIdP(id: try context.parameters.require("id"))
                return .redirect("/console/upstream-idps?done=deleted-idp")
            }
        }
        addPage(console, "upstream-idps", route: "GET /admin/v1/upstream-idps", ConsolePages.upstreamIdPs)
    }

    // MARK: Admins and tokens

    func addAdmins(to console: RouterGroup<LatchRequestContext>) {
        // Every role manages its own tokens here (the API lets it); the accounts show to the roles that read them.
        addPage(console, "admins", route: "GET /admin/v1/tokens", ConsolePages.admins)
        console.post("admins") { request, context in
            await handle(request, context, route: "POST /admin/v1/admins", dangerous: true, page: pages(request).admins) { session, form in
                guard let role = AdminRole(rawValue: form["role"] ?? "") else { throw LatchError.invalidInput(pages(request).w(.roleMustBe)) }
                let account = try await admin.createAdminAccount(AdminAccountRequest(username: form["username"] ?? "", role: role), caller: session.caller)
                return .view(try await pages(request).enrollment(session, accountID: account.id, created: true))
            }
        }
        console.post("admins/:id/enrollment") { request, context in
            await handle(request, context, route: "POST /admin/v1/admins/{id}/enrollment") { session, _ in
                .view(try await pages(request).enrollment(session, accountID: try context.parameters.require("id"), created: false))
            }
        }
        console.post("admins/:id/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/admins/{id}", dangerous: true, page: pages(request).admins) { session, form in
                try await admin.deleteAdminAccount(
                    id: try context.parameters.require("id"), caller: session.caller, force: false, deleteOwned: form["deleteOwned"] == "true")
                return .redirect("/console/admins?done=deleted-admin")
            }
        }
        console.post("tokens") { request, context in
            await handle(request, context, route: "POST /admin/v1/tokens", dangerous: true, page: pages(request).admins) { session, form in
                guard let days = Int64(form["days"] ?? "90"), (1...366).contains(days) else { throw LatchError.invalidInput(pages(request).w(.lifetimeMustBe)) }
                let role = try (form["role"].flatMap { $0.isEmpty ? nil : $0 }).map {
                    guard let role = AdminRole(rawValue: $0) else { throw LatchError.invalidInput(pages(request).w(.roleMustBe)) }
                    return role
                }
                let created = try await admin.createAdminToken(AdminTokenRequest(name: form["name"] ?? "", role: role, expiresIn: days * 86_400), caller: session.caller)
                return .view(try await pages(request).tokenCreated(session, created))
            }
        }
        console.post("tokens/:id/revoke") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/tokens/{id}", page: pages(request).admins) { session, _ in
                try await admin.revokeAdminToken(id: try context.parameters.require("id"), caller: session.caller, force: false)
                return .redirect("/console/admins?done=revoked-token")
            }
        }
    }
}
