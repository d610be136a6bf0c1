import LatchCore
import LatchModel

/// Admin accounts, the admin's passkeys, admin tokens, and enrollment links.
extension ConsolePages {
    public func admins(_ session: ConsoleSession) async throws -> ConsoleView {
        var view = View(w(.adminsAndTokens), area: "admins")
        var passkeys = Section("passkeys", heading: w(.yourPasskeys))
        passkeys.table = View.Table(
            id: "passkeys-table", columns: [w(.name), w(.id), w(.created), w(.lastUsed)],
            rows: try await services.signIn.passkeys(accountID: session.caller.accountID).map {
                View.Row(id: "passkey-\($0.id)", cells: [.init(text: $0.name), .code($0.id), .init(text: View.time($0.createdAt)), .init(text: View.time($0.lastUsedAt))])
            }, empty: w(.noneWord))
        let accounts = may(session, "GET /admin/v1/admins") ? [try await accountsSection(session)] : []
        view.sections = accounts + [passkeys, try await tokensSection(session)]
        return view
    }

    func accountsSection(_ session: ConsoleSession) async throws -> Section {
        let owner = may(session, "POST /admin/v1/admins")
        var accounts = Section("accounts", heading: w(.adminAccounts))
        accounts.table = View.Table(
            id: "admins-table", columns: [w(.username), w(.id), w(.role), w(.created), w(.createdBy)],
            rows: try await admin.adminAccounts().admins.map { account in
                View.Row(
                    id: "admin-\(account.id)",
                    cells: [.init(text: account.username), .code(account.id), .init(text: account.role.rawValue), .init(text: View.time(account.createdAt)), .code(account.createdBy ?? "—")],
                    actions: owner
                        ? [
                            .init(id: "enroll-\(account.id)", label: w(.enrollmentLink), action: "/console/admins/\(Self.encoded(account.id))/enrollment"),
                            .init(
                                id: "delete-admin-\(account.id)", label: w(.delete), action: "/console/admins/\(Self.encoded(account.id))/delete", danger: true,
                                fields: ["back": "/console/admins"]),
                        ] : [])
            }, empty: w(.noAccounts))
        if owner {
            accounts.forms = [
                View.Form(
                    id: "create-admin", action: "/console/admins", submit: w(.createTheAccount),
                    fields: [
                        View.Field(name: "username", label: w(.username), required: true, maxLength: 64),
                        View.Field(name: "role", label: w(.role), kind: .select(AdminRole.allCases.sorted(by: >).map { ($0.rawValue, $0.rawValue) }), value: "admin"),
                        View.Field(name: "back", label: "", kind: .hidden, value: "/console/admins"),
                    ])
            ]
        }
        return accounts
    }

    func tokensSection(_ session: ConsoleSession) async throws -> Section {
        var tokens = Section("tokens", heading: w(.adminTokens))
        let now = services.clock.seconds()
        let mayRevoke = may(session, "DELETE /admin/v1/tokens/{id}")
        tokens.table = View.Table(
            id: "tokens-table", columns: [w(.name), w(.id), w(.account), w(.role), w(.created), w(.expires)],
            rows: try await admin.adminTokens(caller: session.caller).tokens.map { token in
                View.Row(
                    id: "token-\(token.id)",
                    cells: [
                        .init(text: token.name), .code(token.id), .code(token.accountId), .init(text: token.role.rawValue), .init(text: View.time(token.createdAt)),
                        .init(text: token.expiresAt.map { $0 <= now ? w(.expired) : View.time($0) } ?? w(.never)),
                    ],
                    actions: token.id == session.caller.tokenID || !mayRevoke
                        ? [] : [.init(id: "revoke-\(token.id)", label: w(.revoke), action: "/console/tokens/\(Self.encoded(token.id))/revoke", danger: true)])
            }, empty: w(.noTokens))
        if may(session, "POST /admin/v1/tokens") {
            tokens.forms = [
                View.Form(
                    id: "create-token", action: "/console/tokens", submit: w(.createAToken),
                    fields: [
                        View.Field(name: "name", label: w(.name), required: true, maxLength: 64),
                        View.Field(
                            name: "role", label: w(.role),
                            kind: .select([("", w(.theAccountS))] + AdminRole.allCases.sorted(by: >).map { ($0.rawValue, $0.rawValue) })),
                        View.Field(name: "days", label: w(.lifetimeDays), kind: .text(type: "number"), value: "90"),
                        View.Field(name: "back", label: "", kind: .hidden, value: "/console/admins"),
                    ])
            ]
        }
        return tokens
    }

    /// The admins page with a token just created: its value, shown once.
    public func tokenCreated(_ session: ConsoleSession, _ created: AdminTokenCreated) async throws -> ConsoleView {
        var view = try await admins(session)
        var section = Section("created-token", heading: w(.tokenCreated, created.name))
        section.facts = [
            .init(label: w(.id), value: created.id, id: "created-token-id", code: true), .init(label: w(.role), value: created.role.rawValue, id: "created-token-role"),
            .init(label: w(.expires), value: View.time(created.expiresAt), id: "created-token-expires"),
        ]
        section.secret = View.Secret(id: "created-token-value", label: w(.tokenAuthorizationBearer), value: created.token)
        view.sections.insert(section, at: 0)
        return view
    }

    /// The admins page with a new enrollment link for `accountID` (`created`: the account was just created).
    public func enrollment(_ session: ConsoleSession, accountID: String, created: Bool) async throws -> ConsoleView {
        let link = try await services.signIn.enrollmentLink(accountID: accountID, issuer: services.issuer)
        var view = try await admins(session)
        var section = Section("enrollment", heading: created ? w(.adminCreated, link.username) : w(.enrollmentLinkFor, link.username))
        section.intro = w(.sendThisLinkTo, link.username)
        section.facts = [
            .init(label: w(.link), value: link.url, id: "enrollment-link", code: true),
            .init(label: w(.expires), value: View.time(link.expiresAt), id: "enrollment-expires"),
        ]
        view.sections.insert(section, at: 0)
        return view
    }
}
