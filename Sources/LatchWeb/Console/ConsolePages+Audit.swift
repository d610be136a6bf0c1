import LatchCore
import LatchModel

/// The audit log: its filters and one page of records.
extension ConsolePages {
    /// The filters a request names: `type`, `actor`, `subject`, `since`, `until` and `cursor`, empty ones left out.
    public func audit(_ query: [String: String]) async throws -> ConsoleView {
        let audit = services.audit
        func value(_ name: String) -> String? { query[name].flatMap { $0.isEmpty ? nil : $0 } }
        let filters = AuditLog.Filters(
            type: value("type"), actor: value("actor"), subject: value("subject"), since: value("since"), until: value("until"), limit: "100",
            cursor: value("cursor"))
        var view = View(w(.auditLog), area: "audit")
        view.sections = [auditFilters(filters)]
        let page: AuditPage
        do {
            page = try await audit.page(filters)
        } catch let error as LatchError where error.code == .invalidInput {
            view.error = error.message
            view.errorCode = error.code.rawValue
            view.status = 400
            return view
        }
        var records = Section("audit-records")
        records.table = View.Table(
            id: "audit-table",
            columns: ["#", w(.time), w(.type), w(.actor), w(.subject), w(.client), w(.detail), w(.address), w(.userAgent)],
            rows: page.records.map {
                View.Row(
                    id: "record-\($0.seq)",
                    cells: [
                        .init(text: String($0.seq)), .init(text: View.time($0.at)), .code($0.type), .code($0.actor),
                        $0.subject.map { .link($0, "/console/users/" + Self.encoded($0)) } ?? .init(text: ""), .init(text: $0.client ?? ""),
                        .init(text: $0.detail ?? ""), .init(text: $0.address ?? ""), .init(text: $0.userAgent ?? ""),
                    ])
            }, empty: w(.noRecordsMatch))
        if let next = page.nextCursor {
            var link = "cursor=" + Self.encoded(next)
            for name in ["type", "actor", "subject", "since", "until"] { if let v = value(name) { link += "&\(name)=" + Self.encoded(v) } }
            records.links = [("audit-next", w(.olderRecords), "/console/audit?" + link)]
        }
        view.sections.append(records)
        return view
    }

    func auditFilters(_ filters: AuditLog.Filters) -> Section {
        var form = Section("audit-filters")
        form.forms = [
            View.Form(
                id: "audit-filter", action: "/console/audit", submit: w(.filter), method: "get",
                fields: [
                    View.Field(
                        name: "type", label: w(.types), value: filters.type ?? "", placeholder: "signin.failed, admin.",
                        hint: w(.commaSeparatedATrailing)),
                    View.Field(name: "actor", label: w(.actor), value: filters.actor ?? "", placeholder: w(.userAnonymousSystemOr)),
                    View.Field(name: "subject", label: w(.subjectUserId), value: filters.subject ?? ""),
                    View.Field(name: "since", label: w(.since), value: filters.since ?? "", placeholder: w(.n20261124T0000)),
                    View.Field(name: "until", label: w(.until), value: filters.until ?? ""),
                ])
        ]
        return form
    }
}
