import Mustache

/// A page a template renders: a typed model whose stored properties are the names its template reads (swift-mustache
/// reads them by reflection). A name the model lacks is looked up in the enclosing sections, as Mustache specifies.
public protocol WebPage: Sendable {
    /// The name of the template that renders this page.
    static var template: String { get }
}

/// Why a set of templates could not be loaded: the deployment must not start, rather than answer empty pages.
public struct WebTemplateError: Error, Hashable, CustomStringConvertible {
    /// What is wrong with the template.
    public enum Reason: String, Sendable, Hashable {
        /// A page or partial names a template the set does not have.
        case missing
        /// The template does not parse.
        case invalid
    }

    /// The template's name.
    public var template: String
    public var reason: Reason

    public var description: String { "template \(template) is \(reason.rawValue)" }
}

/// Templates parsed once, at start-up, and checked to be all there: every page type's template and every partial.
/// Rendering a page whose template was checked cannot come out empty.
public struct TemplateSet: Sendable {
    let library: MustacheLibrary

    /// Parses `sources` (name to Mustache text); throws when one does not parse, or when a template of `pages` or one
    /// of `partials` is not among them.
    public init(_ sources: [String: String], pages: [any WebPage.Type], partials: [String]) throws(WebTemplateError) {
        var library = MustacheLibrary()
        for (name, text) in sources.sorted(by: { $0.key < $1.key }) {
            do {
                try library.register(text, named: name)
            } catch {
                throw WebTemplateError(template: name, reason: .invalid)
            }
        }
        for name in pages.map({ $0.template }) + partials where library.getTemplate(named: name) == nil {
            throw WebTemplateError(template: name, reason: .missing)
        }
        self.library = library
        checked = Set(pages.map { ObjectIdentifier($0) })
    }

    /// The page types whose templates were checked.
    let checked: Set<ObjectIdentifier>

    /// `page` as HTML, every value escaped by the template engine.
    public func render<Page: WebPage>(_ page: Page) -> String {
        // `init` proved every checked page's template is there; a page type it was not given is a programming error.
        guard checked.contains(ObjectIdentifier(Page.self)), let template = library.getTemplate(named: Page.template) else {
            preconditionFailure("\(Page.self) is not a page of this template set")
        }
        return template.render(page, library: library)
    }
}
