import LatchCore
import LatchModel
@testable import LatchWeb
import Testing

/// The console pages that need no engine, built and rendered without HTTP: sign-in, refusals, a refused form, the
/// failure page — in English as the console always wrote them, and in German.
@Suite("Console notices")
struct ConsoleNoticesTests {
    let renderer: ConsoleRenderer

    init() throws {
        renderer = try ConsoleRenderer()
    }

    @Test("The sign-in page says why the session ended, in each language, with the passkey button and its failure words")
    func signIn() {
        let english = ConsoleNotices(language: .english).signIn(reason: .idle)
        #expect(english.title == "Sign in" && english.flash == "Your session ended after a while without activity. Sign in again.")
        #expect(english.sections.first?.passkey?.mode == "sign-in" && english.sections.first?.passkey?.label == "Sign in with a passkey")
        let german = ConsoleNotices(language: .german).signIn(reason: .signedOut)
        #expect(german.title == "Anmelden" && german.flash == "Sie sind abgemeldet.")
        let html = renderer.render(german, viewer: nil, language: .german, may: { _ in false })
        #expect(html.contains(#"<html lang="de">"#) && html.contains(">Mit einem Passkey anmelden</button>"))
        #expect(html.contains(#"data-failed="Der Passkey konnte nicht verwendet werden:""#) && !html.contains("<nav"))
        #expect(ConsoleNotices(language: .english).signIn(reason: nil).flash == nil)
    }

    @Test("Each refusal has its status, its code and its words; the way back to the overview")
    func refusals() {
        let cases: [(ConsoleNotices.Refusal, Int, ErrorCode, String)] = [
            (.role("role auditor may not"), 403, .forbidden, "role auditor may not"),
            (.formTooLarge, 413, .requestTooLarge, "The form is larger than 16 KiB. Nothing was changed."),
            (.unreadableForm, 400, .invalidRequest, "The form could not be read. Nothing was changed."),
            (.staleForm, 403, .invalidCSRFToken, "This form is stale or came from another site. Nothing was changed; reload the page and try again."),
        ]
        for (refusal, status, code, message) in cases {
            let view = ConsoleNotices(language: .english).refused(refusal)
            #expect(view.status == status && view.errorCode == code.rawValue && view.error == message)
            #expect(view.title == (status == 403 ? "Not allowed" : "Could not do that") && view.sections.first?.links.first?.href == "/console")
        }
        let german = ConsoleNotices(language: .german).refused(.formTooLarge)
        #expect(german.title == "Das ging nicht" && german.error == "Das Formular ist größer als 16 KiB. Es wurde nichts geändert.")
    }

    @Test("A refused form keeps its page and says nothing was changed; the failure page is a 503 with its code")
    func refusedFormAndFailure() {
        let page = ConsoleView("Apps", area: "apps")
        let error = LatchError.invalidInput("the name is empty")
        let english = ConsoleNotices(language: .english).refusedForm(page, error, status: 400)
        #expect(english.title == "Apps" && english.error == "the name is empty. Nothing was changed." && english.status == 400)
        #expect(ConsoleNotices(language: .german).refusedForm(page, error, status: 400).error == "the name is empty. Es wurde nichts geändert.")
        let failure = ConsoleNotices(language: .german).unavailable()
        #expect(failure.status == 503 && failure.errorCode == ErrorCode.temporarilyUnavailable.rawValue && failure.title == "Etwas ist schiefgegangen")
    }
}
