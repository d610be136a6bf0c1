import Hummingbird
import LatchCore
import LatchModel

/// The signed-in user's own endpoints.
struct MeController {
    let sessions: SessionService

    func add(to group: RouterGroup<SignedInContext>) {
        group.get("") { _, context -> Response in
            try JSONResponse.make(
                MeResponse(
                    userId: context.caller.user.id, username: context.caller.user.username,
                    authTime: context.caller.session.authTime, sessionId: context.caller.session.id,
                    clientId: context.caller.session.clientID))
        }
        group.post("global-sign-out") { _, context -> Response in
            try JSONResponse.make(SessionsRevoked(revoked: try await sessions.globalSignOut(context.caller)))
        }
        group.delete("") { _, context -> Response in
            try await sessions.deregister(context.caller)
            return Response(status: .noContent, headers: [.cacheControl: "no-store"])
        }
    }

    /// `GET /v1/me`.
    struct MeResponse: Encodable {
        let userId: String
        let username: String
        let authTime: Int64
        let sessionId: String
        let clientId: String
    }
}
