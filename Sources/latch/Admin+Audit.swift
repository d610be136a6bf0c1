import ArgumentParser
import Foundation
import LatchModel

extension Admin {
    /// `latch admin audit list|export|verify`.
    struct Audit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "audit", abstract: "The audit log: query, export, verify its chain.", subcommands: [List.self, Export.self, Verify.self])

        struct List: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Records, newest first, a page at a time.")
            @OptionGroup var server: ServerOptions
            @Option(help: "Event types, comma-separated; a prefix ends with a dot (admin.).") var type: String?
            @Option(help: "Who acted (user, anonymous, system, admin:<account>/<token>).") var actor: String?
            @Option(help: "The user the events are about.") var subject: String?
            @Option(help: "Recorded at or after (seconds since 1970, or RFC 3339).") var since: String?
            @Option(help: "Recorded before (seconds since 1970, or RFC 3339).") var until: String?
            @Option(help: "Page size (1–500).") var limit = 100
            @Option(help: "The nextCursor of the previous page.") var cursor: String?
            func run() async throws {
                var query = ["limit=\(limit)"]
                for (name, value) in [("type", type), ("actor", actor), ("subject", subject), ("since", since), ("until", until), ("cursor", cursor)] {
                    if let value { query.append("\(name)=\(value.pathEscaped)") }
                }
                AdminHTTP.printJSON(try await AdminHTTP(options: server).send("GET", "/admin/v1/audit?" + query.joined(separator: "&")))
            }
        }

        struct Export: AsyncParsableCommand {
            static let configuration = CommandConfiguration(abstract: "Every record kept, oldest first, as JSON lines (to standard output).")
            @OptionGroup var server: ServerOptions
            @Option(help: "Recorded at or after (seconds since 1970, or RFC 3339).") var since: String?
            @Option(help: "Recorded before (seconds since 1970, or RFC 3339).") var until: String?
            func run() async throws {
                var query: [String] = []
                if let since { query.append("since=\(since.pathEscaped)") }
                if let until { query.append("until=\(until.pathEscaped)") }
                let data = try await AdminHTTP(options: server).send("GET", "/admin/v1/audit/export" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")))
                FileHandle.standardOutput.write(data)
            }
        }

        struct Verify: AsyncParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Check the audit log's chain on the server: exit 0 when every record verifies, 12 when one does not.")
            @OptionGroup var server: ServerOptions
            func run() async throws {
                let data = try await AdminHTTP(options: server).send("GET", "/admin/v1/audit/verify")
                AdminHTTP.printJSON(data)
                let result = try JSONDecoder().decode(AuditVerificationView.self, from: data)
                if !result.verified {
                    FileHandle.standardError.write(Data("the audit log does not verify: \(result.problem ?? "")\n".utf8))
                    throw ExitCode(ExitStatus.auditBroken)
                }
            }
        }
    }
}
