import Foundation
@testable import LatchWeb
import Testing

@Suite("Console pages")
struct ConsoleRendererTests {
    let renderer: ConsoleRenderer

    init() throws {
        renderer = try ConsoleRenderer()
    }

    func sample() -> ConsoleView {
        var view = ConsoleView("Users <b>", area: "users")
        view.error = "Refused <script>"
        view.errorCode = "invalid_request"
        var section = ConsoleView.Section("list", heading: "All")
        section.table = ConsoleView.Table(
            id: "users-table", columns: ["Name"],
            rows: [
                .init(
                    id: "u1", cells: [.link("ann", "/console/users/1")],
                    actions: [.init(id: "del", label: "Delete", action: "/console/users/1/delete", danger: true, fields: ["b": "2", "a": "1"])])
            ],
            empty: "No users.")
        section.forms = [
            ConsoleView.Form(
                id: "new", action: "/console/users", submit: "Add",
                fields: [
                    .init(name: "name", label: "Name", value: "typed", required: true),
                    .init(name: "secret", label: "Secret", value: "must-not-show", secret: true),
                    .init(name: "kind", label: "Kind", kind: .select([("a", "A"), ("b", "B")]), value: "b"),
                ])
        ]
        view.sections = [section]
        return view
    }

    @Test("A signed-in page: the navigation the role may open, the CSRF token in every post, values escaped, secrets empty")
    func signedInPage() {
        let html = renderer.render(
            sample(), viewer: .init(username: "owner", role: "owner", csrf: "tok"), may: { $0 != "GET /admin/v1/audit" })
        #expect(html.contains(#"<a href="/console/users" id="nav-users" aria-current="page">Users</a>"#))
        #expect(!html.contains("nav-audit") && html.contains("nav-apps"))
        #expect(html.contains("<title>Users &lt;b&gt; · Latch console</title>") && html.contains("Refused &lt;script&gt;"))
        #expect(html.contains(#"<code id="error-code">invalid_request</code>"#))
        // The row action and the form both carry the session's token; the action's fields come in name order.
        #expect(html.components(separatedBy: #"name="csrf" value="tok""#).count == 4)  // sign-out, row action, form
        let a = html.range(of: #"name="a" value="1""#), b = html.range(of: #"name="b" value="2""#)
        #expect(a.map { a in b.map { a.lowerBound < $0.lowerBound } ?? false } ?? false)
        #expect(html.contains(#"id="new-name" name="name" value="typed""#) && html.contains(" required>"))
        #expect(!html.contains("must-not-show") && html.contains(#"id="new-secret" name="secret" value="""#))
        #expect(html.contains(#"<option value="b" selected>B</option>"#) && html.contains(#"<option value="a">A</option>"#))
        #expect(html.contains(#"<button type="submit" id="del" class="danger">Delete</button>"#))
    }

    @Test("Without a signed-in admin: no navigation, no sign-out form, no CSRF token")
    func signedOutPage() {
        let html = renderer.render(sample(), viewer: nil, may: { _ in true })
        #expect(!html.contains("<nav") && !html.contains("sign-out") && !html.contains(#"name="csrf" value="tok""#))
        #expect(html.contains(#"<h1 id="title">Users &lt;b&gt;</h1>"#))
    }

    @Test("An empty table shows its empty text instead of rows")
    func emptyTable() {
        var view = ConsoleView("Apps", area: "apps")
        var section = ConsoleView.Section("apps")
        section.table = .init(id: "apps-table", columns: ["Id"], rows: [], empty: "No apps yet.")
        view.sections = [section]
        let html = renderer.render(view, viewer: nil, may: { _ in true })
        #expect(html.contains(#"<p class="empty" id="apps-table-empty">No apps yet.</p>"#) && !html.contains("<table"))
    }
}
