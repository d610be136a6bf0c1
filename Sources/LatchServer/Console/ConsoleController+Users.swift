import Foundation
import Hummingbird
import LatchCore
import LatchModel
import LatchWeb

/// The console's routes, one area each: the overview, users, out-of-band enrollment and the audit log here. Each
/// names the admin API route whose roles it takes; LatchWeb's ``ConsolePages`` builds its page.
extension ConsoleController {
    func addPages(to console: RouterGroup<LatchRequestContext>) {
        console.get { request, context in
            await handle(request, context, route: "GET /admin/v1/users") { session, _ in .view(try await pages(request).overview(session)) }
        }
        addUsers(to: console)
        addConfiguration(to: console)
        addSetup(to: console)
        addIssuerLogin(to: console)
        addAdmins(to: console)
        console.get("audit") { request, context in
            await handle(request, context, route: "GET /admin/v1/audit") { _, _ in
                var query: [String: String] = [:]
                for name in ["type", "actor", "subject", "since", "until", "cursor"] { query[name] = request.uri.queryParameters.get(name).map { String($0) } }
                return .view(try await pages(request).audit(query))
            }
        }
    }

    /// The page at `path` (a GET) for the session's admin, made by `build`, with the flash its redirect's `done` key
    /// names; `route`: the admin API route whose roles it takes.
    func addPage(
        _ console: RouterGroup<LatchRequestContext>, _ path: String, route: String,
        _ build: @escaping @Sendable (ConsolePages) -> (ConsoleSession) async throws -> ConsoleView
    ) {
        console.get(RouterPath(path)) { request, context in
            await handle(request, context, route: route) { session, _ in flashed(request, try await build(pages(request))(session)) }
        }
    }

    /// A page with the flash message its redirect's `done` key names.
    func flashed(_ request: Request, _ view: ConsoleView) -> Outcome {
        .view(pages(request).flashed(view, request.uri.queryParameters.get("done").map { String($0) }))
    }

    /// `text` percent-encoded for a path segment or query value.
    static func encoded(_ text: String) -> String { ConsolePages.encoded(text) }

    // MARK: Users

    func addUsers(to console: RouterGroup<LatchRequestContext>) {
        console.get("users") { request, context in
            await handle(request, context, route: "GET /admin/v1/users") { _, _ in
                let parameters = request.uri.queryParameters
                if let query = parameters.get("q").map({ String($0) }), !query.isEmpty {
                    if let user = try await admin.findUser(query) { return .redirect("/console/users/" + Self.encoded(user.id)) }
                    return .view(try await pages(request).usersNotFound(query))
                }
                return flashed(request, try await pages(request).users(after: parameters.get("after").map { String($0) }))
            }
        }
        console.get("users/:id") { request, context in
            await handle(request, context, route: "GET /admin/v1/users/{id}") { session, _ in
                flashed(request, try await pages(request).user(try context.parameters.require("id"), session: session))
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
        addAuthenticators(to: console)
        addOutOfBand(to: console)
    }

    func addAuthenticators(to console: RouterGroup<LatchRequestContext>) {
        console.post("users/:id/authenticators/:authenticator/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/users/{id}/authenticators/{authenticator}") { _, _ in
                let fido = services.fido
                let id = try context.parameters.require("id")
                try await fido.adminDelete(userID: id, authenticatorID: try context.parameters.require("authenticator"))
                return .redirect("/console/users/\(Self.encoded(id))?done=deleted-authenticator")
            }
        }
        console.post("users/:id/authenticators/:authenticator/unlock") { request, context in
            await handle(request, context, route: "POST /admin/v1/users/{id}/authenticators/{authenticator}/unlock") { _, _ in
                let fido = services.fido
                let id = try context.parameters.require("id")
                _ = try await fido.unlock(userID: id, authenticatorID: try context.parameters.require("authenticator"))
                return .redirect("/console/users/\(Self.encoded(id))?done=unlocked")
            }
        }
    }

    func addOutOfBand(to console: RouterGroup<LatchRequestContext>) {
        console.get("oob") { request, context in
            await handle(request, context, route: "POST /admin/v1/users/{id}/enrollments") { _, _ in
                .view(pages(request).oob(userID: request.uri.queryParameters.get("user").map { String($0) }))
            }
        }
        console.post("oob") { request, context in
            await handle(request, context, route: "POST /admin/v1/users/{id}/enrollments") { _, form in
                let oob = services.oob
                guard let userID = form["user"]?.trimmingCharacters(in: .whitespaces), !userID.isEmpty else {
                    throw LatchError.invalidInput(pages(request).w(.userIdRequired))
                }
                let created = try await oob.enroll(
                    userID: userID,
                    OutOfBandEnrollmentRequest(createUser: form["createUser"] == "true", username: form["username"].flatMap { $0.isEmpty ? nil : $0 }),
                    requestedBy: "admin")
                return .view(pages(request).oobCreated(created, userID: userID))
            }
        }
    }
}
