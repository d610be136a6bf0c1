import Foundation
import HTTPTypes
import LatchModel
@testable import LatchServer
import LatchWeb
import Testing

extension ConsoleTests {
    /// A console page requested with `Accept-Language: de`.
    static func germanPage(_ client: Client, _ path: String, cookie: String?) async throws -> Reply {
        var headers: HTTPFields = [.acceptLanguage: "de-DE, de;q=0.9, en;q=0.5"]
        if let cookie { headers[.cookie] = "\(cookieName)=\(cookie)" }
        return try await client.send(.get, path, headers: headers)
    }

    /// The English words shown as a whole element (`>Users<`) that German replaces: none may be on a German page.
    static let englishOnly: [String] = ConsoleWord.allCases.filter {
        !$0.rawValue.contains("{}") && ConsoleWords(.german)($0) != $0.rawValue && $0.rawValue.first?.isUppercase == true
    }.map { ">\($0.rawValue.replacingOccurrences(of: "'", with: "&#39;"))<" }

    @Test("With Accept-Language: de every console page is German (lang=\"de\", no English word left), the sign-in page and a refused form too; English otherwise")
    func germanConsole() async throws {
        try await Deployment.make().run { client in
            let owner = try await Self.enroll(client, username: "olivia", role: .owner)
            try await client.addIssuer()
            let assertion = try client.federatedAssertion(subject: "zoe")
            let user = try await client.postJSON("/v1/registrations", RegistrationRequest(challengeType: .fsso, answer: assertion)).decode(RegistrationResponse.self).userId
            for path in ConsoleView.navigation.map(\.href) + ["/console/users/\(user)"] {
                let reply = try await Self.germanPage(client, path, cookie: owner.cookie)
                #expect(reply.status == .ok, "\(path): \(reply.status)")
                #expect(reply.text.contains(#"<html lang="de">"#) && reply.text.contains(">Abmelden</button>"), "\(path)")
                for english in Self.englishOnly { #expect(!reply.text.contains(english), "\(path) shows \(english)") }
            }
            let overview = try await Self.germanPage(client, "/console", cookie: owner.cookie).text
            #expect(overview.contains("<h1 id=\"title\">Übersicht</h1>") && overview.contains("Anmeldungen, letzte Stunde"))
            let signIn = try await Self.germanPage(client, "/console/sign-in?reason=idle", cookie: nil).text
            #expect(signIn.contains(#"<html lang="de">"#) && signIn.contains("Mit einem Passkey anmelden") && signIn.contains("Ihre Sitzung endete"))
            // A refused form: the engine's reason, then that nothing was changed, in German.
            let headers: HTTPFields = [
                .cookie: "\(Self.cookieName)=\(owner.cookie)", .contentType: "application/x-www-form-urlencoded", .origin: Self.origin,
                .acceptLanguage: "de",
            ]
            let bad = try await client.send(.post, "/console/tokens", headers: headers, body: "csrf=\(owner.csrf.formEscaped)&name=x&days=999")
            #expect(bad.status == .badRequest && bad.text.contains("Es wurde nichts geändert.") && bad.text.contains("invalid_input"))
            // Without Accept-Language, or with a language the console does not have: English, as before.
            for language in [nil, "fr-FR"] {
                var english: HTTPFields = [.cookie: "\(Self.cookieName)=\(owner.cookie)"]
                if let language { english[.acceptLanguage] = language }
                let page = try await client.send(.get, "/console", headers: english).text
                #expect(page.contains(#"<html lang="en">"#) && page.contains("Sign-ins, last hour"))
            }
        }
    }
}
