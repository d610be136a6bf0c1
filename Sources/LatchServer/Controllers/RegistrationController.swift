import Hummingbird
import LatchCore
import LatchModel

/// Registration and the sign-in challenge (REFERENCE §2, §4).
struct RegistrationController {
    let registration: RegistrationService
    let challenges: ChallengeService

    var endpoints: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.post("registrations") { request, _ -> Response in
            let body = try await request.decodeJSON(RegistrationRequest.self)
            return try JSONResponse.make(try await registration.register(body), status: .created)
        }
        // Half of every key sign-in: parsed and written without Codable.
        routes.post("sign-in/challenge") { request, _ -> Response in
            let body = try await request.jsonObject()
            guard case .string(let username)? = body["username"] else {
                throw LatchError(.invalidJSON, "the field username is required and must be a string")
            }
            let challenge = try await challenges.challenge(SignInChallengeRequest(username: username))
            var writer = JSONWriter(reservingCapacity: 128)
            writer.beginObject()
            writer.member("nonce", challenge.nonce)
            writer.member("audience", challenge.audience)
            writer.member("expiresIn", Int64(challenge.expiresIn))
            writer.endObject()
            return JSONResponse.make(bytes: writer.bytes)
        }
        return routes
    }
}

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

/// Liveness and readiness probes.
struct HealthController {
    let store: any ClientStore

    var endpoints: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.get("live") { _, _ in JSONResponse.make(bytes: Array(#"{"status":"ok"}"#.utf8)) }
        routes.get("ready") { _, _ -> Response in
            // A read through the store proves the database answers.
            _ = try await store.clients()
            return JSONResponse.make(bytes: Array(#"{"status":"ok"}"#.utf8))
        }
        return routes
    }
}
