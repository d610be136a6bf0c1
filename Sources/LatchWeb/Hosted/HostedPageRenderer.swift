import LatchCore
import LatchModel

/// A page rendered for a browser: the HTML, the status to answer with and the language it is written in.
public struct RenderedPage: Sendable {
    public var html: String
    public var status: Int
    public var language: Language
}

/// Renders LatchCore's `HostedPage` decisions as HTML in the browser's language: server-side, no script, every
/// value escaped by the template engine. Its templates are parsed and checked when it is made.
public struct HostedPageRenderer: Sendable {
    let templates: TemplateSet

    /// Every hosted page's model type: each one's template must be there.
    static let pages: [any WebPage.Type] = [ChooserPage.self, ErrorPage.self, ConfirmSignOutPage.self, ProceedPage.self, SignedOutPage.self]

    /// Throws when a template is missing or does not parse (`sources` replaces the built-in templates, for tests).
    public init(sources: [String: String] = HostedPageTemplates.sources) throws(WebTemplateError) {
        templates = try TemplateSet(sources, pages: Self.pages, partials: ["head", "foot"])
    }

    /// `page` in `language`.
    public func render(_ page: HostedPage, language: Language) -> RenderedPage {
        let t = HostedWords.of(language)
        let lang = language.rawValue
        let html: String
        var status = 200
        switch page {
        case .chooser(let clientName, let choices):
            html = templates.render(
                ChooserPage(
                    lang: lang, title: t.chooserTitle, t: t, clientName: clientName,
                    choices: choices.map { ChooserPage.Choice(id: $0.id, name: $0.displayName, url: $0.url) }))
        case .error(let problem):
            html = templates.render(
                ErrorPage(lang: lang, title: t.errorTitle, t: t, code: problem.code.rawValue, message: problem.message(in: language)))
            status = problem.status
        case .confirmSignOut(let fields, let csrf):
            html = templates.render(
                ConfirmSignOutPage(
                    lang: lang, title: t.confirmTitle, t: t,
                    fields: fields.sorted { $0.key < $1.key }.map { ConfirmSignOutPage.Field(name: $0.key, value: $0.value) }, csrf: csrf))
        case .proceed(let url):
            html = templates.render(ProceedPage(lang: lang, title: t.proceedTitle, t: t, refreshURL: url))
        case .signedOut(let returnURL):
            html = templates.render(SignedOutPage(lang: lang, title: t.signedOutTitle, t: t, returnURL: returnURL))
        }
        return RenderedPage(html: html, status: status, language: language)
    }
}
