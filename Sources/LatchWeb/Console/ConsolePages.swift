import Foundation
import LatchCore
import LatchModel

/// The console's page builders: each reads the admin engines and describes a page as a ``ConsoleView``, in the
/// words of one language. No HTTP: the server's console controller reads requests, checks sessions and forms, and
/// renders what these return. Each page leaves out what the admin's role may not do (``may(_:_:)``).
public struct ConsolePages: Sendable {
    typealias View = ConsoleView
    typealias Section = ConsoleView.Section

    /// The engines the console reads and the deployment facts its pages show.
    public struct Services: Sendable {
        /// The public base URL (enrollment links, upstream callback URLs).
        public var issuer: String
        public var admin: AdminService
        public var signIn: AdminSignIn
        public var fido: FidoService
        public var oob: OutOfBandService
        public var issuerLogin: IssuerLoginService
        public var customRegistration: CustomRegistrationService
        public var audit: AuditLog
        public var clock: LatchClock

        public init(
            issuer: String, admin: AdminService, signIn: AdminSignIn, fido: FidoService, oob: OutOfBandService, issuerLogin: IssuerLoginService,
            customRegistration: CustomRegistrationService, audit: AuditLog, clock: LatchClock
        ) {
            self.issuer = issuer
            self.admin = admin
            self.signIn = signIn
            self.fido = fido
            self.oob = oob
            self.issuerLogin = issuerLogin
            self.customRegistration = customRegistration
            self.audit = audit
            self.clock = clock
        }
    }

    let services: Services
    /// The words of the page's language.
    public let w: ConsoleWords

    public init(services: Services, language: Language) {
        self.services = services
        w = ConsoleWords(language)
    }

    var admin: AdminService { services.admin }

    /// Whether `session`'s role may call `route` (`"GET /admin/v1/users"`), to leave out what it could not do.
    public static func may(_ session: ConsoleSession, _ route: String) -> Bool {
        let parts = route.split(separator: " ", maxSplits: 1).map { String($0) }
        return AdminPolicy.allowedRoles(method: parts[0], template: parts[1]).contains(session.caller.role)
    }

    func may(_ session: ConsoleSession, _ route: String) -> Bool { Self.may(session, route) }

    /// `text` percent-encoded for a path segment or query value.
    public static func encoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""
    }

    /// `view` with the flash message of a redirect's `done` key: one of a fixed set, so a link cannot put words in
    /// the console's mouth.
    public func flashed(_ view: ConsoleView, _ key: String?) -> ConsoleView {
        var view = view
        if let key, let flash = ConsoleFlash(rawValue: key) { view.flash = w(flash.word) }
        return view
    }

    // MARK: Enrollment

    /// The enrollment page of `ticket` (nil: the link had none): the passkey button for its account, or why not.
    public func enroll(ticket: String?) async throws -> ConsoleView {
        var view = View(w(.enrollAPasskey), area: "")
        guard let ticket else {
            view.error = w(.thisEnrollmentLinkIs)
            view.status = 400
            return view
        }
        do {
            let account = try await services.signIn.enrollmentAccount(ticket: ticket)
            var section = Section(
                "enroll", intro: w(.createAPasskeyFor, account.username, account.role.rawValue))
            section.facts = [
                .init(label: w(.account), value: account.username, id: "enroll-username"), .init(label: w(.role), value: account.role.rawValue, id: "enroll-role"),
            ]
            section.passkey = View.Passkey(
                mode: "enroll", label: w(.createAPasskey), options: "/console/enroll/options", finish: "/console/enroll", ticket: ticket)
            view.sections = [section]
        } catch let error as LatchError {
            view.error = error.message
            view.errorCode = error.code.rawValue
            view.status = 400
        }
        return view
    }

    // MARK: Overview

    public func overview(_ session: ConsoleSession) async throws -> ConsoleView {
        var view = View(w(.overview), area: "overview")
        let now = services.clock.seconds()
        var activity = Section("activity", heading: w(.activity))
        if may(session, "GET /admin/v1/audit") {
            let audit = services.audit
            func count(_ type: String, since: Int64) async throws -> String {
                let page = try await audit.page(AuditLog.Filters(type: type, since: String(since), limit: "500"))
                return page.nextCursor == nil ? String(page.records.count) : "500+"
            }
            activity.facts = [
                .init(label: w(.signInsLastHour), value: try await count("signin.succeeded", since: now - 3_600), id: "signins-hour"),
                .init(label: w(.failedSignInsLast), value: try await count("signin.failed", since: now - 3_600), id: "failures-hour"),
                .init(label: w(.registrationsLast24H), value: try await count("user.registered", since: now - 86_400), id: "registrations-day"),
                .init(label: w(.refreshTokenReuseLast), value: try await count("token.reuse_detected", since: now - 86_400), id: "reuse-day"),
            ]
        } else {
            activity.intro = w(.yourRoleDoesNot)
        }
        let users = try await admin.users(after: nil, limit: 200)
        activity.facts.insert(.init(label: w(.users), value: users.nextCursor == nil ? String(users.users.count) : "200+", id: "users-count"), at: 0)
        view.sections.append(activity)
        if may(session, "POST /admin/v1/keys/rotate") || may(session, "GET /admin/v1/clients") {
            view.sections.append(try await keyAges(now: now))
        }
        var tokens = Section("tokens-expiring", heading: w(.adminTokensExpiringWithin))
        tokens.table = View.Table(
            id: "expiring-table", columns: [w(.token), w(.account), w(.role), w(.expires)],
            rows: try await admin.adminTokens(caller: session.caller).tokens.filter { ($0.expiresAt ?? .max) - now < 14 * 86_400 && $0.name != "console session" }
                .map { View.Row(id: "expiring-\($0.id)", cells: [.code($0.name), .code($0.accountId), .init(text: $0.role.rawValue), .init(text: View.time($0.expiresAt))]) },
            empty: w(.noneWord))
        view.sections.append(tokens)
        return view
    }

    func keyAges(now: Int64) async throws -> Section {
        var keys = Section("key-ages", heading: w(.keysAndTheirAges))
        keys.table = View.Table(
            id: "key-ages-table", columns: [w(.key), w(.kind), w(.age)],
            rows: try await admin.signingKeys().filter { $0.retiredAt == nil }.map {
                View.Row(id: "key-\($0.keyID)", cells: [.code($0.keyID), .init(text: w(.tokenSigning, $0.algorithm)), .init(text: View.age(now - $0.createdAt))])
            } + (try await admin.testKeys().testKeys.map {
                View.Row(id: "test-key-\($0.keyId)", cells: [.code($0.keyId), .init(text: w(.testRegistrationKey)), .init(text: View.age(now - $0.createdAt))])
            }),
            empty: w(.noKeys))
        return keys
    }
}
