import Hummingbird
import LatchCore
import LatchModel

/// Registration (`POST /v1/registrations`, `POST /v1/registrations/challenge`) and the device sign-in challenge (`POST /v1/sign-in/challenge`).
struct RegistrationController {
    let registration: RegistrationService
    let nonces: SignInNonces
    /// Counts registrations by proof type and outcome, when metrics are on.
    var metrics: LatchMetrics?

    var endpoints: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.post("registrations") { request, _ -> Response in
            let body = try await request.decodeJSON(RegistrationRequest.self)
            // A proof type this server serves, else `other` (`challengeType` is any string on the wire).
            let proofType = registration.proofTypes.contains(body.challengeType.rawValue) ? body.challengeType.rawValue : "other"
            do {
                let answer = try JSONResponse.make(try await registration.register(body), status: .created)
                metrics?.registration(proofType: proofType, outcome: "ok")
                return answer
            } catch {
                metrics?.registration(proofType: proofType, outcome: (error as? LatchError)?.code.rawValue ?? "unavailable")
                throw error
            }
        }
        routes.post("registrations/challenge") { request, _ -> Response in
            let body = try await request.decodeJSON(RegistrationChallengeRequest.self)
            return try JSONResponse.make(try registration.challenge(body))
        }
        // Half of every key sign-in: parsed and written without Codable.
        routes.post("sign-in/challenge") { request, _ -> Response in
            let body = try await request.jsonObject()
            guard case .string(let username)? = body["username"] else {
                throw LatchError(.invalidJSON, "the field username is required and must be a string")
            }
            let challenge = try await nonces.issue(SignInChallengeRequest(username: username))
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
