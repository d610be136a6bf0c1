import Foundation
import Hummingbird
import LatchCore
import LatchModel
import LatchWeb

/// Forms that add what the console's configuration pages list — issuers, upstream identity providers, custom
/// registration providers — and edit an app's device-evidence settings and Android signing certificates. Each posts
/// to the engine the admin API route it names calls, with that route's roles; the engine validates as for the API.
extension ConsoleController {
    func addSetup(to console: RouterGroup<LatchRequestContext>) {
        console.post("issuers") { request, context in
            await handle(request, context, route: "POST /admin/v1/issuers", page: issuersPage) { _, form in
                _ = try await admin.addIssuer(
                    AdminSignOnIssuerRequest(
                        name: form["name"] ?? "", keyId: form["keyId"] ?? "", publicKey: form["publicKey"] ?? "",
                        algorithm: Self.optional(form["algorithm"]), audience: Self.optional(form["audience"]),
                        allowedClaims: Self.list(form["allowedClaims"]), maxLifetime: try Self.number(form["maxLifetime"], "maxLifetime")))
                return .redirect("/console/issuers?done=added-issuer")
            }
        }
        console.post("upstream-idps") { request, context in
            await handle(request, context, route: "POST /admin/v1/upstream-idps", page: upstreamIdPsPage) { _, form in
                guard services.authorization != nil else { throw LatchError.notFound("browser sign-in is not served here") }
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
            await handle(request, context, route: "POST /admin/v1/custom-providers", page: customProvidersPage) { _, form in
                guard let custom = services.customRegistration else { throw LatchError.notFound("custom registration is not served here") }
                _ = try await custom.createProvider(
                    AdminCustomProviderRequest(
                        id: form["id"] ?? "", name: form["name"] ?? "", flow: form["flow"] ?? "", hookURL: form["hookURL"] ?? "",
                        hookSecret: form["hookSecret"] ?? "", timeout: try Self.number(form["timeout"], "timeout"),
                        retries: try Self.number(form["retries"], "retries"),
                        transactionLifetime: try Self.number(form["transactionLifetime"], "transactionLifetime"),
                        allowedClaims: Self.list(form["allowedClaims"]), enabled: form["enabled"] == "true"))
                return .redirect("/console/custom-providers?done=added-provider")
            }
        }
        console.post("apps/:id/evidence") { request, context in
            await handle(request, context, route: "PATCH /admin/v1/clients/{id}", page: appsPage) { _, form in
                _ = try await admin.patchClient(id: try context.parameters.require("id"), try Self.evidencePatch(form))
                return .redirect("/console/apps?done=saved-evidence")
            }
        }
        console.post("apps/:id/signing-certificates") { request, context in
            await handle(request, context, route: "POST /admin/v1/clients/{id}/signing-certificates", page: appsPage) { session, form in
                _ = try await admin.addSigningCertificate(
                    clientID: try context.parameters.require("id"), AdminSigningCertificateRequest(sha256: form["sha256"] ?? ""),
                    owner: session.caller.accountID)
                return .redirect("/console/apps?done=added-certificate")
            }
        }
        console.post("apps/:id/signing-certificates/:sha256/delete") { request, context in
            await handle(request, context, route: "DELETE /admin/v1/clients/{id}/signing-certificates/{sha256}", page: appsPage) { _, _ in
                try await admin.deleteSigningCertificate(clientID: try context.parameters.require("id"), sha256: try context.parameters.require("sha256"))
                return .redirect("/console/apps?done=deleted-certificate")
            }
        }
    }

    // MARK: Forms

    func addIssuerSection(_ session: ConsoleSession) -> Section? {
        guard may(session, "POST /admin/v1/issuers") else { return nil }
        var section = Section("new-issuer", heading: "Add an issuer key", intro: "A customer backend's public key: JWTs it signs with this kid register and sign in users.")
        section.forms = [
            View.Form(
                id: "add-issuer", action: "/console/issuers", submit: "Add",
                fields: [
                    View.Field(name: "name", label: "Issuer (the iss its tokens carry)", required: true, maxLength: 256),
                    View.Field(name: "keyId", label: "Key id (kid)", required: true, maxLength: 128),
                    View.Field(name: "publicKey", label: "Public key (PEM)", kind: .textarea, required: true, maxLength: 8_192),
                    View.Field(
                        name: "algorithm", label: "Algorithm", kind: .select([("", "from the key"), ("RS256", "RS256"), ("ES256", "ES256")])),
                    View.Field(name: "audience", label: "Audience (aud)", hint: "Default: this deployment's audience.", maxLength: 512),
                    View.Field(name: "allowedClaims", label: "Claims kept on the user", hint: "Names, separated by spaces or commas.", maxLength: 2_048),
                    View.Field(name: "maxLifetime", label: "Longest token lifetime (s)", kind: .text(type: "number"), placeholder: "3600", maxLength: 8),
                ])
        ]
        return section
    }

    func addUpstreamIdPSection(_ session: ConsoleSession) -> Section? {
        guard services.authorization != nil, may(session, "POST /admin/v1/upstream-idps") else { return nil }
        var section = Section(
            "new-idp", heading: "Add an upstream identity provider",
            intro: "Latch reads the provider's discovery document at the first sign-in. Register the callback URL shown in the table at the provider.")
        section.forms = [
            View.Form(
                id: "add-idp", action: "/console/upstream-idps", submit: "Add",
                fields: [
                    View.Field(name: "id", label: "Id (a–z, 0–9, _ and -; part of the callback URL)", required: true, maxLength: 64),
                    View.Field(name: "displayName", label: "Name shown to users", required: true, maxLength: 128),
                    View.Field(name: "issuer", label: "Issuer URL", kind: .text(type: "url"), required: true, maxLength: 512),
                    View.Field(name: "clientId", label: "Client id at the provider", required: true, maxLength: 512),
                    View.Field(
                        name: "clientSecret", label: "Client secret", kind: .text(type: "password"),
                        hint: "Sealed at rest, never shown again. Leave empty for private_key_jwt.", maxLength: 1_024, secret: true),
                    View.Field(
                        name: "clientAuthentication", label: "Client authentication",
                        kind: .select([
                            ("", "default"), ("client_secret_basic", "client_secret_basic"), ("client_secret_post", "client_secret_post"),
                            ("private_key_jwt", "private_key_jwt"),
                        ])),
                    View.Field(name: "scopes", label: "Scopes", placeholder: "openid profile email", maxLength: 1_024),
                    View.Field(name: "usernameClaim", label: "Username claim", placeholder: "sub", maxLength: 128),
                    View.Field(name: "keptClaims", label: "Claims kept on the user", hint: "Names, separated by spaces or commas.", maxLength: 2_048),
                    View.Field(name: "allowedEmailDomains", label: "Allowed email domains", hint: "Only verified emails in these domains sign in.", maxLength: 2_048),
                    View.Field(name: "useUserinfo", label: "Also read UserInfo", kind: .checkbox),
                ])
        ]
        return section
    }

    func addCustomProviderSection(_ session: ConsoleSession) -> Section? {
        guard services.customRegistration != nil, may(session, "POST /admin/v1/custom-providers") else { return nil }
        var section = Section(
            "new-provider", heading: "Add a custom registration provider",
            intro: "Your service decides each registration step; Latch signs its calls with the hook secret (HMAC-SHA256).")
        section.forms = [
            View.Form(
                id: "add-provider", action: "/console/custom-providers", submit: "Add",
                fields: [
                    View.Field(name: "id", label: "Id (what apps name as identityProvider)", required: true, maxLength: 64),
                    View.Field(name: "name", label: "Name", required: true, maxLength: 200),
                    View.Field(name: "flow", label: "Flow", kind: .select([("one_step", "one step"), ("two_step", "two steps")]), value: "one_step"),
                    View.Field(name: "hookURL", label: "Hook URL", kind: .text(type: "url"), required: true, maxLength: 2_048),
                    View.Field(
                        name: "hookSecret", label: "Hook secret", kind: .text(type: "password"), hint: "16–512 bytes; never shown again.", required: true,
                        maxLength: 512, secret: true),
                    View.Field(name: "timeout", label: "Timeout (s)", kind: .text(type: "number"), placeholder: "5", maxLength: 2),
                    View.Field(name: "retries", label: "Retries", kind: .text(type: "number"), placeholder: "2", maxLength: 1),
                    View.Field(name: "transactionLifetime", label: "Transaction lifetime (s)", kind: .text(type: "number"), placeholder: "600", maxLength: 5),
                    View.Field(name: "allowedClaims", label: "Claims kept on the user", hint: "Names, separated by spaces or commas.", maxLength: 2_048),
                    View.Field(name: "enabled", label: "Enabled", kind: .checkbox, value: "true"),
                ])
        ]
        return section
    }

    /// The device-evidence form of one app: Apple (App Attest, DeviceCheck) and Android (key attestation, Play
    /// Integrity). Secrets are write-only: the form shows whether one is stored, and leaving its fields empty keeps it.
    func evidenceForm(_ client: AdminClient) -> View.Form {
        let ios = client.ios
        let android = client.android
        return View.Form(
            id: "evidence-\(client.clientId)", action: "/console/apps/\(Self.encoded(client.clientId))/evidence", submit: "Save device evidence",
            fields: [
                View.Field(
                    name: "appIds", label: "iOS App IDs (TEAMID.bundleId, one a line; empty removes iOS)", kind: .textarea,
                    value: (ios?.appIds ?? []).joined(separator: "\n"), maxLength: 4_096),
                View.Field(
                    name: "appAttestEnvironment", label: "App Attest environment", kind: .select([("production", "production"), ("development", "development")]),
                    value: ios?.appAttestEnvironment ?? "production"),
                View.Field(name: "deviceCheckTeamId", label: "DeviceCheck team id", value: ios?.deviceCheck?.teamId ?? "", maxLength: 10),
                View.Field(name: "deviceCheckKeyId", label: "DeviceCheck key id", value: ios?.deviceCheck?.keyId ?? "", maxLength: 10),
                View.Field(
                    name: "deviceCheckPrivateKey", label: "DeviceCheck private key (.p8 PEM)", kind: .textarea,
                    hint: ios?.deviceCheck?.hasPrivateKey == true
                        ? "A key is stored. To replace it give team id, key id and the new key; otherwise leave this empty."
                        : "Give team id, key id and the key together.",
                    maxLength: 4_096, secret: true),
                View.Field(
                    name: "packageNames", label: "Android package names (one a line; empty removes Android)", kind: .textarea,
                    value: (android?.packageNames ?? []).joined(separator: "\n"), maxLength: 4_096),
                View.Field(
                    name: "requestHashMode", label: "Play Integrity request hash", kind: .select([("binding", "binding (challenge + key)"), ("deviceId", "deviceId")]),
                    value: android?.requestHashMode ?? "binding"),
                View.Field(
                    name: "playIntegrityVerificationKey", label: "Play Integrity verification key (base64 SPKI)", value: android?.playIntegrity?.verificationKey ?? "",
                    maxLength: 1_024),
                View.Field(
                    name: "playIntegrityDecryptionKey", label: "Play Integrity decryption key (base64)", kind: .text(type: "password"),
                    hint: android?.playIntegrity?.hasDecryptionKey == true
                        ? "A key is stored. To replace it give both keys; otherwise leave this empty."
                        : "Give both keys together.",
                    maxLength: 256, secret: true),
            ])
    }

    /// The signing-certificate table and form of one app (Android key attestation checks the app's signer).
    func signingCertificateSection(_ session: ConsoleSession, _ client: AdminClient) async throws -> Section? {
        guard may(session, "GET /admin/v1/clients/{id}/signing-certificates") else { return nil }
        var section = Section("certificates-\(client.clientId)", heading: "\(client.name): Android signing certificates")
        let mayDelete = may(session, "DELETE /admin/v1/clients/{id}/signing-certificates/{sha256}")
        section.table = View.Table(
            id: "certificates-\(client.clientId)-table", columns: ["SHA-256", "Owner", "Added"],
            rows: try await admin.signingCertificates(clientID: client.clientId).signingCertificates.map { certificate in
                View.Row(
                    id: "certificate-\(client.clientId)-\(certificate.sha256)",
                    cells: [.code(certificate.sha256), .code(certificate.owner), .init(text: View.time(certificate.createdAt))],
                    actions: mayDelete
                        ? [.init(
                            id: "delete-certificate-\(certificate.sha256)", label: "Delete",
                            action: "/console/apps/\(Self.encoded(client.clientId))/signing-certificates/\(certificate.sha256)/delete", danger: true)]
                        : [])
            }, empty: "No signing certificates.")
        if may(session, "POST /admin/v1/clients/{id}/signing-certificates") {
            section.forms = [
                View.Form(
                    id: "add-certificate-\(client.clientId)", action: "/console/apps/\(Self.encoded(client.clientId))/signing-certificates", submit: "Add",
                    fields: [
                        View.Field(
                            name: "sha256", label: "SHA-256 fingerprint", hint: "64 hex digits; colons as keytool prints them are fine.", required: true,
                            maxLength: 128)
                    ])
            ]
        }
        return section
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

    /// A whole number, nil when empty.
    static func number(_ value: String?, _ name: String) throws(LatchError) -> Int? {
        guard let text = optional(value) else { return nil }
        guard text.count <= 9, let number = Int(text) else { throw LatchError.invalidInput("\(name) must be a whole number") }
        return number
    }
}
