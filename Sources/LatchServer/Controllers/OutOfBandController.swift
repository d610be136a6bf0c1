import Hummingbird
import LatchCore
import LatchModel

/// Out-of-band enrollment and approval: the redeeming device's endpoints (unauthenticated, rate-limited; the token or
/// the ceremony id is the capability), status polling, device linking (signed in) and the backend's request (admin).
struct OutOfBandController {
    let oob: OutOfBandService
    let sessions: SessionService

    /// `POST /v1/oob/redeem/{operation}`, `POST /v1/oob/status`, `POST /v1/oob/{registration|authentication|deny|deregistration}`.
    var publicEndpoints: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.post("redeem/:operation") { request, context -> Response in
            let body = try await request.decodeJSON(OutOfBandRedeemRequest.self)
            return JSONResponse.make(bytes: try await oob.redeem(try context.parameters.require("operation"), token: body.token).serialized())
        }
        routes.post("status") { request, _ -> Response in
            let body = try await request.decodeJSON(OutOfBandStatusRequest.self)
            return try JSONResponse.make(try await oob.status(statusToken: body.statusToken))
        }
        routes.post("registration") { request, _ -> Response in
            let (ceremonyID, credential, body) = try await Self.ceremony(request, credential: true)
            var name: String?
            if let given = body["name"] {
                guard case .string(let text) = given else { throw LatchError(.invalidJSON, "name must be a string") }
                name = text
            }
            return try JSONResponse.make(try await oob.completeRegistration(ceremonyID: ceremonyID, credential: credential, name: name), status: .created)
        }
        routes.post("authentication") { request, _ -> Response in
            let (ceremonyID, credential, _) = try await Self.ceremony(request, credential: true)
            return try JSONResponse.make(try await oob.approve(ceremonyID: ceremonyID, credential: credential))
        }
        routes.post("deny") { request, _ -> Response in
            let (ceremonyID, _, _) = try await Self.ceremony(request, credential: false)
            return try JSONResponse.make(try await oob.deny(ceremonyID: ceremonyID))
        }
        routes.post("deregistration") { request, _ -> Response in
            let (ceremonyID, credential, _) = try await Self.ceremony(request, credential: true)
            return try JSONResponse.make(try await oob.completeDeregistration(ceremonyID: ceremonyID, credential: credential))
        }
        return routes
    }

    /// `ceremonyId` and, when asked, `credential` (a WebAuthn response object) of a completion body.
    static func ceremony(_ request: Request, credential required: Bool) async throws -> (String, JSONValue, [String: JSONValue]) {
        let body = try await request.jsonObject()
        guard case .string(let ceremonyID)? = body["ceremonyId"] else { throw LatchError(.invalidJSON, "ceremonyId (a string) is required") }
        let credential = body["credential"] ?? .null
        if required, credential.objectValue == nil { throw LatchError(.invalidJSON, "credential (a WebAuthn response object) is required") }
        return (ceremonyID, credential, body)
    }

    /// `POST /v1/me/enrollments`: device linking — an enrollment for the signed-in user (a recent sign-in).
    func addDeviceLinking(to group: RouterGroup<SignedInContext>) {
        group.post("enrollments") { request, context -> Response in
            try sessions.requireRecentAuthentication(context.caller)
            let body = try await request.decodeJSON(OutOfBandEnrollmentRequest.self, whenEmpty: OutOfBandEnrollmentRequest())
            guard body.createUser == nil, body.username == nil else {
                throw LatchError.invalidInput("createUser and username are for the admin API")
            }
            return try JSONResponse.make(try await oob.enroll(userID: context.caller.user.id, body, requestedBy: "user"), status: .created)
        }
    }

    /// `POST /admin/v1/users/{id}/enrollments`.
    func addAdmin(to group: RouterGroup<AdminContext>) {
        group.post("users/:id/enrollments") { request, context -> Response in
            let body = try await request.decodeJSON(OutOfBandEnrollmentRequest.self, whenEmpty: OutOfBandEnrollmentRequest())
            return try JSONResponse.make(try await oob.enroll(userID: try context.parameters.require("id"), body, requestedBy: "admin"), status: .created)
        }
    }

    /// `GET /open`: where an app link lands when no app claims it — a page saying to open it with the app.
    var openPage: RouteCollection<LatchRequestContext> {
        let routes = RouteCollection(context: LatchRequestContext.self)
        routes.get("open") { _, _ -> Response in
            let page = """
                <!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
                <title>Open in the app</title></head><body><main><h1>Open this link in the app</h1>
                <p>This link enrols or approves on your phone. Scan the QR code with the app, or open the link on the phone where the app is installed.</p>
                </main></body></html>
                """
            return Response(
                status: .ok,
                headers: [
                    .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                    .contentSecurityPolicy: "default-src 'none'; frame-ancestors 'none'", .xContentTypeOptions: "nosniff",
                ],
                body: .init(byteBuffer: .init(string: page)))
        }
        return routes
    }
}
