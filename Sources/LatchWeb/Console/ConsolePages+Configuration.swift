import LatchCore
import LatchModel

/// Apps, issuers, test keys, signing keys, custom registration providers, upstream identity providers.
extension ConsolePages {
    public func issuers(_ session: ConsoleSession) async throws -> ConsoleView {
        var view = View(w(.issuers), area: "issuers")
        var section = Section("issuers", intro: w(.customerBackendsWhoseSigned))
        let mayDelete = may(session, "DELETE /admin/v1/issuers/{name}")
        section.table = View.Table(
            id: "issuers-table", columns: [w(.name), w(.keyId), w(.algorithm), w(.audience), w(.allowedClaims), w(.added)],
            rows: try await admin.issuers().issuers.map { issuer in
                View.Row(
                    id: "issuer-\(issuer.name)-\(issuer.keyId)",
                    cells: [
                        .init(text: issuer.name), .code(issuer.keyId), .init(text: issuer.algorithm), .code(issuer.audience),
                        .init(text: issuer.allowedClaims.joined(separator: ", ")), .init(text: View.time(issuer.createdAt)),
                    ],
                    actions: mayDelete
                        ? [.init(id: "delete-issuer-\(issuer.keyId)", label: w(.delete), action: "/console/issuers/\(Self.encoded(issuer.name))/delete", danger: true, fields: ["keyId": issuer.keyId])]
                        : [])
            }, empty: w(.noIssuersYet))
        view.sections = [section] + [addIssuerSection(session)].compactMap { $0 }
        return view
    }

    public func customProviders(_ session: ConsoleSession) async throws -> ConsoleView {
        var view = View(w(.customRegistrationProviders), area: "custom-providers")
        var section = Section("custom-providers", intro: w(.operatorServicesThatDecide))
        let providers = try await services.customRegistration.providers().customProviders
        let mayChange = may(session, "PATCH /admin/v1/custom-providers/{id}")
        let mayDelete = may(session, "DELETE /admin/v1/custom-providers/{id}")
        section.table = View.Table(
            id: "custom-providers-table",
            columns: [w(.id), w(.name), w(.flow), w(.hook), w(.timeout), w(.allowedClaims), w(.enabled)],
            rows: providers.map {
                View.Row(
                    id: "provider-\($0.id)",
                    cells: [
                        .code($0.id), .init(text: $0.name), .init(text: $0.flow), .code($0.hookURL), .init(text: "\($0.timeout) s"),
                        .init(text: $0.allowedClaims.joined(separator: ", ")), .init(text: $0.enabled ? w(.yes) : w(.no)),
                    ],
                    actions: (mayChange
                        ? [.init(
                            id: "toggle-provider-\($0.id)", label: $0.enabled ? w(.disable) : w(.enable),
                            action: "/console/custom-providers/\(Self.encoded($0.id))/enabled", fields: ["enabled": $0.enabled ? "false" : "true"])]
                        : [])
                        + (mayDelete
                            ? [.init(id: "delete-provider-\($0.id)", label: w(.delete), action: "/console/custom-providers/\(Self.encoded($0.id))/delete", danger: true)]
                            : []))
            }, empty: w(.noProvidersYet))
        view.sections = [section] + [addCustomProviderSection(session)].compactMap { $0 }
        return view
    }

    public func upstreamIdPs(_ session: ConsoleSession) async throws -> ConsoleView {
        var view = View(w(.upstreamIdentityProviders), area: "upstream-idps")
        let mayDelete = may(session, "DELETE /admin/v1/upstream-idps/{id}")
        var section = Section("upstream-idps", intro: w(.openidProvidersUsersSign))
        let idps = try await admin.upstreamIdPList(issuer: services.issuer).upstreamIdps
        section.table = View.Table(
            id: "upstream-idps-table", columns: [w(.id), w(.name), w(.issuer), w(.client), w(.scopes), w(.callbackURL)],
            rows: idps.map {
                View.Row(
                    id: "idp-\($0.id)",
                    cells: [
                        .code($0.id), .init(text: $0.displayName), .code($0.issuer), .code($0.clientId), .init(text: $0.scopes.joined(separator: " ")),
                        .code($0.callbackURL),
                    ],
                    actions: mayDelete
                        ? [.init(id: "delete-idp-\($0.id)", label: w(.delete), action: "/console/upstream-idps/\(Self.encoded($0.id))/delete", danger: true)] : [])
            }, empty: w(.noUpstreamIdentityProviders))
        view.sections = [section] + [addUpstreamIdPSection(session)].compactMap { $0 }
        return view
    }

    public func testKeys(_ session: ConsoleSession) async throws -> ConsoleView {
        var view = View(w(.testRegistrationKeys), area: "test-keys")
        var section = Section(
            "test-keys",
            intro: w(.keysThatRegisterTest))
        let mayDelete = may(session, "DELETE /admin/v1/test-keys/{keyId}")
        section.table = View.Table(
            id: "test-keys-table", columns: [w(.keyId), w(.algorithm), w(.created)],
            rows: try await admin.testKeys().testKeys.map { key in
                View.Row(
                    id: "test-key-\(key.keyId)", cells: [.code(key.keyId), .init(text: key.algorithm), .init(text: View.time(key.createdAt))],
                    actions: mayDelete
                        ? [.init(id: "delete-test-key-\(key.keyId)", label: w(.delete), action: "/console/test-keys/\(Self.encoded(key.keyId))/delete", danger: true)] : [])
            }, empty: w(.noTestKeys))
        if may(session, "POST /admin/v1/test-keys") {
            section.forms = [
                View.Form(
                    id: "create-test-key", action: "/console/test-keys", submit: w(.generateAKey),
                    fields: [
                        View.Field(name: "keyId", label: w(.keyIdOptional), maxLength: 128),
                        View.Field(name: "algorithm", label: w(.algorithm), kind: .select([("RS256", "RS256"), ("ES256", "ES256"), ("ES384", "ES384")]), value: "RS256"),
                    ])
            ]
        }
        view.sections = [section]
        return view
    }

    /// The test-key page with a key just created: its private key, shown once.
    public func testKeyCreated(_ session: ConsoleSession, _ created: AdminTestKeyCreated) async throws -> ConsoleView {
        var view = try await testKeys(session)
        var section = Section("created-key", heading: w(.testKeyCreated, created.keyId))
        section.secret = View.Secret(id: "test-key-private", label: w(.privateKeyPKCS8), value: created.privateKey, filename: "\(created.keyId).pem")
        view.sections.insert(section, at: 0)
        return view
    }

    public func signingKeys(_ session: ConsoleSession) async throws -> ConsoleView {
        var view = View(w(.signingKeys), area: "signing-keys")
        let now = services.clock.seconds()
        var section = Section(
            "signing-keys", intro: w(.latchSignsTokensWith))
        section.table = View.Table(
            id: "signing-keys-table", columns: [w(.keyId), w(.algorithm), w(.created), w(.age), w(.state)],
            rows: try await admin.signingKeys().map {
                View.Row(
                    id: "signing-key-\($0.keyID)",
                    cells: [
                        .code($0.keyID), .init(text: $0.algorithm), .init(text: View.time($0.createdAt)), .init(text: View.age(now - $0.createdAt)),
                        .init(text: $0.retiredAt.map { w(.retired, View.time($0)) } ?? w(.active)),
                    ])
            }, empty: w(.noSigningKeys))
        if may(session, "POST /admin/v1/keys/rotate") {
            section.forms = [
                View.Form(
                    id: "rotate", action: "/console/signing-keys/rotate", submit: w(.rotateNow), danger: true,
                    fields: [View.Field(name: "back", label: "", kind: .hidden, value: "/console/signing-keys")])
            ]
        }
        view.sections = [section]
        return view
    }
}
