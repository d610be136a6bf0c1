import Foundation

/// A console page as its handler describes it: sections of facts, tables, forms, a secret shown once, an image.
/// ``ConsoleRenderer`` turns it into the `page` template's typed model (`ConsolePage`).
public struct ConsoleView: Sendable {
    public var title: String
    /// The navigation entry shown as current.
    public var area: String
    public var flash: String?
    public var error: String?
    public var errorCode: String?
    public var status = 200
    public var sections: [Section] = []

    public init(_ title: String, area: String, sections: [Section] = []) {
        self.title = title
        self.area = area
        self.sections = sections
    }

    /// A labelled value in a section's description list.
    public struct Fact: Sendable {
        public var label: String
        public var value: String
        public var id: String
        public var code = false

        public init(label: String, value: String, id: String, code: Bool = false) {
            self.label = label
            self.value = value
            self.id = id
            self.code = code
        }
    }

    /// A table cell: text, a link, or code.
    public struct Cell: Sendable {
        public var text: String
        public var href: String?
        public var code = false

        public init(text: String, href: String? = nil, code: Bool = false) {
            self.text = text
            self.href = href
            self.code = code
        }

        public static func code(_ text: String) -> Cell { Cell(text: text, code: true) }
        public static func link(_ text: String, _ href: String) -> Cell { Cell(text: text, href: href) }
    }

    /// A button posting a small form (with the CSRF token).
    public struct Action: Sendable {
        public var id: String
        public var label: String
        public var action: String
        public var danger = false
        public var fields: [String: String] = [:]

        public init(id: String, label: String, action: String, danger: Bool = false, fields: [String: String] = [:]) {
            self.id = id
            self.label = label
            self.action = action
            self.danger = danger
            self.fields = fields
        }
    }

    public struct Row: Sendable {
        public var id: String
        public var cells: [Cell]
        public var actions: [Action] = []

        public init(id: String, cells: [Cell], actions: [Action] = []) {
            self.id = id
            self.cells = cells
            self.actions = actions
        }
    }

    public struct Table: Sendable {
        public var id: String
        public var columns: [String]
        public var rows: [Row]
        /// Shown instead of the table when it has no rows.
        public var empty: String

        public init(id: String, columns: [String], rows: [Row], empty: String) {
            self.id = id
            self.columns = columns
            self.rows = rows
            self.empty = empty
        }
    }

    public struct Field: Sendable {
        /// The input: a text input of an HTML `type`, a select of (value, label) options, a textarea, a checkbox
        /// (value `true` when checked), or a hidden input.
        public enum Kind: Sendable {
            case text(type: String = "text"), select([(value: String, label: String)]), textarea, checkbox, hidden
        }
        public var name: String
        public var label: String
        public var kind: Kind = .text()
        public var value = ""
        public var placeholder: String?
        public var hint: String?
        public var required = false
        public var maxLength = 256
        /// A write-only value (a client secret, a private key): never rendered with a value, so never refilled after
        /// a refusal. A password field is always one.
        public var secret = false

        public init(
            name: String, label: String, kind: Kind = .text(), value: String = "", placeholder: String? = nil, hint: String? = nil,
            required: Bool = false, maxLength: Int = 256, secret: Bool = false
        ) {
            self.name = name
            self.label = label
            self.kind = kind
            self.value = value
            self.placeholder = placeholder
            self.hint = hint
            self.required = required
            self.maxLength = maxLength
            self.secret = secret
        }

        /// Whether this field's value is never sent back to the browser.
        public var isSecret: Bool {
            if case .text(type: "password") = kind { return true }
            return secret
        }
    }

    public struct Form: Sendable {
        public var id: String
        public var action: String
        public var submit: String
        /// `post` (with the CSRF token) or `get`.
        public var method = "post"
        public var danger = false
        public var fields: [Field]

        public init(id: String, action: String, submit: String, method: String = "post", danger: Bool = false, fields: [Field]) {
            self.id = id
            self.action = action
            self.submit = submit
            self.method = method
            self.danger = danger
            self.fields = fields
        }
    }

    /// A value shown once (a new token, a key), with a download link when it has a file name.
    public struct Secret: Sendable {
        public var id: String
        public var label: String
        public var value: String
        public var filename: String?

        public init(id: String, label: String, value: String, filename: String? = nil) {
            self.id = id
            self.label = label
            self.value = value
            self.filename = filename
        }
    }

    public struct Image: Sendable {
        public var id: String
        /// A `data:` URL (the CSP allows no other image source but the console's own).
        public var src: String
        public var alt: String
        public var size: Int

        public init(id: String, src: String, alt: String, size: Int) {
            self.id = id
            self.src = src
            self.alt = alt
            self.size = size
        }
    }

    /// The button that runs a passkey ceremony in the console's script.
    public struct Passkey: Sendable {
        /// `sign-in`, `enroll` or `reauth`.
        public var mode: String
        public var label: String
        public var options: String
        public var finish: String
        public var ticket: String?
        public var csrf: String?
        public var next: String?

        public init(
            mode: String, label: String, options: String, finish: String, ticket: String? = nil, csrf: String? = nil, next: String? = nil
        ) {
            self.mode = mode
            self.label = label
            self.options = options
            self.finish = finish
            self.ticket = ticket
            self.csrf = csrf
            self.next = next
        }
    }

    /// Puts `posted` back into the forms posting to `action` — what the admin typed, after a refusal — except
    /// secret fields (``Field/isSecret``: write-only values are not sent back) and hidden ones (the page's own).
    public mutating func refill(action: String, with posted: [String: String]) {
        for s in sections.indices {
            for f in sections[s].forms.indices where sections[s].forms[f].action == action {
                for i in sections[s].forms[f].fields.indices {
                    let field = sections[s].forms[f].fields[i]
                    if field.isSecret { continue }
                    switch field.kind {
                    case .hidden: continue
                    case .checkbox: sections[s].forms[f].fields[i].value = posted[field.name] == "true" ? "true" : ""
                    default: sections[s].forms[f].fields[i].value = posted[field.name] ?? ""
                    }
                }
            }
        }
    }

    public struct Section: Sendable {
        public var id: String
        public var heading: String?
        public var intro: String?
        public var facts: [Fact] = []
        public var table: Table?
        public var forms: [Form] = []
        public var links: [(id: String, label: String, href: String)] = []
        public var secret: Secret?
        public var image: Image?
        public var passkey: Passkey?

        public init(_ id: String, heading: String? = nil, intro: String? = nil) {
            self.id = id
            self.heading = heading
            self.intro = intro
        }
    }

    /// The navigation: every area, in order, with the admin API route whose roles it takes.
    public static let navigation: [(id: String, label: String, href: String, route: String)] = [
        ("overview", "Overview", "/console", "GET /admin/v1/users"), ("users", "Users", "/console/users", "GET /admin/v1/users"),
        ("apps", "Apps", "/console/apps", "GET /admin/v1/clients"), ("issuers", "Issuers", "/console/issuers", "GET /admin/v1/issuers"),
        ("login-issuers", "Login issuers", "/console/login-issuers", "GET /admin/v1/login-issuers"),
        ("test-keys", "Test keys", "/console/test-keys", "GET /admin/v1/test-keys"),
        ("signing-keys", "Signing keys", "/console/signing-keys", "GET /admin/v1/client-config"),
        ("custom-providers", "Custom registration", "/console/custom-providers", "GET /admin/v1/custom-providers"),
        ("upstream-idps", "Upstream IdPs", "/console/upstream-idps", "GET /admin/v1/upstream-idps"),
        ("oob", "Out-of-band", "/console/oob", "POST /admin/v1/users/{id}/enrollments"), ("admins", "Admins", "/console/admins", "GET /admin/v1/tokens"),
        ("audit", "Audit log", "/console/audit", "GET /admin/v1/audit"),
    ]
}

extension ConsoleView {
    /// Unix seconds as `2026-11-24 05:02:11 UTC`.
    public static func time(_ seconds: Int64?) -> String {
        guard let seconds else { return "—" }
        let text = Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
        return text.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: " UTC")
    }

    /// A duration in the largest whole unit: `3 d`, `5 h`, `12 min`, `40 s`.
    public static func age(_ seconds: Int64) -> String {
        switch seconds {
        case 86_400...: "\(seconds / 86_400) d"
        case 3_600...: "\(seconds / 3_600) h"
        case 60...: "\(seconds / 60) min"
        default: "\(max(seconds, 0)) s"
        }
    }
}
