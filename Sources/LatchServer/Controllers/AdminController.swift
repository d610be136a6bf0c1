import Hummingbird
import LatchCore
import LatchModel

/// The admin API (`Authorization: Bearer <admin token>`).
struct AdminController {
    let admin: AdminService
    let issuer: String

    func add(to group: RouterGroup<AdminContext>) {
        // Issuers.
        group.post("issuers") { request, _ -> Response in
            try JSONResponse.make(try await admin.addIssuer(try await request.decodeJSON(AdminSignOnIssuerRequest.self)), status: .created)
        }
        group.get("issuers") { _, _ -> Response in try JSONResponse.make(try await admin.issuers()) }
        group.delete("issuers/:name") { request, context -> Response in
            let name = try context.parameters.require("name")
            try await admin.deleteIssuer(name, keyID: request.uri.queryParameters.get("keyId"))
            return Self.noContent
        }
        // Test registration keys.
        group.post("test-keys") { request, context -> Response in
            // An empty body asks for the defaults.
            let body = try await request.decodeJSON(AdminTestKeyRequest.self, whenEmpty: AdminTestKeyRequest())
            return try JSONResponse.make(try await admin.createTestKey(body, owner: context.accountID), status: .created)
        }
        group.get("test-keys") { _, _ -> Response in try JSONResponse.make(try await admin.testKeys()) }
        group.delete("test-keys/:keyId") { _, context -> Response in
            try await admin.deleteTestKey(id: try context.parameters.require("keyId"))
            return Self.noContent
        }
        // Users.
        group.get("users") { request, _ -> Response in
            let limitText = request.uri.queryParameters.get("limit") ?? "50"
            guard let limit = Int(limitText) else { throw LatchError.invalidInput("limit must be a number") }
            return try JSONResponse.make(try await admin.users(after: request.uri.queryParameters.get("after"), limit: limit))
        }
        group.get("users/:id") { _, context -> Response in
            try JSONResponse.make(try await admin.user(id: try context.parameters.require("id")))
        }
        group.delete("users/:id") { _, context -> Response in
            try await admin.deleteUser(id: try context.parameters.require("id"))
            return Self.noContent
        }
        group.post("users/:id/sign-out") { _, context -> Response in
            try JSONResponse.make(try await admin.revokeSessions(userID: try context.parameters.require("id")))
        }
        group.get("users/:id/sessions") { _, context -> Response in
            try JSONResponse.make(try await admin.sessions(userID: try context.parameters.require("id")))
        }
        group.delete("users/:id/sessions/:sessionId") { _, context -> Response in
            try await admin.revokeSession(userID: try context.parameters.require("id"), sessionID: try context.parameters.require("sessionId"))
            return Self.noContent
        }
        group.get("users/:id/devices") { _, context -> Response in
            try JSONResponse.make(try await admin.devices(userID: try context.parameters.require("id")))
        }
        // Clients.
        group.post("clients") { request, _ -> Response in
            try JSONResponse.make(try await admin.addClient(try await request.decodeJSON(AdminClientRequest.self)), status: .created)
        }
        group.get("clients") { _, _ -> Response in try JSONResponse.make(try await admin.clientList()) }
        group.delete("clients/:id") { _, context -> Response in
            try await admin.deleteClient(id: try context.parameters.require("id"))
            return Self.noContent
        }
        group.patch("clients/:id") { request, context -> Response in
            try JSONResponse.make(try await admin.patchClient(id: try context.parameters.require("id"), try await request.decodeJSON(AdminClientPatch.self)))
        }
        // Android signing certificates, owned by the admin account that adds them.
        group.post("clients/:id/signing-certificates") { request, context -> Response in
            let body = try await request.decodeJSON(AdminSigningCertificateRequest.self)
            return try JSONResponse.make(
                try await admin.addSigningCertificate(clientID: try context.parameters.require("id"), body, owner: context.accountID), status: .created)
        }
        group.get("clients/:id/signing-certificates") { _, context -> Response in
            try JSONResponse.make(try await admin.signingCertificates(clientID: try context.parameters.require("id")))
        }
        group.delete("clients/:id/signing-certificates/:sha256") { _, context -> Response in
            try await admin.deleteSigningCertificate(clientID: try context.parameters.require("id"), sha256: try context.parameters.require("sha256"))
            return Self.noContent
        }
        group.get("client-config") { request, _ -> Response in
            let clientID = request.uri.queryParameters.get("clientId") ?? "default"
            return try JSONResponse.make(try await admin.clientConfig(clientID: clientID, issuer: issuer))
        }
        // Admin accounts (owners only, by the policy).
        group.post("admins") { request, context -> Response in
            try JSONResponse.make(
                try await admin.createAdminAccount(try await request.decodeJSON(AdminAccountRequest.self), caller: context.caller), status: .created)
        }
        group.get("admins") { _, _ -> Response in try JSONResponse.make(try await admin.adminAccounts()) }
        group.delete("admins/:id") { request, context -> Response in
            try await admin.deleteAdminAccount(
                id: try context.parameters.require("id"), caller: context.caller, force: try Self.flag("force", request),
                deleteOwned: try Self.flag("deleteOwned", request))
            return Self.noContent
        }
        // Admin tokens.
        group.post("tokens") { request, context -> Response in
            let body = try await request.decodeJSON(AdminTokenRequest.self, whenEmpty: AdminTokenRequest())
            return try JSONResponse.make(
                try await admin.createAdminToken(body, caller: context.caller), status: .created)
        }
        group.get("tokens") { _, context -> Response in try JSONResponse.make(try await admin.adminTokens(caller: context.caller)) }
        group.delete("tokens/:id") { request, context -> Response in
            try await admin.revokeAdminToken(id: try context.parameters.require("id"), caller: context.caller, force: try Self.flag("force", request))
            return Self.noContent
        }
        // Signing keys.
        group.post("keys/rotate") { _, _ -> Response in try JSONResponse.make(try await admin.rotateSigningKey(), status: .created) }
    }

    /// Upstream identity providers (browser sign-in); answers carry the URLs to register at the upstream.
    func addUpstreamIdPs(to group: RouterGroup<AdminContext>) {
        group.post("upstream-idps") { request, _ -> Response in
            try JSONResponse.make(
                try await admin.addUpstreamIdP(try await request.decodeJSON(AdminUpstreamIdPRequest.self), issuer: issuer), status: .created)
        }
        group.get("upstream-idps") { _, _ -> Response in try JSONResponse.make(try await admin.upstreamIdPList(issuer: issuer)) }
        group.get("upstream-idps/:id") { _, context -> Response in
            try JSONResponse.make(try await admin.upstreamIdP(id: try context.parameters.require("id"), issuer: issuer))
        }
        group.delete("upstream-idps/:id") { _, context -> Response in
            try await admin.deleteUpstreamIdP(id: try context.parameters.require("id"))
            return Self.noContent
        }
    }

    static let noContent = Response(status: .noContent, headers: [.cacheControl: "no-store"])

    /// A `true`/`false` query flag (absent: false); anything else is `invalid_input`.
    static func flag(_ name: String, _ request: Request) throws -> Bool {
        switch request.uri.queryParameters.get(name) {
        case nil, "false": return false
        case "true": return true
        default: throw LatchError.invalidInput("\(name) must be true or false")
        }
    }
}
