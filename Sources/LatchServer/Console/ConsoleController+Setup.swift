import Foundation
import Hummingbird
import LatchCore
import LatchModel
import LatchWeb

/// The posts of the forms that add what the console's configuration pages list — issuers, upstream identity
/// providers, custom registration providers — and edit an app's device-evidence settings and Android signing
/// certificates, and how forms are read. Each posts to the engine the admin API route it names calls, with that
/// route's roles; the engine validates as for the API.
extension ConsoleController {
    func addSetup(to console: RouterGroup<LatchRequestContext>) {
        console.post("issuers") { request, context in
            await handle(request, context, route: "POST /admin/v1/issuers", page: pages(request).issuers) { _, form in
                _ = try await admin.addIssuer(
                    AdminSignOnIssuerRequest(
                        name: form["name"] ?? "", keyId: form["keyId"] ?? "", publicKey: form["publicKey"] ?? "",
                        algorithm: Self.optional(form["algorithm"]), audience: Self.optional(form["audience"]),
                        allowedClaims: Self.list(form["allowedClaims"]), maxLifetime: try number(form, "maxLifetime", request)))
                return .redirect("/console/issuers?done=added-issuer")
            }
        }
        console.post("upstream-idps") { request, context in
            await handle(request, context, route: "POST /admin/v1/upstream-idps", page: pages(request).upstreamIdPs) { _, form in
                _ = try await admin.addUpstreamIdP(
                    AdminUpstreamIdPRequest(
                        id: form["id"] ?? "", displayName: form["displayName"] ?? "", issuer: form["issuer"] ?? "", clientId: form["clientId"] ?? "",
                        clientSecret: Self.optional(form["clientSecret"]), clientAuthentication: Self.optional(form["clientAuthentication"]),
                        scopes: Self.list(form["scopes"]), usernameClaim: Self.optional(form["usernameClaim"]), keptClaims: Self.list(form["keptClaims"]),
                        allowedEmailDomains: Self.list(form["allowedEmailDomains"]), useUserinfo: form["useUserinfo"] == "true"),
                    issuer: issuer)
                return .redirect("/console/upstream-idps?done=added-idp")
            }
        }
        console.post("custom-providers") { request, context in
            await handle(request, context, route: "POST /admin/v1/custom-providers", page: pages(request).customProviders) { _, form in
                let custom = services.customRegistration
                _ = try await custom.createProvider(
                    AdminCustomProviderRequest(
                        id: form["id"] ?? "", name: form["name"] ?? "", flow: form["flow"] ?? "", hookURL: form["hookURL"] ?? "",
                        hookSecret: form["hookSecret"] ?? "", timeout: try number(form, "timeout", request),
                        retries: try number(form, "retries", request),
                        transactionLifetime: try number(form, "transactionLifetime", request),
                        allowedClaims: Self.list(form["allowedClaims"]), enabled: form["enabled"] == "true"))
                return .redirect("/console/custom-providers?done=added-provider")
            }
        }
        console.post("apps/:id/evidence") { request, context in
            await handle(request, context, route: "PATCH /admin/v1/clients/{id}", page: pages(request).apps) { _, form in
                _ = try await admin.patchClient(id: try context.parameters.require("id"), try Self.evidencePatch(form))
                return .redirect("/console/apps?done=saved-evidence")
            }
        }
        console.post("apps/:id/signing-certificates") { request, context in
            await handle(request, context, route: "POST /admin/v1/clients/{id}/signing-certificates", page: pages(request).apps) { session, form in
                _ = try await admin.addSigningCertificate(
                    clientID: try context.parameters.require("id"), AdminSigningCertificateRequest(sha256: form["sha256"] ?? ""),
                    owner: session.caller.accountID)
                return .redirect("/console/apps?done=added-certificate")
            }
        }
        console.post("apps/:id/signing-certificates/:sha256/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/clients/{id}/signing-certificates/{sha256}", page: pages(request).apps) { _, _ in
                try await admin.deleteSigningCertificate(clientID: try context.parameters.require("id"), sha256: try context.parameters.require("sha256"))
                return .redirect("/console/apps?done=deleted-certificate")
            }
        }
    }

    // MARK: Reading forms

    /// The evidence form as a client patch: both platforms replaced; a secret given only when its fields are.
    static func evidencePatch(_ form: [String: String]) throws -> AdminClientPatch {
        let appIDs = lines(form["appIds"])
        var deviceCheck: AdminDeviceCheck?
        if let key = optional(form["deviceCheckPrivateKey"]) {
            deviceCheck = AdminDeviceCheck(teamId: form["deviceCheckTeamId"] ?? "", keyId: form["deviceCheckKeyId"] ?? "", privateKey: key)
        }
        let packages = lines(form["packageNames"])
        var playIntegrity: AdminPlayIntegrity?
        if let decryption = optional(form["playIntegrityDecryptionKey"]) {
            playIntegrity = AdminPlayIntegrity(decryptionKey: decryption, verificationKey: form["playIntegrityVerificationKey"] ?? "")
        }
        return AdminClientPatch(
            ios: AdminIOSEvidence(appIds: appIDs, appAttestEnvironment: optional(form["appAttestEnvironment"]), deviceCheck: deviceCheck),
            android: AdminAndroidEvidence(packageNames: packages, playIntegrity: playIntegrity, requestHashMode: optional(form["requestHashMode"])))
    }

    /// A form value, nil when empty or blank.
    static func optional(_ value: String?) -> String? {
        guard let trimmed = value?.trimmingCharacters(in: .whitespacesAndNewlines), !trimmed.isEmpty else { return nil }
        return trimmed
    }

    /// Names separated by spaces, commas or new lines; nil when there are none.
    static func list(_ value: String?) -> [String]? {
        let items = (value ?? "").split { $0 == "," || $0.isWhitespace }.map { String($0) }
        return items.isEmpty ? nil : items
    }

    /// One item a line, blank lines left out.
    static func lines(_ value: String?) -> [String] {
        (value ?? "").split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The form's field `name` as a whole number, nil when empty; refused in the request's language otherwise.
    func number(_ form: [String: String], _ name: String, _ request: Request) throws(LatchError) -> Int? {
        guard let text = Self.optional(form[name]) else { return nil }
        guard text.count <= 9, let number = Int(text) else { throw LatchError.invalidInput(pages(request).w(.wholeNumber, name)) }
        return number
    }
}
