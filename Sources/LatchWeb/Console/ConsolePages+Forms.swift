import LatchCore
import LatchModel

/// The forms that add what the configuration pages list: issuers, upstream identity providers, custom registration
/// providers. Each posts to the engine the admin API route it names calls, with that route's roles.
extension ConsolePages {
    func addIssuerSection(_ session: ConsoleSession) -> Section? {
        guard may(session, "POST /admin/v1/issuers") else { return nil }
        return addSection(
            "new-issuer", heading: .addAnIssuerKey, intro: .aCustomerBackendS, form: "add-issuer", action: "/console/issuers",
            fields: [
                View.Field(name: "name", label: w(.issuerTheIssIts), required: true, maxLength: 256),
                View.Field(name: "keyId", label: w(.keyIdKid), required: true, maxLength: 128),
                View.Field(name: "publicKey", label: w(.publicKeyPEM), kind: .textarea, required: true, maxLength: 8_192),
                View.Field(
                    name: "algorithm", label: w(.algorithm), kind: .select([("", w(.fromTheKey)), ("RS256", "RS256"), ("ES256", "ES256")])),
                View.Field(name: "audience", label: w(.audienceAud), hint: w(.defaultThisDeploymentS), maxLength: 512),
                claimsField("allowedClaims"),
                View.Field(name: "maxLifetime", label: w(.longestTokenLifetimeS), kind: .text(type: "number"), placeholder: "3600", maxLength: 8),
            ])
    }

    /// A section with one form that adds something: its `Add` button posts `fields` to `action`.
    func addSection(_ id: String, heading: ConsoleWord, intro: ConsoleWord, form: String, action: String, fields: [View.Field]) -> Section {
        var section = Section(id, heading: w(heading), intro: w(intro))
        section.forms = [View.Form(id: form, action: action, submit: w(.add), fields: fields)]
        return section
    }

    /// The field naming the claims kept on the user.
    func claimsField(_ name: String) -> View.Field {
        View.Field(name: name, label: w(.claimsKeptOnThe), hint: w(.namesSeparatedBySpaces), maxLength: 2_048)
    }

    func addUpstreamIdPSection(_ session: ConsoleSession) -> Section? {
        guard may(session, "POST /admin/v1/upstream-idps") else { return nil }
        return addSection(
            "new-idp", heading: .addAnUpstreamIdentity, intro: .latchReadsTheProvider, form: "add-idp", action: "/console/upstream-idps",
            fields: [
                View.Field(name: "id", label: w(.idAZ0), required: true, maxLength: 64),
                View.Field(name: "displayName", label: w(.nameShownToUsers), required: true, maxLength: 128),
                View.Field(name: "issuer", label: w(.issuerURL), kind: .text(type: "url"), required: true, maxLength: 512),
                View.Field(name: "clientId", label: w(.clientIdAtThe), required: true, maxLength: 512),
                View.Field(
                    name: "clientSecret", label: w(.clientSecret), kind: .text(type: "password"),
                    hint: w(.sealedAtRestNever), maxLength: 1_024, secret: true),
                View.Field(
                    name: "clientAuthentication", label: w(.clientAuthentication),
                    kind: .select([
                        ("", w(.defaultWord)), ("client_secret_basic", "client_secret_basic"), ("client_secret_post", "client_secret_post"),
                        ("private_key_jwt", "private_key_jwt"),
                    ])),
                View.Field(name: "scopes", label: w(.scopes), placeholder: "openid profile email", maxLength: 1_024),
                View.Field(name: "usernameClaim", label: w(.usernameClaim), placeholder: "sub", maxLength: 128),
                claimsField("keptClaims"),
                View.Field(
                    name: "allowedEmailDomains", label: w(.allowedEmailDomains), hint: w(.onlyVerifiedEmailsIn),
                    maxLength: 2_048),
                View.Field(name: "useUserinfo", label: w(.alsoReadUserInfo), kind: .checkbox),
            ])
    }

    func addCustomProviderSection(_ session: ConsoleSession) -> Section? {
        guard may(session, "POST /admin/v1/custom-providers") else { return nil }
        return addSection(
            "new-provider", heading: .addACustomRegistration, intro: .yourServiceDecidesEach, form: "add-provider", action: "/console/custom-providers",
            fields: [
                View.Field(name: "id", label: w(.idWhatAppsName), required: true, maxLength: 64),
                View.Field(name: "name", label: w(.name), required: true, maxLength: 200),
                View.Field(
                    name: "flow", label: w(.flow), kind: .select([("one_step", w(.oneStep)), ("two_step", w(.twoSteps))]), value: "one_step"),
                View.Field(name: "hookURL", label: w(.hookURL), kind: .text(type: "url"), required: true, maxLength: 2_048),
                View.Field(
                    name: "hookSecret", label: w(.hookSecret), kind: .text(type: "password"), hint: w(.n16512BytesNever),
                    required: true, maxLength: 512, secret: true),
                View.Field(name: "timeout", label: w(.timeoutS), kind: .text(type: "number"), placeholder: "5", maxLength: 2),
                View.Field(name: "retries", label: w(.retries), kind: .text(type: "number"), placeholder: "2", maxLength: 1),
                View.Field(
                    name: "transactionLifetime", label: w(.transactionLifetimeS), kind: .text(type: "number"), placeholder: "600", maxLength: 5),
                claimsField("allowedClaims"),
                View.Field(name: "enabled", label: w(.enabled), kind: .checkbox, value: "true"),
            ])
    }
}
