import LatchCore
import LatchModel

/// Issuer login (several short-lived issuer tokens log consumers in): login issuers — add, delete, log a consumer out
/// everywhere — and the resource servers that introspect tokens (their secret shown once).
extension ConsolePages {
    public func loginIssuers(_ session: ConsoleSession) async throws -> ConsoleView {
        var view = View(w(.loginIssuers), area: "login-issuers")
        let service = services.issuerLogin
        view.sections = [loginIssuersSection(session, try await service.issuers().loginIssuers)]
        if may(session, "POST /admin/v1/login-issuers") { view.sections.append(addLoginIssuerSection()) }
        if may(session, "GET /admin/v1/resource-servers") { view.sections.append(try await resourceServersSection(session, service)) }
        return view
    }

    func loginIssuersSection(_ session: ConsoleSession, _ list: [AdminLoginIssuer]) -> Section {
        var issuers = Section("login-issuers", intro: w(.issuersWhoseShortLived))
        let mayDelete = may(session, "DELETE /admin/v1/login-issuers/{issuerId}")
        issuers.table = View.Table(
            id: "login-issuers-table",
            columns: [w(.issuer), w(.audience), w(.keys), w(.tokenLifetime), w(.scopes), w(.customFederation), w(.added)],
            rows: list.map { issuer in
                View.Row(
                    id: "login-issuer-\(issuer.issuerId)",
                    cells: [
                        .code(issuer.issuerId), .code(issuer.audience),
                        .init(text: issuer.jwksURL.map { "JWKS \($0)" } ?? issuer.keys.map { "\($0.kid) (\($0.algorithm))" }.joined(separator: ", ")),
                        .init(text: "\(issuer.maxTokenLifetime) s"), .init(text: issuer.allowedScopes.joined(separator: " ")),
                        .init(text: issuer.customFederation ? w(.yes) : w(.no)), .init(text: View.time(issuer.createdAt)),
                    ],
                    actions: mayDelete
                        ? [.init(id: "delete-login-issuer-\(issuer.issuerId)", label: w(.delete), action: "/console/login-issuers/\(Self.encoded(issuer.issuerId))/delete", danger: true)]
                        : [])
            }, empty: w(.noLoginIssuersYet))
        if may(session, "POST /admin/v1/login-issuers/{issuerId}/consumers/{consumerId}/logout-all"), !list.isEmpty {
            issuers.forms = list.map { issuer in
                View.Form(
                    id: "logout-all-\(issuer.issuerId)", action: "/console/login-issuers/\(Self.encoded(issuer.issuerId))/logout-all",
                    submit: w(.logThisConsumerOut, issuer.issuerId), danger: true,
                    fields: [View.Field(name: "consumerId", label: w(.consumerId), required: true, maxLength: 256)])
            }
        }
        return issuers
    }

    func addLoginIssuerSection() -> Section {
        return addSection(
            "new-login-issuer", heading: .addALoginIssuer, intro: .giveItsJWKSURL, form: "add-login-issuer", action: "/console/login-issuers",
            fields: [
                View.Field(name: "issuerId", label: w(.issuerTheIssIts), required: true, maxLength: 256),
                View.Field(name: "audience", label: w(.audienceTheAudIts), required: true, maxLength: 512),
                View.Field(name: "jwksURL", label: w(.jwksURL), kind: .text(type: "url"), maxLength: 2_048),
                View.Field(name: "kid", label: w(.orAKeyIts), maxLength: 128),
                View.Field(name: "algorithm", label: w(.itsAlgorithm), kind: .select([("ES256", "ES256"), ("ES384", "ES384"), ("RS256", "RS256")]), value: "ES256"),
                View.Field(name: "publicKey", label: w(.itsPublicKeyPEM), kind: .textarea, maxLength: 8_192),
                View.Field(name: "maxTokenLifetime", label: w(.longestTokenLifetimeS), kind: .text(type: "number"), placeholder: "300", maxLength: 6),
                View.Field(name: "allowedScopes", label: w(.scopesItsTokensMay), hint: w(.separatedBySpacesOr), maxLength: 2_048),
                View.Field(name: "customFederation", label: w(.itsKeysAlsoSign), kind: .checkbox),
            ])
    }

    func resourceServersSection(_ session: ConsoleSession, _ service: IssuerLoginService) async throws -> Section {
        var servers = Section("resource-servers", heading: w(.resourceServers), intro: w(.backendsThatIntrospectIssuer))
        let mayDelete = may(session, "DELETE /admin/v1/resource-servers/{clientId}")
        servers.table = View.Table(
            id: "resource-servers-table", columns: [w(.clientId), w(.name), w(.added)],
            rows: try await service.resourceServers().resourceServers.map { server in
                View.Row(
                    id: "resource-server-\(server.clientId)", cells: [.code(server.clientId), .init(text: server.name), .init(text: View.time(server.createdAt))],
                    actions: mayDelete
                        ? [.init(id: "delete-resource-server-\(server.clientId)", label: w(.delete), action: "/console/resource-servers/\(Self.encoded(server.clientId))/delete", danger: true)]
                        : [])
            }, empty: w(.noResourceServersYet))
        if may(session, "POST /admin/v1/resource-servers") {
            servers.forms = [
                View.Form(
                    id: "add-resource-server", action: "/console/resource-servers", submit: w(.createTheSecretIs),
                    fields: [View.Field(name: "name", label: w(.name), required: true, maxLength: 200)])
            ]
        }
        return servers
    }

    /// The login-issuers page with a resource server just created: its secret, shown once.
    public func resourceServerCreated(_ session: ConsoleSession, _ created: AdminResourceServerCreated) async throws -> ConsoleView {
        var view = try await loginIssuers(session)
        var section = Section("created-resource-server", heading: w(.resourceServerCreated, created.name))
        section.facts = [.init(label: w(.clientId), value: created.clientId, id: "created-resource-server-id", code: true)]
        section.secret = View.Secret(id: "created-resource-server-secret", label: w(.clientSecretForToken), value: created.clientSecret)
        view.sections.insert(section, at: 0)
        return view
    }
}
