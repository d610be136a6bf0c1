import Foundation
import Hummingbird
import LatchCore
import LatchModel
import LatchWeb

/// The console's pages and actions, one area each. Each names the admin API route whose roles it takes.
extension ConsoleController {
    typealias View = ConsoleView
    typealias Section = ConsoleView.Section

    func addPages(to console: RouterGroup<LatchRequestContext>) {
        console.get { request, context in await handle(request, context, route: "GET /admin/v1/users") { session, _ in .view(try await overview(session)) } }
        addUsers(to: console)
        addConfiguration(to: console)
        addSetup(to: console)
        addIssuerLogin(to: console)
        addAdmins(to: console)
        console.get("audit") { request, context in
            await handle(request, context, route: "GET /admin/v1/audit") { _, _ in .view(try await auditPage(request)) }
        }
    }

    /// Whether `session`'s role may call `route` (to leave out what it could not do).
    func may(_ session: ConsoleSession, _ route: String) -> Bool {
        let parts = route.split(separator: " ", maxSplits: 1).map { String($0) }
        return AdminPolicy.allowedRoles(method: parts[0], template: parts[1]).contains(session.caller.role)
    }

    /// A flash message after a redirect: one of a fixed set, so a link cannot put words in the console's mouth.
    static let flashes: [String: String] = [
        "signed-out-user": "Every session of the user was revoked.", "revoked-session": "The session was revoked.", "deleted-user": "The user was deleted.",
        "deleted-authenticator": "The authenticator was deleted.", "unlocked": "The authenticator was unlocked.",
        "saved-app": "The app's settings were saved.", "created-app": "The app was created.", "deleted-issuer": "The issuer was deleted.",
        "deleted-test-key": "The test key was deleted.", "saved-provider": "The provider was saved.",
        "deleted-provider": "The provider was deleted.", "deleted-idp": "The upstream identity provider was deleted.", "revoked-token": "The token was revoked.", "deleted-admin": "The admin account was deleted.",
        "added-issuer": "The issuer key was added.", "added-idp": "The upstream identity provider was added: register its callback URL there.",
        "added-provider": "The provider was added.", "saved-evidence": "The app's device-evidence settings were saved.",
        "added-login-issuer": "The login issuer was added.", "deleted-login-issuer": "The login issuer was deleted.",
        "consumer-logged-out": "Every session of the consumer with that issuer was revoked.", "deleted-resource-server": "The resource server was deleted.",
        "added-certificate": "The signing certificate was added.", "deleted-certificate": "The signing certificate was deleted.",
        "rotated": "A new signing key is active; the previous one stays published until the tokens it signed expire.",
    ]

    func flash(_ view: inout View, _ request: Request) {
        if let key = request.uri.queryParameters.get("done") { view.flash = Self.flashes[String(key)] }
    }

    /// `text` percent-encoded for a path segment or query value.
    static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
    }

    // MARK: Overview

    func overview(_ session: ConsoleSession) async throws -> View {
        var view = View("Overview", area: "overview")
        let now = services.clock.seconds()
        var activity = Section("activity", heading: "Activity")
        if let audit = services.audit, may(session, "GET /admin/v1/audit") {
            func count(_ type: String, since: Int64) async throws -> String {
                let page = try await audit.page(AuditLog.Filters(type: type, since: String(since), limit: "500"))
                return page.nextCursor == nil ? String(page.records.count) : "500+"
            }
            activity.facts = [
                .init(label: "Sign-ins, last hour", value: try await count("signin.succeeded", since: now - 3_600), id: "signins-hour"),
                .init(label: "Failed sign-ins, last hour", value: try await count("signin.failed", since: now - 3_600), id: "failures-hour"),
                .init(label: "Registrations, last 24 h", value: try await count("user.registered", since: now - 86_400), id: "registrations-day"),
                .init(label: "Refresh token reuse, last 24 h", value: try await count("token.reuse_detected", since: now - 86_400), id: "reuse-day"),
            ]
        } else {
            activity.intro = "Your role does not read the audit log, where these figures come from."
        }
        let users = try await admin.users(after: nil, limit: 200)
        activity.facts.insert(.init(label: "Users", value: users.nextCursor == nil ? String(users.users.count) : "200+", id: "users-count"), at: 0)
        view.sections.append(activity)
        if may(session, "POST /admin/v1/keys/rotate") || may(session, "GET /admin/v1/clients") {
            var keys = Section("key-ages", heading: "Keys and their ages")
            keys.table = View.Table(
                id: "key-ages-table", columns: ["Key", "Kind", "Age"],
                rows: try await admin.signingKeys().filter { $0.retiredAt == nil }.map {
                    View.Row(id: "key-\($0.keyID)", cells: [.code($0.keyID), .init(text: "token signing (\($0.algorithm))"), .init(text: View.age(now - $0.createdAt))])
                } + (try await admin.testKeys().testKeys.map {
                    View.Row(id: "test-key-\($0.keyId)", cells: [.code($0.keyId), .init(text: "test registration key"), .init(text: View.age(now - $0.createdAt))])
                }),
                empty: "No keys.")
            view.sections.append(keys)
        }
        var tokens = Section("tokens-expiring", heading: "Admin tokens expiring within 14 days")
        tokens.table = View.Table(
            id: "expiring-table", columns: ["Token", "Account", "Role", "Expires"],
            rows: try await admin.adminTokens(caller: session.caller).tokens.filter { ($0.expiresAt ?? .max) - now < 14 * 86_400 && $0.name != "console session" }
                .map { View.Row(id: "expiring-\($0.id)", cells: [.code($0.name), .code($0.accountId), .init(text: $0.role.rawValue), .init(text: View.time($0.expiresAt))]) },
            empty: "None.")
        view.sections.append(tokens)
        return view
    }

    // MARK: Users

    func addUsers(to console: RouterGroup<LatchRequestContext>) {
        console.get("users") { request, context in
            await handle(request, context, route: "GET /admin/v1/users") { _, _ in
                let parameters = request.uri.queryParameters
                if let query = parameters.get("q").map({ String($0) }), !query.isEmpty {
                    if let user = try await admin.findUser(query) { return .redirect("/console/users/" + Self.encoded(user.id)) }
                    var view = try await usersPage(after: nil)
                    view.error = "No user has the id or username \(query.prefix(256))."
                    return .view(view)
                }
                var view = try await usersPage(after: parameters.get("after").map { String($0) })
                flash(&view, request)
                return .view(view)
            }
        }
        console.get("users/:id") { request, context in
            await handle(request, context, route: "GET /admin/v1/users/{id}") { session, _ in
                var view = try await userPage(try context.parameters.require("id"), session: session)
                flash(&view, request)
                return .view(view)
            }
        }
        console.post("users/:id/sign-out") { request, context in
            await handle(request, context, route: "POST /admin/v1/users/{id}/sign-out") { _, _ in
                let id = try context.parameters.require("id")
                _ = try await admin.revokeSessions(userID: id)
                return .redirect("/console/users/\(Self.encoded(id))?done=signed-out-user")
            }
        }
        console.post("users/:id/sessions/:session/revoke") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/users/{id}/sessions/{sessionId}") { _, _ in
                let id = try context.parameters.require("id")
                try await admin.revokeSession(userID: id, sessionID: try context.parameters.require("session"))
                return .redirect("/console/users/\(Self.encoded(id))?done=revoked-session")
            }
        }
        console.post("users/:id/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/users/{id}", dangerous: true) { _, _ in
                try await admin.deleteUser(id: try context.parameters.require("id"))
                return .redirect("/console/users?done=deleted-user")
            }
        }
        console.post("users/:id/authenticators/:authenticator/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/users/{id}/authenticators/{authenticator}") { _, _ in
                guard let fido = services.fido else { throw LatchError.notFound("FIDO authenticators are not served here") }
                let id = try context.parameters.require("id")
                try await fido.adminDelete(userID: id, authenticatorID: try context.parameters.require("authenticator"))
                return .redirect("/console/users/\(Self.encoded(id))?done=deleted-authenticator")
            }
        }
        console.post("users/:id/authenticators/:authenticator/unlock") { request, context in
            await handle(request, context, route: "POST /admin/v1/users/{id}/authenticators/{authenticator}/unlock") { _, _ in
                guard let fido = services.fido else { throw LatchError.notFound("FIDO authenticators are not served here") }
                let id = try context.parameters.require("id")
                _ = try await fido.unlock(userID: id, authenticatorID: try context.parameters.require("authenticator"))
                return .redirect("/console/users/\(Self.encoded(id))?done=unlocked")
            }
        }
        console.get("oob") { request, context in
            await handle(request, context, route: "POST /admin/v1/users/{id}/enrollments") { _, _ in .view(oobPage(userID: request.uri.queryParameters.get("user").map { String($0) })) }
        }
        console.post("oob") { request, context in
            await handle(request, context, route: "POST /admin/v1/users/{id}/enrollments") { _, form in
                guard let oob = services.oob else { throw LatchError.notFound("out-of-band enrollment is not served here") }
                guard let userID = form["user"]?.trimmingCharacters(in: .whitespaces), !userID.isEmpty else {
                    throw LatchError.invalidInput("a user id is required")
                }
                let created = try await oob.enroll(
                    userID: userID,
                    OutOfBandEnrollmentRequest(createUser: form["createUser"] == "true", username: form["username"].flatMap { $0.isEmpty ? nil : $0 }),
                    requestedBy: "admin")
                var view = oobPage(userID: userID)
                var section = Section("oob-qr", heading: "Scan with the app")
                section.intro = "The app on the user's phone scans this code (or opens the link) to enroll an authenticator. It works once, until it expires."
                section.image = View.Image(id: "oob-qr-code", src: created.enrollment.qrCode.dataUri, alt: "QR code of the enrollment link", size: created.enrollment.qrCode.size)
                section.facts = [
                    .init(label: "User", value: created.userId, id: "oob-user", code: true),
                    .init(label: "Link", value: created.enrollment.appLinkUri, id: "oob-link", code: true),
                    .init(label: "Transaction", value: created.enrollment.transactionId, id: "oob-transaction", code: true),
                    .init(label: "Expires", value: View.time(created.enrollment.expiresAt), id: "oob-expires"),
                ]
                view.sections.insert(section, at: 0)
                return .view(view)
            }
        }
    }

    func usersPage(after cursor: String?) async throws -> View {
        var view = View("Users", area: "users")
        var search = Section("search")
        search.forms = [
            View.Form(
                id: "user-search", action: "/console/users", submit: "Find", method: "get",
                fields: [View.Field(name: "q", label: "User id or username", placeholder: "id or username")])
        ]
        let page = try await admin.users(after: cursor, limit: 50)
        var list = Section("users", heading: "Users")
        list.table = View.Table(
            id: "users-table", columns: ["Id", "Username", "Kind", "Registered"],
            rows: page.users.map {
                View.Row(id: "user-\($0.id)", cells: [.link($0.id, "/console/users/" + Self.encoded($0.id)), .init(text: $0.username), .init(text: $0.kind), .init(text: View.time($0.createdAt))])
            }, empty: "No users yet.")
        if let next = page.nextCursor { list.links = [("users-next", "Next page", "/console/users?after=" + Self.encoded(next))] }
        view.sections = [search, list]
        return view
    }

    func userPage(_ id: String, session: ConsoleSession) async throws -> View {
        let user = try await admin.user(id: id)
        let base = "/console/users/" + Self.encoded(user.id)
        var view = View("User \(user.username)", area: "users")
        var profile = Section("profile", heading: "Profile")
        profile.facts = [
            .init(label: "Id", value: user.id, id: "user-id", code: true), .init(label: "Username", value: user.username, id: "user-username"),
            .init(label: "Kind", value: user.kind, id: "user-kind"), .init(label: "Registered", value: View.time(user.createdAt), id: "user-created"),
        ]
        if let issuer = user.issuer { profile.facts.append(.init(label: "Issuer", value: issuer, id: "user-issuer", code: true)) }
        if let subject = user.subject { profile.facts.append(.init(label: "Subject", value: subject, id: "user-subject", code: true)) }
        for (name, value) in user.claims.sorted(by: { $0.key < $1.key }) {
            let text = value.stringValue ?? String(decoding: value.serialized(), as: UTF8.self)
            profile.facts.append(.init(label: "Claim \(name)", value: text, id: "claim-\(name)"))
        }
        var actions: [View.Form] = []
        if may(session, "POST /admin/v1/users/{id}/sign-out") {
            actions.append(View.Form(id: "revoke-sessions", action: base + "/sign-out", submit: "Sign out everywhere", fields: []))
        }
        if may(session, "DELETE /admin/v1/users/{id}") {
            actions.append(View.Form(
                id: "delete-user", action: base + "/delete", submit: "Delete this user", danger: true,
                fields: [View.Field(name: "back", label: "", kind: .hidden, value: base)]))
        }
        profile.forms = actions
        view.sections = [profile]
        var sessions = Section("sessions", heading: "Sessions")
        let mayRevoke = may(session, "DELETE /admin/v1/users/{id}/sessions/{sessionId}")
        sessions.table = View.Table(
            id: "sessions-table", columns: ["Session", "App", "Signed in", "Methods", "Expires", "DPoP"],
            rows: try await admin.sessions(userID: user.id).sessions.map { item in
                View.Row(
                    id: "session-\(item.id)",
                    cells: [
                        .code(item.id), .code(item.clientId), .init(text: View.time(item.authTime)), .init(text: item.amr.joined(separator: ", ")),
                        .init(text: View.time(item.expiresAt)), .init(text: item.dpopBound ? "bound" : "—"),
                    ],
                    actions: mayRevoke
                        ? [.init(id: "revoke-session-\(item.id)", label: "Revoke", action: base + "/sessions/" + Self.encoded(item.id) + "/revoke", danger: true)] : [])
            }, empty: "No live sessions.")
        var devices = Section("devices", heading: "Devices")
        devices.table = View.Table(
            id: "devices-table", columns: ["Key", "Algorithm", "Attestation", "Counter", "Registered"],
            rows: try await admin.devices(userID: user.id).devices.map {
                View.Row(
                    id: "device-\($0.keyId)",
                    cells: [.code($0.keyId), .init(text: $0.algorithm), .init(text: $0.attestation ?? "—"), .init(text: $0.signCount.map(String.init) ?? "—"), .init(text: View.time($0.createdAt))])
            }, empty: "No device sign-in keys.")
        view.sections += [sessions, devices]
        if let fido = services.fido {
            var authenticators = Section("authenticators", heading: "Authenticators")
            let mayDelete = may(session, "DELETE /admin/v1/users/{id}/authenticators/{authenticator}")
            authenticators.table = View.Table(
                id: "authenticators-table", columns: ["Name", "Model (AAGUID)", "Registered", "Last used", "PIN"],
                rows: try await fido.adminList(userID: user.id).authenticators.map { item in
                    var row = View.Row(
                        id: "authenticator-\(item.id)",
                        cells: [
                            .init(text: item.name), .code(item.aaguid), .init(text: View.time(item.createdAt)), .init(text: View.time(item.lastUsedAt)),
                            .init(text: item.pinStatus.map { "\($0.state), \($0.remainingTries) tries left" } ?? "—"),
                        ])
                    if mayDelete {
                        let path = base + "/authenticators/" + Self.encoded(item.id)
                        if let state = item.pinStatus?.state, state != "active" { row.actions.append(.init(id: "unlock-\(item.id)", label: "Unlock", action: path + "/unlock")) }
                        row.actions.append(.init(id: "delete-authenticator-\(item.id)", label: "Delete", action: path + "/delete", danger: true))
                    }
                    return row
                }, empty: "No FIDO authenticators.")
            view.sections.append(authenticators)
        }
        if services.oob != nil, may(session, "POST /admin/v1/users/{id}/enrollments") {
            var oob = Section("oob", heading: "Enroll out of band")
            oob.links = [("oob-link", "Show an enrollment QR code", "/console/oob?user=" + Self.encoded(user.id))]
            view.sections.append(oob)
        }
        if let audit = services.audit, may(session, "GET /admin/v1/audit") {
            var events = Section("security-events", heading: "Recent security events")
            events.table = View.Table(
                id: "security-events-table", columns: ["Time", "Event", "Detail"],
                rows: try await audit.events(of: user.id, limit: "20", cursor: nil).events.map {
                    View.Row(id: "event-\($0.id)", cells: [.init(text: View.time($0.at)), .code($0.type), .init(text: $0.detail ?? "")])
                }, empty: "None recorded.")
            events.links = [("audit-link", "All of this user's records", "/console/audit?subject=" + Self.encoded(user.id))]
            view.sections.append(events)
        }
        return view
    }

    func oobPage(userID: String?) -> View {
        var view = View("Out-of-band enrollment", area: "oob")
        var section = Section("oob-form", intro: "Show a QR code that the user's phone scans to enroll a FIDO authenticator in the app.")
        section.forms = [
            View.Form(
                id: "oob-create", action: "/console/oob", submit: "Show the QR code",
                fields: [
                    View.Field(name: "user", label: "User id", value: userID ?? "", required: true),
                    View.Field(name: "createUser", label: "Create the user when it does not exist", kind: .checkbox),
                    View.Field(name: "username", label: "Username of a user created here (default: the id)"),
                ])
        ]
        view.sections = [section]
        return view
    }

    // MARK: Audit log

    func auditPage(_ request: Request) async throws -> View {
        guard let audit = services.audit else { throw LatchError.notFound("the audit log is not served here") }
        func value(_ name: String) -> String? { request.uri.queryParameters.get(name).map { String($0) }.flatMap { $0.isEmpty ? nil : $0 } }
        let filters = AuditLog.Filters(
            type: value("type"), actor: value("actor"), subject: value("subject"), since: value("since"), until: value("until"), limit: "100",
            cursor: value("cursor"))
        var view = View("Audit log", area: "audit")
        var form = Section("audit-filters")
        form.forms = [
            View.Form(
                id: "audit-filter", action: "/console/audit", submit: "Filter", method: "get",
                fields: [
                    View.Field(name: "type", label: "Types", value: filters.type ?? "", placeholder: "signin.failed, admin.", hint: "Comma-separated; a trailing dot matches a prefix."),
                    View.Field(name: "actor", label: "Actor", value: filters.actor ?? "", placeholder: "user, anonymous, system or admin:<account>/<token>"),
                    View.Field(name: "subject", label: "Subject (user id)", value: filters.subject ?? ""),
                    View.Field(name: "since", label: "Since", value: filters.since ?? "", placeholder: "2026-11-24T00:00:00Z or Unix seconds"),
                    View.Field(name: "until", label: "Until", value: filters.until ?? ""),
                ])
        ]
        view.sections = [form]
        let page: AuditPage
        do {
            page = try await audit.page(filters)
        } catch let error as LatchError where error.code == .invalidInput {
            view.error = error.message
            view.errorCode = error.code.rawValue
            view.status = 400
            return view
        }
        var records = Section("audit-records")
        records.table = View.Table(
            id: "audit-table", columns: ["#", "Time", "Type", "Actor", "Subject", "Client", "Detail", "Address", "User agent"],
            rows: page.records.map {
                View.Row(
                    id: "record-\($0.seq)",
                    cells: [
                        .init(text: String($0.seq)), .init(text: View.time($0.at)), .code($0.type), .code($0.actor),
                        $0.subject.map { .link($0, "/console/users/" + Self.encoded($0)) } ?? .init(text: ""), .init(text: $0.client ?? ""),
                        .init(text: $0.detail ?? ""), .init(text: $0.address ?? ""), .init(text: $0.userAgent ?? ""),
                    ])
            }, empty: "No records match.")
        if let next = page.nextCursor {
            var query = "cursor=" + Self.encoded(next)
            for name in ["type", "actor", "subject", "since", "until"] { if let v = value(name) { query += "&\(name)=" + Self.encoded(v) } }
            records.links = [("audit-next", "Older records", "/console/audit?" + query)]
        }
        view.sections.append(records)
        return view
    }
}
