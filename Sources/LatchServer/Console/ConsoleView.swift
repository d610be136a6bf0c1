import Foundation

/// A console page: sections of facts, tables, forms, a secret shown once, an image — rendered by one template.
struct ConsoleView {
    var title: String
    /// The navigation entry shown as current.
    var area: String
    var flash: String?
    var error: String?
    var errorCode: String?
    var status = 200
    var sections: [Section] = []

    init(_ title: String, area: String, sections: [Section] = []) {
        self.title = title
        self.area = area
        self.sections = sections
    }

    struct Fact {
        var label: String
        var value: String
        var id: String
        var code = false
    }

    struct Cell {
        var text: String
        var href: String?
        var code = false

        static func code(_ text: String) -> Cell { Cell(text: text, code: true) }
        static func link(_ text: String, _ href: String) -> Cell { Cell(text: text, href: href) }
    }

    /// A button posting a small form (with the CSRF token).
    struct Action {
        var id: String
        var label: String
        var action: String
        var danger = false
        var fields: [String: String] = [:]
    }

    struct Row {
        var id: String
        var cells: [Cell]
        var actions: [Action] = []
    }

    struct Table {
        var id: String
        var columns: [String]
        var rows: [Row]
        var empty: String
    }

    struct Field {
        enum Kind { case text(type: String = "text"), select([(value: String, label: String)]), textarea, checkbox, hidden }
        var name: String
        var label: String
        var kind: Kind = .text()
        var value = ""
        var placeholder: String?
        var hint: String?
        var required = false
        var maxLength = 256
        /// A write-only value (a client secret, a private key): never rendered with a value, so never refilled after
        /// a refusal. A password field is always one.
        var secret = false

        /// Whether this field's value is never sent back to the browser.
        var isSecret: Bool {
            if case .text(type: "password") = kind { return true }
            return secret
        }
    }

    struct Form {
        var id: String
        var action: String
        var submit: String
        var method = "post"
        var danger = false
        var fields: [Field]
    }

    struct Secret {
        var id: String
        var label: String
        var value: String
        var filename: String?
    }

    struct Image {
        var id: String
        var src: String
        var alt: String
        var size: Int
    }

    struct Passkey {
        /// `sign-in`, `enroll` or `reauth`.
        var mode: String
        var label: String
        var options: String
        var finish: String
        var ticket: String?
        var csrf: String?
        var next: String?
    }

    /// Puts `posted` back into the forms posting to `action` — what the admin typed, after a refusal — except
    /// secret fields (``Field/isSecret``: write-only values are not sent back) and hidden ones (the page's own).
    mutating func refill(action: String, with posted: [String: String]) {
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

    struct Section {
        var id: String
        var heading: String?
        var intro: String?
        var facts: [Fact] = []
        var table: Table?
        var forms: [Form] = []
        var links: [(id: String, label: String, href: String)] = []
        var secret: Secret?
        var image: Image?
        var passkey: Passkey?

        init(_ id: String, heading: String? = nil, intro: String? = nil) {
            self.id = id
            self.heading = heading
            self.intro = intro
        }
    }

    /// The navigation: every area, in order, with the admin API route whose roles it takes.
    static let navigation: [(id: String, label: String, href: String, route: String)] = [
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

    /// The template's context; without a signed-in admin (sign-in and enrollment pages) no navigation. `may` says
    /// whether the admin's role may call a route: the navigation shows only the areas it may open.
    func context(username: String?, role: String?, csrf: String?, may: (String) -> Bool = { _ in true }) -> [String: Any] {
        var context: [String: Any] = ["title": title, "sections": sections.map(Self.context)]
        if let username, let role, let csrf {
            context["username"] = username
            context["role"] = role
            context["csrf"] = csrf
            context["nav"] = Self.navigation.filter { may($0.route) }.map {
                ["id": $0.id, "label": $0.label, "href": $0.href, "current": $0.id == area] as [String: Any]
            }
        }
        if let flash { context["flash"] = flash }
        if let error { context["error"] = error }
        if let errorCode { context["errorCode"] = errorCode }
        return context
    }

    static func context(_ section: Section) -> [String: Any] {
        var context: [String: Any] = [
            "id": section.id, "hasFacts": !section.facts.isEmpty,
            "facts": section.facts.map { ["label": $0.label, "value": $0.value, "id": $0.id, "code": $0.code] as [String: Any] },
            "forms": section.forms.map { Self.context($0) }, "links": section.links.map { ["id": $0.id, "label": $0.label, "href": $0.href] },
        ]
        if let heading = section.heading { context["heading"] = heading }
        if let intro = section.intro { context["intro"] = intro }
        if let table = section.table {
            context["table"] = [
                "id": table.id, "columns": table.columns, "empty": table.empty, "hasRows": !table.rows.isEmpty,
                "hasActions": table.rows.contains { !$0.actions.isEmpty },
                "rows": table.rows.map { row in
                    [
                        "id": row.id,
                        "cells": row.cells.map { cell -> [String: Any] in
                            var c: [String: Any] = ["text": cell.text, "code": cell.code]
                            if let href = cell.href { c["href"] = href }
                            return c
                        },
                        "actions": row.actions.map { Self.context($0) },
                    ] as [String: Any]
                },
            ] as [String: Any]
        }
        if let secret = section.secret {
            var s: [String: Any] = ["id": secret.id, "label": secret.label, "value": secret.value]
            if let filename = secret.filename {
                s["download"] = ["filename": filename, "href": "data:application/octet-stream;base64," + Data(secret.value.utf8).base64EncodedString()]
            }
            context["secret"] = s
        }
        if let image = section.image { context["image"] = ["id": image.id, "src": image.src, "alt": image.alt, "size": image.size] as [String: Any] }
        if let passkey = section.passkey {
            var p: [String: Any] = ["mode": passkey.mode, "label": passkey.label, "options": passkey.options, "finish": passkey.finish]
            if let ticket = passkey.ticket { p["ticket"] = ticket }
            if let csrf = passkey.csrf { p["csrf"] = csrf }
            if let next = passkey.next { p["next"] = next }
            context["passkey"] = p
        }
        return context
    }

    static func context(_ action: Action) -> [String: Any] {
        [
            "id": action.id, "label": action.label, "action": action.action, "danger": action.danger,
            "fields": action.fields.sorted { $0.key < $1.key }.map { ["name": $0.key, "value": $0.value] },
        ]
    }

    static func context(_ form: Form) -> [String: Any] {
        [
            "id": form.id, "action": form.action, "submit": form.submit, "method": form.method, "post": form.method == "post", "danger": form.danger,
            "fields": form.fields.map { field -> [String: Any] in
                var f: [String: Any] = [
                    // A secret is write-only: its field is rendered empty whatever the view holds.
                    "id": "\(form.id)-\(field.name)", "name": field.name, "label": field.label, "value": field.isSecret ? "" : field.value,
                    "maxLength": field.maxLength,
                    "required": field.required, "hidden": false, "select": false, "textarea": false, "checkbox": false, "text": false,
                ]
                if let placeholder = field.placeholder { f["placeholder"] = placeholder }
                if let hint = field.hint { f["hint"] = hint }
                switch field.kind {
                case .text(let type):
                    f["text"] = true
                    f["inputType"] = type
                case .select(let options):
                    f["select"] = true
                    f["options"] = options.map { ["value": $0.value, "label": $0.label, "selected": $0.value == field.value] as [String: Any] }
                case .textarea: f["textarea"] = true
                case .checkbox:
                    f["checkbox"] = true
                    f["checked"] = field.value == "true"
                case .hidden: f["hidden"] = true
                }
                return f
            },
        ]
    }
}

extension ConsoleView {
    /// Unix seconds as `2026-11-24 05:02:11 UTC`.
    static func time(_ seconds: Int64?) -> String {
        guard let seconds else { return "—" }
        let text = Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
        return text.replacingOccurrences(of: "T", with: " ").replacingOccurrences(of: "Z", with: " UTC")
    }

    /// A duration in the largest whole unit: `3 d`, `5 h`, `12 min`, `40 s`.
    static func age(_ seconds: Int64) -> String {
        switch seconds {
        case 86_400...: "\(seconds / 86_400) d"
        case 3_600...: "\(seconds / 3_600) h"
        case 60...: "\(seconds / 60) min"
        default: "\(max(seconds, 0)) s"
        }
    }
}
