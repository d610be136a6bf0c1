import Foundation
@testable import LatchWeb
import Testing

/// The console's words: every one in English and German (German is a `switch` without a default, so a missing word
/// does not compile; these tests catch an empty or untranslated one), the values they take, the template's own
/// words and the navigation in each language.
@Suite("Console words")
struct ConsoleWordsTests {
    /// Words German writes as English does: names, technical terms.
    static let sameInGerman: Set<ConsoleWord> = [
        .name, .token, .tokenAuthorizationBearer, .link, .apps, .app, .appAttest, .client, .detail, .hook, .scopes, .admins, .claimX,
    ]

    @Test("Every console word has German, with as many {} marks as the English, and German differs but for names and terms")
    func everyWordInGerman() {
        for word in ConsoleWord.allCases {
            #expect(!word.german.isEmpty, "\(word) has no German")
            #expect(word.german.components(separatedBy: "{}").count == word.rawValue.components(separatedBy: "{}").count, "\(word)'s marks")
            if !Self.sameInGerman.contains(word) { #expect(word.german != word.rawValue, "\(word) is not translated") }
        }
    }

    @Test("Values fill the {} marks in order, in each language; a value's own {} is left as it is")
    func fill() {
        #expect(ConsoleWords(.english)(.userX, "ann") == "User ann")
        #expect(ConsoleWords(.german)(.userX, "ann") == "Benutzer ann")
        #expect(ConsoleWords(.english)(.createAPasskeyFor, "ann", "owner") == "Create a passkey for the admin account ann (owner). The link works once.")
        #expect(ConsoleWords(.english)(.userX, "{}") == "User {}")
    }

    @Test("Every flash a redirect may name has its words; other keys show none")
    func flashes() {
        for flash in ConsoleFlash.allCases { #expect(!ConsoleWords(.german)(flash.word).isEmpty) }
        #expect(ConsoleFlash(rawValue: "Your account is locked") == nil)
    }

    @Test("Every navigation label is a console word, so the navigation is in the page's language")
    func navigation() {
        for item in ConsoleView.navigation {
            #expect(ConsoleWord(rawValue: item.label) != nil, "\(item.label)")
            #expect(ConsoleWords(.german).translated(item.label) != item.label || item.label == "Apps" || item.label == "Admins", "\(item.label)")
        }
    }

    @Test("A page in German: lang=\"de\", the template's words and the navigation in German; in English as before")
    func germanPage() throws {
        let renderer = try ConsoleRenderer()
        var view = ConsoleView("Übersicht", area: "overview")
        var section = ConsoleView.Section("s")
        section.secret = .init(id: "secret", label: "Token", value: "v", filename: "t.pem")
        section.table = .init(id: "t", columns: ["A"], rows: [.init(id: "r", cells: [.init(text: "x")], actions: [.init(id: "a", label: "B", action: "/console/x")])], empty: "")
        view.sections = [section]
        let viewer = ConsoleRenderer.Viewer(username: "ann", role: "owner", csrf: "c")
        let german = renderer.render(view, viewer: viewer, language: .german, may: { _ in true })
        #expect(german.contains(#"<html lang="de">"#) && german.contains("<title>Übersicht · Latch-Konsole</title>"))
        #expect(german.contains(#"id="nav-overview" aria-current="page">Übersicht</a>"#) && german.contains(#"id="nav-users">Benutzer</a>"#))
        #expect(german.contains(#"id="sign-out" class="link">Abmelden</button>"#) && german.contains("Herunterladen: t.pem"))
        #expect(german.contains("wird nur dieses eine Mal gezeigt") && german.contains(">Aktionen<"))
        let english = renderer.render(view, viewer: viewer, may: { _ in true })
        #expect(english.contains(#"<html lang="en">"#) && english.contains(#"id="sign-out" class="link">Sign out</button>"#))
        #expect(english.contains("— shown this once; it is not stored.") && english.contains("Download t.pem") && english.contains(">Latch console<"))
    }
}
