import LatchCore
import LatchModel

/// Apps: their settings, device-evidence settings and Android signing certificates.
extension ConsolePages {
    public func apps(_ session: ConsoleSession) async throws -> ConsoleView {
        var view = View(w(.apps), area: "apps")
        let mayEdit = may(session, "PATCH /admin/v1/clients/{id}")
        for client in try await admin.clientList().clients {
            view.sections.append(app(client, mayEdit: mayEdit))
            if mayEdit {
                var evidence = Section(
                    "evidence-section-\(client.clientId)", heading: w(.deviceEvidence, client.name),
                    intro: w(.whichAppsMayRegister))
                evidence.forms = [evidenceForm(client)]
                view.sections.append(evidence)
            }
            if let certificates = try await signingCertificateSection(session, client) { view.sections.append(certificates) }
        }
        if may(session, "POST /admin/v1/clients") {
            var create = Section("new-app", heading: w(.addAnApp))
            create.forms = [
                View.Form(
                    id: "create-app", action: "/console/apps", submit: w(.add),
                    fields: [
                        View.Field(name: "clientId", label: w(.clientId), required: true, maxLength: 128),
                        View.Field(name: "name", label: w(.name), maxLength: 128),
                    ])
            ]
            view.sections.append(create)
        }
        return view
    }

    func app(_ client: AdminClient, mayEdit: Bool) -> Section {
        var section = Section("app-\(client.clientId)", heading: client.name)
        let ios = client.ios.map {
            w(.appAttest, $0.appIds.joined(separator: ", "), $0.appAttestEnvironment ?? "production", $0.deviceCheck == nil ? "" : ", DeviceCheck")
        }
        let android = client.android.map { "\($0.packageNames.joined(separator: ", "))\($0.playIntegrity == nil ? "" : " (Play Integrity)")" }
        section.facts = [
            .init(label: w(.clientId), value: client.clientId, id: "app-\(client.clientId)-id", code: true),
            .init(label: w(.created), value: View.time(client.createdAt), id: "app-\(client.clientId)-created"),
            .init(label: w(.callbackURIs), value: (client.redirectUris ?? []).joined(separator: " "), id: "app-\(client.clientId)-redirects"),
            .init(label: w(.logoutURIs), value: (client.postLogoutRedirectUris ?? []).joined(separator: " "), id: "app-\(client.clientId)-logouts"),
            .init(label: w(.iosApps), value: ios ?? "—", id: "app-\(client.clientId)-ios"),
            .init(label: w(.androidApps), value: android ?? "—", id: "app-\(client.clientId)-android"),
            .init(label: "DPoP", value: client.dpop ?? "allowed", id: "app-\(client.clientId)-dpop"),
        ]
        guard mayEdit else { return section }
        section.forms = [
            View.Form(
                id: "edit-\(client.clientId)", action: "/console/apps/" + Self.encoded(client.clientId), submit: w(.save),
                fields: [
                    View.Field(
                        name: "redirectUris", label: w(.callbackURIsOneA), kind: .textarea, value: (client.redirectUris ?? []).joined(separator: "\n"),
                        maxLength: 8_192),
                    View.Field(
                        name: "postLogoutRedirectUris", label: w(.logoutURIsOneA), kind: .textarea,
                        value: (client.postLogoutRedirectUris ?? []).joined(separator: "\n"), maxLength: 8_192),
                    View.Field(
                        name: "dpop", label: "DPoP (RFC 9449)", kind: .select([("off", w(.off)), ("allowed", w(.allowed)), ("required", w(.required))]),
                        value: client.dpop ?? "allowed"),
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
            id: "evidence-\(client.clientId)", action: "/console/apps/\(Self.encoded(client.clientId))/evidence", submit: w(.saveDeviceEvidence),
            fields: [
                View.Field(
                    name: "appIds", label: w(.iosAppIDsTEAMID), kind: .textarea,
                    value: (ios?.appIds ?? []).joined(separator: "\n"), maxLength: 4_096),
                View.Field(
                    name: "appAttestEnvironment", label: w(.appAttestEnvironment), kind: .select([("production", "production"), ("development", "development")]),
                    value: ios?.appAttestEnvironment ?? "production"),
                View.Field(name: "deviceCheckTeamId", label: w(.devicecheckTeamId), value: ios?.deviceCheck?.teamId ?? "", maxLength: 10),
                View.Field(name: "deviceCheckKeyId", label: w(.devicecheckKeyId), value: ios?.deviceCheck?.keyId ?? "", maxLength: 10),
                View.Field(
                    name: "deviceCheckPrivateKey", label: w(.devicecheckPrivateKeyP8), kind: .textarea,
                    hint: ios?.deviceCheck?.hasPrivateKey == true
                        ? w(.aKeyIsStored)
                        : w(.giveTeamIdKey),
                    maxLength: 4_096, secret: true),
                View.Field(
                    name: "packageNames", label: w(.androidPackageNamesOne), kind: .textarea,
                    value: (android?.packageNames ?? []).joined(separator: "\n"), maxLength: 4_096),
                View.Field(
                    name: "requestHashMode", label: w(.playIntegrityRequestHash),
                    kind: .select([("binding", w(.bindingChallengeKey)), ("deviceId", "deviceId")]), value: android?.requestHashMode ?? "binding"),
                View.Field(
                    name: "playIntegrityVerificationKey", label: w(.playIntegrityVerificationKey),
                    value: android?.playIntegrity?.verificationKey ?? "", maxLength: 1_024),
                View.Field(
                    name: "playIntegrityDecryptionKey", label: w(.playIntegrityDecryptionKey), kind: .text(type: "password"),
                    hint: android?.playIntegrity?.hasDecryptionKey == true
                        ? w(.aKeyIsStoredTo)
                        : w(.giveBothKeysTogether),
                    maxLength: 256, secret: true),
            ])
    }

    /// The signing-certificate table and form of one app (Android key attestation checks the app's signer).
    func signingCertificateSection(_ session: ConsoleSession, _ client: AdminClient) async throws -> Section? {
        guard may(session, "GET /admin/v1/clients/{id}/signing-certificates") else { return nil }
        var section = Section("certificates-\(client.clientId)", heading: w(.androidSigningCertificates, client.name))
        let mayDelete = may(session, "DELETE /admin/v1/clients/{id}/signing-certificates/{sha256}")
        let base = "/console/apps/\(Self.encoded(client.clientId))/signing-certificates"
        section.table = View.Table(
            id: "certificates-\(client.clientId)-table", columns: ["SHA-256", w(.owner), w(.added)],
            rows: try await admin.signingCertificates(clientID: client.clientId).signingCertificates.map { certificate in
                View.Row(
                    id: "certificate-\(client.clientId)-\(certificate.sha256)",
                    cells: [.code(certificate.sha256), .code(certificate.owner), .init(text: View.time(certificate.createdAt))],
                    actions: mayDelete
                        ? [.init(id: "delete-certificate-\(certificate.sha256)", label: w(.delete), action: "\(base)/\(certificate.sha256)/delete", danger: true)]
                        : [])
            }, empty: w(.noSigningCertificates))
        if may(session, "POST /admin/v1/clients/{id}/signing-certificates") {
            section.forms = [
                View.Form(
                    id: "add-certificate-\(client.clientId)", action: base, submit: w(.add),
                    fields: [
                        View.Field(
                            name: "sha256", label: w(.sha256Fingerprint), hint: w(.n64HexDigitsColons), required: true,
                            maxLength: 128)
                    ])
            ]
        }
        return section
    }
}
