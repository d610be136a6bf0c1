import Foundation
import LatchCore
@testable import LatchWeb
import Testing

@Suite("Hosted pages")
struct HostedPageRendererTests {
    let renderer: HostedPageRenderer

    init() throws {
        renderer = try HostedPageRenderer()
    }

    @Test("The built-in templates of every page load")
    func builtInTemplatesLoad() throws {
        _ = try WebPages()
    }

    @Test("A template taken away is a start-up error naming it, for each of the hosted pages' templates")
    func missingTemplateIsAStartUpError() {
        for name in HostedPageTemplates.sources.keys.sorted() {
            var sources = HostedPageTemplates.sources
            sources[name] = nil
            #expect(throws: WebTemplateError(template: name, reason: .missing)) { try HostedPageRenderer(sources: sources) }
        }
        for name in ConsoleTemplates.sources.keys.sorted() {
            var sources = ConsoleTemplates.sources
            sources[name] = nil
            #expect(throws: WebTemplateError(template: name, reason: .missing)) { try ConsoleRenderer(sources: sources) }
        }
    }

    @Test("A template that does not parse is a start-up error naming it")
    func invalidTemplateIsAStartUpError() {
        var sources = HostedPageTemplates.sources
        sources["error"] = "{{> head}}<p>{{#message}}unclosed</p>"
        #expect(throws: WebTemplateError(template: "error", reason: .invalid)) { try HostedPageRenderer(sources: sources) }
    }

    @Test(
        "Accept-Language picks German for a first-listed de range, English otherwise",
        arguments: [
            ("de-CH, de;q=0.9, en;q=0.5", Language.german), ("de", .german), ("fr, de-AT", .german), ("en-GB, de", .english),
            ("fr", .english), ("", .english), ("deutsch", .english),
        ])
    func acceptLanguage(header: String, language: Language) {
        #expect(Language(acceptLanguage: header) == language)
    }

    @Test("No Accept-Language is English")
    func noAcceptLanguage() {
        #expect(Language(acceptLanguage: nil) == .english)
    }

    @Test("The error page in English and German: the problem's words in each, the same stable code, the problem's status")
    func errorPageInBothLanguages() {
        let english = renderer.render(.error(.otherBrowser), language: .english)
        let german = renderer.render(.error(.otherBrowser), language: .german)
        #expect(english.status == 400 && german.status == 400)
        #expect(english.html.contains(#"<html lang="en">"#) && german.html.contains(#"<html lang="de">"#))
        #expect(english.html.contains("This sign-in was started in another browser. Go back to the app and start again."))
        #expect(english.html.contains("<title>Sign-in could not continue</title>"))
        #expect(german.html.contains("Diese Anmeldung wurde in einem anderen Browser begonnen."))
        #expect(german.html.contains("<title>Die Anmeldung konnte nicht fortgesetzt werden</title>") && german.html.contains("Fehlercode:"))
        for page in [english, german] { #expect(page.html.contains(#"<code id="error-code">invalid_authorization_state</code>"#)) }
        #expect(renderer.render(.error(.usernameTaken), language: .german).status == 409)
        #expect(renderer.render(.error(.upstreamTimedOut), language: .english).status == 502)
    }

    @Test("Every sign-in problem has words in every language, German ones differing from the English, shown on its page")
    func everyProblemHasAMessageInEveryLanguage() {
        for problem in SignInProblem.allCases {
            let english = problem.message(in: .english), german = problem.message(in: .german)
            #expect(!english.isEmpty && !german.isEmpty, "\(problem)")
            #expect(english != german, "\(problem) is not translated")
            for language in Language.allCases {
                let page = renderer.render(.error(problem), language: language)
                let shown = problem.message(in: language).replacingOccurrences(of: "'", with: "&#39;")
                #expect(page.html.contains(shown), "\(problem) in \(language)")
                #expect(page.status == problem.status)
            }
        }
    }

    @Test("Every word of the hosted pages exists in every language, and the German differs from the English")
    func everyWordInEveryLanguage() {
        let english = Dictionary(uniqueKeysWithValues: Mirror(reflecting: HostedWords.of(.english)).children.map { ($0.label ?? "", $0.value) })
        for child in Mirror(reflecting: HostedWords.of(.german)).children {
            let label = child.label ?? ""
            // `as? String` unwraps an optional word; a nil one (a word this language does not have) fails.
            let german = child.value as? String
            #expect(german?.isEmpty == false, "German \(label) is missing")
            #expect(german != english[label] as? String, "German \(label) is the English word")
        }
    }

    @Test("The chooser escapes the app's and the providers' names and links each provider")
    func chooserEscapes() {
        let page = renderer.render(
            .chooser(
                clientName: "<script>alert(1)</script>",
                choices: [.init(id: "corp", displayName: "Corp <b>SSO</b>", url: "https://x.test/?a=1&b=2")]),
            language: .german)
        #expect(page.status == 200 && page.language == .german)
        #expect(!page.html.contains("<script>") && page.html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(page.html.contains(#"id="idp-corp" href="https://x.test/?a=1&amp;b=2">Weiter mit Corp &lt;b&gt;SSO&lt;/b&gt;</a>"#))
        #expect(page.html.contains("Anmeldung auswählen") && page.html.contains("zu gelangen"))
        #expect(!renderer.render(.chooser(clientName: "App", choices: []), language: .english).html.contains("zu gelangen"))
    }

    @Test("The sign-out confirmation posts its fields back in name order with the CSRF token; signed-out links back only when asked")
    func signOutPages() {
        let confirm = renderer.render(.confirmSignOut(fields: ["state": "s\"1", "client_id": "app"], csrf: "tok"), language: .english).html
        let client = confirm.range(of: #"name="client_id" value="app""#), state = confirm.range(of: #"name="state" value="s&quot;1""#)
        #expect(client.map { client in state.map { client.lowerBound < $0.lowerBound } ?? false } ?? false)
        #expect(confirm.contains(#"name="csrf" value="tok""#) && confirm.contains(#"name="confirm" value="yes""#))
        #expect(renderer.render(.signedOut(returnURL: "https://app.test/bye"), language: .english).html.contains(#"href="https://app.test/bye""#))
        #expect(!renderer.render(.signedOut(returnURL: nil), language: .english).html.contains("Return to the app"))
        let proceed = renderer.render(.proceed(url: "https://app.test/cb?code=1"), language: .german).html
        #expect(proceed.contains(#"<meta http-equiv="refresh" content="0;url=https://app.test/cb?code=1">"#) && proceed.contains(">Weiter</a>"))
    }
}
