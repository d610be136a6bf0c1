import Foundation

/// The `page` template's model: a ``ConsoleView`` as the template reads it, with the signed-in admin's navigation.
/// A name a nested model lacks (`csrf` in a form) is read from the page, as Mustache looks names up.
struct ConsolePage: WebPage {
    static let template = "page"
    var title: String
    var sections: [Section]
    /// The signed-in admin; without one (sign-in and enrollment pages) no navigation.
    var username: String?
    var role: String?
    var csrf: String?
    var nav: [NavItem]
    var flash: String?
    var error: String?
    var errorCode: String?
    /// The page's language (`<html lang>`) and the template's own words.
    var lang: String
    var t: Words

    /// The words the template itself writes.
    struct Words: Sendable {
        var console, navigation, signOut, shownOnce, download, actions, needsScript, passkeyFailed: String

        init(_ w: ConsoleWords) {
            console = w(.latchConsole)
            navigation = w(.console)
            signOut = w(.signOut)
            shownOnce = w(.shownThisOnceIt)
            download = w(.download)
            actions = w(.actions)
            needsScript = w(.passkeysNeedJavaScriptThe)
            passkeyFailed = w(.passkeyFailed)
        }
    }

    struct NavItem: Sendable {
        var id: String
        var label: String
        var href: String
        var current: Bool
    }

    /// `may` says whether the admin's role may call a route: the navigation shows only the areas it may open.
    init(_ view: ConsoleView, viewer: ConsoleRenderer.Viewer?, words: ConsoleWords, may: (String) -> Bool) {
        title = view.title
        lang = words.language.rawValue
        t = Words(words)
        sections = view.sections.map(Section.init)
        username = viewer?.username
        role = viewer?.role
        csrf = viewer?.csrf
        nav =
            viewer == nil
            ? []
            : ConsoleView.navigation.filter { may($0.route) }.map {
                NavItem(id: $0.id, label: words.translated($0.label), href: $0.href, current: $0.id == view.area)
            }
        flash = view.flash
        error = view.error
        errorCode = view.errorCode
    }

    struct Section: Sendable {
        var id: String
        var heading: String?
        var intro: String?
        var hasFacts: Bool
        var facts: [Fact]
        var table: Table?
        var secret: Secret?
        var image: Image?
        var passkey: Passkey?
        var forms: [Form]
        var links: [Link]

        init(_ section: ConsoleView.Section) {
            id = section.id
            heading = section.heading
            intro = section.intro
            hasFacts = !section.facts.isEmpty
            facts = section.facts.map { Fact(label: $0.label, value: $0.value, id: $0.id, code: $0.code) }
            table = section.table.map(Table.init)
            secret = section.secret.map(Secret.init)
            image = section.image.map { Image(id: $0.id, src: $0.src, alt: $0.alt, size: $0.size) }
            passkey = section.passkey.map {
                Passkey(mode: $0.mode, label: $0.label, options: $0.options, finish: $0.finish, ticket: $0.ticket, csrf: $0.csrf, next: $0.next)
            }
            forms = section.forms.map(Form.init)
            links = section.links.map { Link(id: $0.id, label: $0.label, href: $0.href) }
        }
    }

    struct Fact: Sendable {
        var label: String
        var value: String
        var id: String
        var code: Bool
    }

    struct Link: Sendable {
        var id: String
        var label: String
        var href: String
    }

    struct Table: Sendable {
        var id: String
        var columns: [String]
        var empty: String
        var hasRows: Bool
        /// Whether any row has actions: then every row has an actions cell.
        var hasActions: Bool
        var rows: [Row]

        init(_ table: ConsoleView.Table) {
            id = table.id
            columns = table.columns
            empty = table.empty
            hasRows = !table.rows.isEmpty
            hasActions = table.rows.contains { !$0.actions.isEmpty }
            rows = table.rows.map { row in
                Row(id: row.id, cells: row.cells.map { Cell(text: $0.text, code: $0.code, href: $0.href) }, actions: row.actions.map(Action.init))
            }
        }
    }

    struct Row: Sendable {
        var id: String
        var cells: [Cell]
        var actions: [Action]
    }

    struct Cell: Sendable {
        var text: String
        var code: Bool
        var href: String?
    }

    struct Action: Sendable {
        var id: String
        var label: String
        var action: String
        var danger: Bool
        /// Hidden fields, in name order.
        var fields: [Hidden]

        init(_ action: ConsoleView.Action) {
            id = action.id
            label = action.label
            self.action = action.action
            danger = action.danger
            fields = action.fields.sorted { $0.key < $1.key }.map { Hidden(name: $0.key, value: $0.value) }
        }
    }

    struct Hidden: Sendable {
        var name: String
        var value: String
    }

    struct Secret: Sendable {
        var id: String
        var label: String
        var value: String
        var download: Download?

        struct Download: Sendable {
            var filename: String
            var href: String
        }

        init(_ secret: ConsoleView.Secret) {
            id = secret.id
            label = secret.label
            value = secret.value
            download = secret.filename.map {
                Download(filename: $0, href: "data:application/octet-stream;base64," + Data(secret.value.utf8).base64EncodedString())
            }
        }
    }

    struct Image: Sendable {
        var id: String
        var src: String
        var alt: String
        var size: Int
    }

    struct Passkey: Sendable {
        var mode: String
        var label: String
        var options: String
        var finish: String
        var ticket: String?
        var csrf: String?
        var next: String?
    }

    struct Form: Sendable {
        var id: String
        var action: String
        var submit: String
        var method: String
        /// Whether the form carries the CSRF token.
        var post: Bool
        var danger: Bool
        var fields: [Field]

        init(_ form: ConsoleView.Form) {
            id = form.id
            action = form.action
            submit = form.submit
            method = form.method
            post = form.method == "post"
            danger = form.danger
            fields = form.fields.map { Field($0, form: form.id) }
        }
    }

    /// One input; exactly one of `hidden`, `select`, `textarea`, `checkbox` and `text` is true.
    struct Field: Sendable {
        var id: String
        var name: String
        var label: String
        var value: String
        var maxLength: Int
        var required: Bool
        var placeholder: String?
        var hint: String?
        var hidden = false
        var select = false
        var textarea = false
        var checkbox = false
        var text = false
        var inputType: String?
        var options: [Option]?
        var checked: Bool?

        struct Option: Sendable {
            var value: String
            var label: String
            var selected: Bool
        }

        init(_ field: ConsoleView.Field, form: String) {
            id = "\(form)-\(field.name)"
            name = field.name
            label = field.label
            // A secret is write-only: its field is rendered empty whatever the view holds.
            value = field.isSecret ? "" : field.value
            maxLength = field.maxLength
            required = field.required
            placeholder = field.placeholder
            hint = field.hint
            switch field.kind {
            case .text(let type):
                text = true
                inputType = type
            case .select(let choices):
                select = true
                options = choices.map { Option(value: $0.value, label: $0.label, selected: $0.value == field.value) }
            case .textarea: textarea = true
            case .checkbox:
                checkbox = true
                checked = field.value == "true"
            case .hidden: hidden = true
            }
        }
    }
}

/// Renders console pages. Its templates are parsed and checked when it is made.
public struct ConsoleRenderer: Sendable {
    let templates: TemplateSet

    /// The signed-in admin a page is rendered for: the header shows them, the forms carry their CSRF token.
    public struct Viewer: Sendable {
        public var username: String
        public var role: String
        public var csrf: String

        public init(username: String, role: String, csrf: String) {
            self.username = username
            self.role = role
            self.csrf = csrf
        }
    }

    /// Throws when a template is missing or does not parse (`sources` replaces the built-in templates, for tests).
    public init(sources: [String: String] = ConsoleTemplates.sources) throws(WebTemplateError) {
        templates = try TemplateSet(sources, pages: [ConsolePage.self], partials: ["section", "action", "form"])
    }

    /// `view` as HTML for `viewer` (nil: no one signed in), in `language`; `may` says whether the viewer's role may
    /// call an admin API route (`"GET /admin/v1/users"`), to leave out navigation it could not open.
    public func render(_ view: ConsoleView, viewer: Viewer?, language: Language = .english, may: (String) -> Bool) -> String {
        templates.render(ConsolePage(view, viewer: viewer, words: ConsoleWords(language), may: may))
    }
}
