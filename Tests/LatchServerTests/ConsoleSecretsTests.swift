import Foundation
import HTTPTypes
import LatchModel
@testable import LatchServer
@testable import LatchWeb
import Testing

extension ConsoleTests {
    @Test("A refused console form comes back with what was typed, but never with a write-only value that was posted (client secret, hook secret, DeviceCheck private key, Play Integrity decryption key)")
    func refusedFormsSendNoSecretBack() async throws {
        try await Deployment.make().run { client in
            let owner = try await Self.enroll(client, username: "owner", role: .owner)
            func secret(_ name: String) -> String { "secret-\(name)-\(UUID().uuidString)" }
            let clientSecret = secret("client"), hookSecret = secret("hook"), deviceCheckKey = secret("devicecheck"), decryptionKey = secret("play")
            // (path, form, a typed value that comes back, the secrets posted)
            let cases: [(String, [(String, String)], String, [String])] = [
                (
                    "/console/upstream-idps",
                    [("id", "not an id!"), ("displayName", "Visible Corp SSO"), ("issuer", "https://idp.example"), ("clientId", "latch"),
                     ("clientSecret", clientSecret)],
                    "Visible Corp SSO", [clientSecret]
                ),
                (
                    "/console/custom-providers",
                    [("id", "hooks"), ("name", "Visible Hooks"), ("flow", "one_step"), ("hookURL", "not a URL"), ("hookSecret", hookSecret)],
                    "Visible Hooks", [hookSecret]
                ),
                (
                    "/console/apps/default/evidence",
                    [("appIds", "ABCDE12345.com.example.visible"), ("appAttestEnvironment", "production"), ("deviceCheckTeamId", "ABCDE12345"),
                     ("deviceCheckKeyId", "KEY1234567"), ("deviceCheckPrivateKey", "-----BEGIN PRIVATE KEY-----\n\(deviceCheckKey)\n-----END PRIVATE KEY-----"),
                     ("packageNames", ""), ("requestHashMode", "binding"), ("playIntegrityVerificationKey", "bm90IGEga2V5"),
                     ("playIntegrityDecryptionKey", decryptionKey)],
                    "ABCDE12345.com.example.visible", [deviceCheckKey, decryptionKey]
                ),
            ]
            for (path, form, typed, secrets) in cases {
                let reply = try await Self.post(client, path, cookie: owner.cookie, form + [("csrf", owner.csrf)])
                let page = reply.text
                #expect(reply.status.code >= 400 && reply.status.code < 500, "\(path): \(reply.status) \(page.prefix(300))")
                #expect(page.contains("Nothing was changed"), "\(path): \(page.prefix(500))")
                // The form is refilled (the refusal is shown on the form's page)...
                #expect(page.contains(typed), "\(path) was not refilled")
                // ...without any write-only value, whole or in part.
                for secret in secrets {
                    #expect(!page.contains(secret) && !page.contains(String(secret.suffix(36))), "\(path) sent a posted secret back")
                }
            }
        }
    }

    @Test("Every write-only console field is secret: password inputs always, and the DeviceCheck private key textarea; refill and rendering leave them empty")
    func secretFieldsAreNeverRefilled() {
        var view = ConsoleView("Test", area: "")
        var section = ConsoleView.Section("s")
        section.forms = [
            ConsoleView.Form(
                id: "f", action: "/console/x", submit: "Save",
                fields: [
                    ConsoleView.Field(name: "plain", label: "Plain"),
                    ConsoleView.Field(name: "password", label: "Password", kind: .text(type: "password")),
                    ConsoleView.Field(name: "key", label: "Key", kind: .textarea, value: "held", secret: true),
                ])
        ]
        view.sections = [section]
        view.refill(action: "/console/x", with: ["plain": "typed", "password": "p4ss", "key": "-----BEGIN PRIVATE KEY-----"])
        let fields = view.sections[0].forms[0].fields
        #expect(fields.map(\.isSecret) == [false, true, true])
        #expect(fields[0].value == "typed" && fields[1].value == "" && fields[2].value == "held")
        let rendered = ConsolePage.Form(view.sections[0].forms[0]).fields
        #expect(rendered.map(\.value) == ["typed", "", ""])
    }
}
