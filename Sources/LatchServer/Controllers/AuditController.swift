import Foundation
import Hummingbird
import LatchCore
import LatchModel
import NIOCore

/// The audit log: `GET /admin/v1/audit` (filters, cursor paging), `/audit/export` (JSON lines), `/audit/verify`;
/// and a user's own events at `GET /v1/me/security-events`.
struct AuditController {
    let audit: AuditLog

    func addAdmin(to group: RouterGroup<AdminContext>) {
        group.get("audit") { request, _ -> Response in
            let query = request.uri.queryParameters
            return try JSONResponse.make(
                try await audit.page(
                    AuditLog.Filters(
                        type: query.get("type"), actor: query.get("actor"), subject: query.get("subject"), since: query.get("since"),
                        until: query.get("until"), limit: query.get("limit"), cursor: query.get("cursor"))))
        }
        group.get("audit/export") { request, _ -> Response in
            let since = request.uri.queryParameters.get("since")
            let until = request.uri.queryParameters.get("until")
            // Checked before the answer starts: a bad filter is a 400, not a broken stream.
            _ = try AuditLog.query(AuditLog.Filters(since: since, until: until))
            let audit = self.audit
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return Response(
                status: .ok, headers: [.contentType: "application/x-ndjson", .cacheControl: "no-store"],
                body: ResponseBody { writer in
                    try await audit.export(since: since, until: until) { records in
                        var buffer = ByteBuffer()
                        for record in records {
                            buffer.writeBytes(try encoder.encode(record))
                            buffer.writeInteger(UInt8(ascii: "\n"))
                        }
                        try await writer.write(buffer)
                    }
                    try await writer.finish(nil)
                })
        }
        group.get("audit/verify") { _, _ -> Response in try JSONResponse.make(try await audit.verify()) }
    }

    func addMine(to group: RouterGroup<SignedInContext>) {
        group.get("security-events") { request, context -> Response in
            try JSONResponse.make(
                try await audit.events(
                    of: context.caller.user.id, limit: request.uri.queryParameters.get("limit"), cursor: request.uri.queryParameters.get("cursor")))
        }
    }
}
