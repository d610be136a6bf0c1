import Foundation
import LatchCore
import LatchModel

/// Users (the list, one user with their sessions, devices, authenticators and security events), out-of-band
/// enrollment, and the audit log.
extension ConsolePages {
    public func users(after cursor: String?) async throws -> ConsoleView {
        var view = View(w(.users), area: "users")
        var search = Section("search")
        search.forms = [
            View.Form(
                id: "user-search", action: "/console/users", submit: w(.find), method: "get",
                fields: [View.Field(name: "q", label: w(.userIdOrUsername), placeholder: w(.idOrUsername))])
        ]
        let page = try await admin.users(after: cursor, limit: 50)
        var list = Section("users", heading: w(.users))
        list.table = View.Table(
            id: "users-table", columns: [w(.id), w(.username), w(.kind), w(.registered)],
            rows: page.users.map {
                View.Row(id: "user-\($0.id)", cells: [.link($0.id, "/console/users/" + Self.encoded($0.id)), .init(text: $0.username), .init(text: $0.kind), .init(text: View.time($0.createdAt))])
            }, empty: w(.noUsersYet))
        if let next = page.nextCursor { list.links = [("users-next", w(.nextPage), "/console/users?after=" + Self.encoded(next))] }
        view.sections = [search, list]
        return view
    }

    /// The users page after a search found no one.
    public func usersNotFound(_ query: String) async throws -> ConsoleView {
        var view = try await users(after: nil)
        view.error = w(.noUserHasThe, String(query.prefix(256)))
        return view
    }

    public func user(_ id: String, session: ConsoleSession) async throws -> ConsoleView {
        let user = try await admin.user(id: id)
        let base = "/console/users/" + Self.encoded(user.id)
        var view = View(w(.userX, user.username), area: "users")
        view.sections = [profile(user, session: session, base: base), try await sessions(user, session: session, base: base), try await devices(user)]
        view.sections.append(try await authenticators(user, fido: services.fido, session: session, base: base))
        if may(session, "POST /admin/v1/users/{id}/enrollments") {
            var oob = Section("oob", heading: w(.enrollOutOfBand))
            oob.links = [("oob-link", w(.showAnEnrollmentQR), "/console/oob?user=" + Self.encoded(user.id))]
            view.sections.append(oob)
        }
        if may(session, "GET /admin/v1/audit") {
            let audit = services.audit
            var events = Section("security-events", heading: w(.recentSecurityEvents))
            events.table = View.Table(
                id: "security-events-table", columns: [w(.time), w(.event), w(.detail)],
                rows: try await audit.events(of: user.id, limit: "20", cursor: nil).events.map {
                    View.Row(id: "event-\($0.id)", cells: [.init(text: View.time($0.at)), .code($0.type), .init(text: $0.detail ?? "")])
                }, empty: w(.noneRecorded))
            events.links = [("audit-link", w(.allOfThisUser), "/console/audit?subject=" + Self.encoded(user.id))]
            view.sections.append(events)
        }
        return view
    }

    func profile(_ user: AdminUser, session: ConsoleSession, base: String) -> Section {
        var profile = Section("profile", heading: w(.profile))
        profile.facts = [
            .init(label: w(.id), value: user.id, id: "user-id", code: true), .init(label: w(.username), value: user.username, id: "user-username"),
            .init(label: w(.kind), value: user.kind, id: "user-kind"), .init(label: w(.registered), value: View.time(user.createdAt), id: "user-created"),
        ]
        if let issuer = user.issuer { profile.facts.append(.init(label: w(.issuer), value: issuer, id: "user-issuer", code: true)) }
        if let subject = user.subject { profile.facts.append(.init(label: w(.subject), value: subject, id: "user-subject", code: true)) }
        for (name, value) in user.claims.sorted(by: { $0.key < $1.key }) {
            let text = value.stringValue ?? String(decoding: value.serialized(), as: UTF8.self)
            profile.facts.append(.init(label: w(.claimX, name), value: text, id: "claim-\(name)"))
        }
        if may(session, "POST /admin/v1/users/{id}/sign-out") {
            profile.forms.append(View.Form(id: "revoke-sessions", action: base + "/sign-out", submit: w(.signOutEverywhere), fields: []))
        }
        if may(session, "DELETE /admin/v1/users/{id}") {
            profile.forms.append(View.Form(
                id: "delete-user", action: base + "/delete", submit: w(.deleteThisUser), danger: true,
                fields: [View.Field(name: "back", label: "", kind: .hidden, value: base)]))
        }
        return profile
    }

    func sessions(_ user: AdminUser, session: ConsoleSession, base: String) async throws -> Section {
        var sessions = Section("sessions", heading: w(.sessions))
        let mayRevoke = may(session, "DELETE /admin/v1/users/{id}/sessions/{sessionId}")
        sessions.table = View.Table(
            id: "sessions-table", columns: [w(.session), w(.app), w(.signedIn), w(.methods), w(.expires), "DPoP"],
            rows: try await admin.sessions(userID: user.id).sessions.map { item in
                View.Row(
                    id: "session-\(item.id)",
                    cells: [
                        .code(item.id), .code(item.clientId), .init(text: View.time(item.authTime)), .init(text: item.amr.joined(separator: ", ")),
                        .init(text: View.time(item.expiresAt)), .init(text: item.dpopBound ? w(.bound) : "—"),
                    ],
                    actions: mayRevoke
                        ? [.init(id: "revoke-session-\(item.id)", label: w(.revoke), action: base + "/sessions/" + Self.encoded(item.id) + "/revoke", danger: true)] : [])
            }, empty: w(.noLiveSessions))
        return sessions
    }

    func devices(_ user: AdminUser) async throws -> Section {
        var devices = Section("devices", heading: w(.devices))
        devices.table = View.Table(
            id: "devices-table", columns: [w(.key), w(.algorithm), w(.attestation), w(.counter), w(.registered)],
            rows: try await admin.devices(userID: user.id).devices.map {
                View.Row(
                    id: "device-\($0.keyId)",
                    cells: [.code($0.keyId), .init(text: $0.algorithm), .init(text: $0.attestation ?? "—"), .init(text: $0.signCount.map(String.init) ?? "—"), .init(text: View.time($0.createdAt))])
            }, empty: w(.noDeviceSignIn))
        return devices
    }

    func authenticators(_ user: AdminUser, fido: FidoService, session: ConsoleSession, base: String) async throws -> Section {
        var authenticators = Section("authenticators", heading: w(.authenticators))
        let mayDelete = may(session, "DELETE /admin/v1/users/{id}/authenticators/{authenticator}")
        authenticators.table = View.Table(
            id: "authenticators-table", columns: [w(.name), w(.modelAAGUID), w(.registered), w(.lastUsed), "PIN"],
            rows: try await fido.adminList(userID: user.id).authenticators.map { item in
                var row = View.Row(
                    id: "authenticator-\(item.id)",
                    cells: [
                        .init(text: item.name), .code(item.aaguid), .init(text: View.time(item.createdAt)), .init(text: View.time(item.lastUsedAt)),
                        .init(text: item.pinStatus.map { w(.triesLeft, $0.state, String($0.remainingTries)) } ?? "—"),
                    ])
                if mayDelete {
                    let path = base + "/authenticators/" + Self.encoded(item.id)
                    if let state = item.pinStatus?.state, state != "active" { row.actions.append(.init(id: "unlock-\(item.id)", label: w(.unlock), action: path + "/unlock")) }
                    row.actions.append(.init(id: "delete-authenticator-\(item.id)", label: w(.delete), action: path + "/delete", danger: true))
                }
                return row
            }, empty: w(.noFIDOAuthenticators))
        return authenticators
    }

    public func oob(userID: String?) -> ConsoleView {
        var view = View(w(.outOfBandEnrollment), area: "oob")
        var section = Section("oob-form", intro: w(.showAQRCode))
        section.forms = [
            View.Form(
                id: "oob-create", action: "/console/oob", submit: w(.showTheQRCode),
                fields: [
                    View.Field(name: "user", label: w(.userId), value: userID ?? "", required: true),
                    View.Field(name: "createUser", label: w(.createTheUserWhen), kind: .checkbox),
                    View.Field(name: "username", label: w(.usernameOfAUser)),
                ])
        ]
        view.sections = [section]
        return view
    }

    /// The out-of-band page with the QR code of an enrollment just created.
    public func oobCreated(_ created: OutOfBandEnrollmentResponse, userID: String) -> ConsoleView {
        var view = oob(userID: userID)
        var section = Section("oob-qr", heading: w(.scanWithTheApp))
        section.intro = w(.theAppOnThe)
        section.image = View.Image(id: "oob-qr-code", src: created.enrollment.qrCode.dataUri, alt: w(.qrCodeOfThe), size: created.enrollment.qrCode.size)
        section.facts = [
            .init(label: w(.user), value: created.userId, id: "oob-user", code: true),
            .init(label: w(.link), value: created.enrollment.appLinkUri, id: "oob-link", code: true),
            .init(label: w(.transaction), value: created.enrollment.transactionId, id: "oob-transaction", code: true),
            .init(label: w(.expires), value: View.time(created.enrollment.expiresAt), id: "oob-expires"),
        ]
        view.sections.insert(section, at: 0)
        return view
    }
}
