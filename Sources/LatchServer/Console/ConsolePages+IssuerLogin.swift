import Foundation
import Hummingbird
import LatchCore
import LatchModel
import LatchWeb

/// Issuer login (several short-lived issuer tokens log consumers in): login issuers — add, delete, log a consumer out
/// everywhere — and the resource servers that introspect tokens (their secret shown once).
extension ConsoleController {
    func addIssuerLogin(to console: RouterGroup<LatchRequestContext>) {
        console.get("login-issuers") { request, context in
            await handle(request, context, route: "GET /admin/v1/login-issuers") { session, _ in
                var view = try await loginIssuersPage(session)
                flash(&view, request)
                return .view(view)
            }
        }
        console.post("login-issuers") { request, context in
            await handle(request, context, route: "POST /admin/v1/login-issuers", page: loginIssuersPage) { _, form in
                let service = try issuerLoginService()
                var keys: [LoginIssuerKey]?
                if let pem = Self.optional(form["publicKey"]) {
                    keys = [LoginIssuerKey(kid: form["kid"] ?? "", algorithm: form["algorithm"] ?? "", publicKey: pem)]
                }
                _ = try await service.addIssuer(
                    AdminLoginIssuerRequest(
                        issuerId: form["issuerId"] ?? "", audience: form["audience"] ?? "", keys: keys, jwksURL: Self.optional(form["jwksURL"]),
                        maxTokenLifetime: try Self.number(form["maxTokenLifetime"], "maxTokenLifetime"), allowedScopes: Self.list(form["allowedScopes"]),
                        customFederation: form["customFederation"] == "true"))
                return .redirect("/console/login-issuers?done=added-login-issuer")
            }
        }
        console.post("login-issuers/:issuerId/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/login-issuers/{issuerId}", page: loginIssuersPage) { _, _ in
                try await issuerLoginService().deleteIssuer(try context.parameters.require("issuerId"))
                return .redirect("/console/login-issuers?done=deleted-login-issuer")
            }
        }
        console.post("login-issuers/:issuerId/logout-all") { request, context in
            await handle(request, context, route: "POST /admin/v1/login-issuers/{issuerId}/consumers/{consumerId}/logout-all", page: loginIssuersPage) {
                _, form in
                guard let consumer = Self.optional(form["consumerId"]) else { throw LatchError.invalidInput("consumerId is required") }
                _ = try await issuerLoginService().logoutConsumer(issuer: try context.parameters.require("issuerId"), consumer: consumer)
                return .redirect("/console/login-issuers?done=consumer-logged-out")
            }
        }
        console.post("resource-servers") { request, context in
            await handle(request, context, route: "POST /admin/v1/resource-servers", page: loginIssuersPage) { session, form in
                let created = try await issuerLoginService().createResourceServer(AdminResourceServerRequest(name: form["name"] ?? ""))
                var view = try await loginIssuersPage(session)
                var section = Section("created-resource-server", heading: "Resource server \(created.name) created")
                section.facts = [.init(label: "Client id", value: created.clientId, id: "created-resource-server-id", code: true)]
                section.secret = View.Secret(id: "created-resource-server-secret", label: "Client secret (for token introspection)", value: created.clientSecret)
                view.sections.insert(section, at: 0)
                return .view(view)
            }
        }
        console.post("resource-servers/:clientId/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/resource-servers/{clientId}", page: loginIssuersPage) { _, _ in
                try await issuerLoginService().deleteResourceServer(id: try context.parameters.require("clientId"))
                return .redirect("/console/login-issuers?done=deleted-resource-server")
            }
        }
    }

    func issuerLoginService() throws -> IssuerLoginService {
        guard let service = services.issuerLogin else { throw LatchError.notFound("issuer login is not served here") }
        return service
    }

    func loginIssuersPage(_ session: ConsoleSession) async throws -> View {
        var view = View("Login issuers", area: "login-issuers")
        guard let service = services.issuerLogin else {
            view.sections = [Section("login-issuers", intro: "Issuer login is not served by this deployment.")]
            return view
        }
        var issuers = Section("login-issuers", intro: "Issuers whose short-lived, single-use tokens log users in for their consumers.")
        let mayDelete = may(session, "DELETE /admin/v1/login-issuers/{issuerId}")
        let mayLogOut = may(session, "POST /admin/v1/login-issuers/{issuerId}/consumers/{consumerId}/logout-all")
        let list = try await service.issuers().loginIssuers
        issuers.table = View.Table(
            id: "login-issuers-table", columns: ["Issuer", "Audience", "Keys", "Token lifetime", "Scopes", "Custom federation", "Added"],
            rows: list.map { issuer in
                View.Row(
                    id: "login-issuer-\(issuer.issuerId)",
                    cells: [
                        .code(issuer.issuerId), .code(issuer.audience),
                        .init(text: issuer.jwksURL.map { "JWKS \($0)" } ?? issuer.keys.map { "\($0.kid) (\($0.algorithm))" }.joined(separator: ", ")),
                        .init(text: "\(issuer.maxTokenLifetime) s"), .init(text: issuer.allowedScopes.joined(separator: " ")),
                        .init(text: issuer.customFederation ? "yes" : "no"), .init(text: View.time(issuer.createdAt)),
                    ],
                    actions: mayDelete
                        ? [.init(id: "delete-login-issuer-\(issuer.issuerId)", label: "Delete", action: "/console/login-issuers/\(Self.encoded(issuer.issuerId))/delete", danger: true)]
                        : [])
            }, empty: "No login issuers yet.")
        if mayLogOut, !list.isEmpty {
            issuers.forms = list.map { issuer in
                View.Form(
                    id: "logout-all-\(issuer.issuerId)", action: "/console/login-issuers/\(Self.encoded(issuer.issuerId))/logout-all",
                    submit: "Log this consumer out of \(issuer.issuerId) everywhere", danger: true,
                    fields: [View.Field(name: "consumerId", label: "Consumer id", required: true, maxLength: 256)])
            }
        }
        view.sections = [issuers]
        if may(session, "POST /admin/v1/login-issuers") {
            var add = Section("new-login-issuer", heading: "Add a login issuer", intro: "Give its JWKS URL, or one static public key.")
            add.forms = [
                View.Form(
                    id: "add-login-issuer", action: "/console/login-issuers", submit: "Add",
                    fields: [
                        View.Field(name: "issuerId", label: "Issuer (the iss its tokens carry)", required: true, maxLength: 256),
                        View.Field(name: "audience", label: "Audience (the aud its tokens carry)", required: true, maxLength: 512),
                        View.Field(name: "jwksURL", label: "JWKS URL", kind: .text(type: "url"), maxLength: 2_048),
                        View.Field(name: "kid", label: "Or a key: its kid", maxLength: 128),
                        View.Field(name: "algorithm", label: "Its algorithm", kind: .select([("ES256", "ES256"), ("ES384", "ES384"), ("RS256", "RS256")]), value: "ES256"),
                        View.Field(name: "publicKey", label: "Its public key (PEM)", kind: .textarea, maxLength: 8_192),
                        View.Field(name: "maxTokenLifetime", label: "Longest token lifetime (s)", kind: .text(type: "number"), placeholder: "300", maxLength: 6),
                        View.Field(name: "allowedScopes", label: "Scopes its tokens may carry", hint: "Separated by spaces or commas.", maxLength: 2_048),
                        View.Field(name: "customFederation", label: "Its keys also sign custom federated sign-in JWTs", kind: .checkbox),
                    ])
            ]
            view.sections.append(add)
        }
        if may(session, "GET /admin/v1/resource-servers") {
            var servers = Section("resource-servers", heading: "Resource servers", intro: "Backends that introspect issuer-login tokens (RFC 7662).")
            let mayDeleteServer = may(session, "DELETE /admin/v1/resource-servers/{clientId}")
            servers.table = View.Table(
                id: "resource-servers-table", columns: ["Client id", "Name", "Added"],
                rows: try await service.resourceServers().resourceServers.map { server in
                    View.Row(
                        id: "resource-server-\(server.clientId)", cells: [.code(server.clientId), .init(text: server.name), .init(text: View.time(server.createdAt))],
                        actions: mayDeleteServer
                            ? [.init(id: "delete-resource-server-\(server.clientId)", label: "Delete", action: "/console/resource-servers/\(Self.encoded(server.clientId))/delete", danger: true)]
                            : [])
                }, empty: "No resource servers yet.")
            if may(session, "POST /admin/v1/resource-servers") {
                servers.forms = [
                    View.Form(
                        id: "add-resource-server", action: "/console/resource-servers", submit: "Create (the secret is shown once)",
                        fields: [View.Field(name: "name", label: "Name", required: true, maxLength: 200)])
                ]
            }
            view.sections.append(servers)
        }
        return view
    }
}
