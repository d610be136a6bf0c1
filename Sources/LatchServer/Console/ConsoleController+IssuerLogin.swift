import Foundation
import Hummingbird
import LatchCore
import LatchModel
import LatchWeb

/// The routes of issuer login (several short-lived issuer tokens log consumers in): login issuers — add, delete, log
/// a consumer out everywhere — and the resource servers that introspect tokens (their secret shown once).
extension ConsoleController {
    func addIssuerLogin(to console: RouterGroup<LatchRequestContext>) {
        addPage(console, "login-issuers", route: "GET /admin/v1/login-issuers", ConsolePages.loginIssuers)
        console.post("login-issuers") { request, context in
            await handle(request, context, route: "POST /admin/v1/login-issuers", page: pages(request).loginIssuers) { _, form in
                let service = try issuerLoginService(request)
                var keys: [LoginIssuerKey]?
                if let pem = Self.optional(form["publicKey"]) {
                    keys = [LoginIssuerKey(kid: form["kid"] ?? "", algorithm: form["algorithm"] ?? "", publicKey: pem)]
                }
                _ = try await service.addIssuer(
                    AdminLoginIssuerRequest(
                        issuerId: form["issuerId"] ?? "", audience: form["audience"] ?? "", keys: keys, jwksURL: Self.optional(form["jwksURL"]),
                        maxTokenLifetime: try number(form, "maxTokenLifetime", request), allowedScopes: Self.list(form["allowedScopes"]),
                        customFederation: form["customFederation"] == "true"))
                return .redirect("/console/login-issuers?done=added-login-issuer")
            }
        }
        console.post("login-issuers/:issuerId/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/login-issuers/{issuerId}", page: pages(request).loginIssuers) { _, _ in
                try await issuerLoginService(request).deleteIssuer(try context.parameters.require("issuerId"))
                return .redirect("/console/login-issuers?done=deleted-login-issuer")
            }
        }
        console.post("login-issuers/:issuerId/logout-all") { request, context in
            await handle(request, context, route: "POST /admin/v1/login-issuers/{issuerId}/consumers/{consumerId}/logout-all", page: pages(request).loginIssuers) {
                _, form in
                guard let consumer = Self.optional(form["consumerId"]) else { throw LatchError.invalidInput(pages(request).w(.consumerIdRequired)) }
                _ = try await issuerLoginService(request).logoutConsumer(issuer: try context.parameters.require("issuerId"), consumer: consumer)
                return .redirect("/console/login-issuers?done=consumer-logged-out")
            }
        }
        console.post("resource-servers") { request, context in
            await handle(request, context, route: "POST /admin/v1/resource-servers", page: pages(request).loginIssuers) { session, form in
                let created = try await issuerLoginService(request).createResourceServer(AdminResourceServerRequest(name: form["name"] ?? ""))
                return .view(try await pages(request).resourceServerCreated(session, created))
            }
        }
        console.post("resource-servers/:clientId/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/resource-servers/{clientId}", page: pages(request).loginIssuers) { _, _ in
                try await issuerLoginService(request).deleteResourceServer(id: try context.parameters.require("clientId"))
                return .redirect("/console/login-issuers?done=deleted-resource-server")
            }
        }
    }

    func issuerLoginService(_ request: Request) throws -> IssuerLoginService {
        let service = services.issuerLogin
        return service
    }
}
